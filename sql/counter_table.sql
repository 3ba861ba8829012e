-- sluice's counter table: the freshness signal.
--
-- What it is: every base table that sluice tracks has three triggers (AFTER INSERT,
-- AFTER UPDATE, AFTER DELETE; see triggers_example.sql) that add 1 to a row of a counter
-- table, inside the writing transaction. Replication carries the rows to each replica.
--
-- Why three tables (`counters` for INSERT, `counters_update`, `counters_delete`): with
-- the three triggers of a table bumping one table, `LOCK TABLES t WRITE` followed by any
-- write to t fails on MariaDB 10.11 with error 1442 ("Can't update table 'counters' in
-- stored function/trigger because it is already used by statement which invoked this
-- stored function/trigger"), and mysqldump's restores write under exactly such locks.
-- With one table per event, each is prelocked once and the writes work. The rows of a
-- table are compared one by one in each of the three tables, never summed.
-- A replica holds every write the master had committed when sluice read a counter row
-- on the master if the replica's copy of that row is at least that value; sluice
-- compares row by row (slot by slot), never sums.
--
-- Why slots: one row bumped by every writer would serialize all writers of a table on
-- that row's lock until they commit. A connection of sluice holds a slot number k that no
-- other live sluice connection to the server holds (@sluice_slot; each sluice process leases
-- blocks of numbers as named locks sluice_slots_<block> held by a connection of its own)
-- and its writes update row (db.table, slots + k): transactions through sluice never wait
-- on each other's counter rows. Other writers update row (db.table, CONNECTION_ID() % slots)
-- (freshness.slots, default 16). Each slot is compared separately.
--
-- Why the rows are pre-created: the triggers' INSERT ... ON DUPLICATE KEY UPDATE always
-- meets an existing row (`sluice triggers install` inserts rows 0..slots-1 for every
-- tracked table, plus the `*` rows), so it takes one record lock on that primary key
-- (`X, REC_NOT_GAP`, as an UPDATE of it would) and never an insert-intention or gap lock,
-- which inserting a new row could, deadlocking concurrent writers.
--
-- tbl = '*' (in `counters` only) are the rows sluice bumps itself after statements that fire no trigger
-- (TRUNCATE, DDL) when they pass through sluice.
--
-- tbl = '#epoch', slot 0 (in `counters`) is the generation: a random value that `sluice triggers install`
-- and `uninstall` (when they change something) and DDL through sluice write anew. sluice
-- compares counters only within one generation, so resetting the counters (a truncated
-- table, another slot count) never makes a stale replica look fresh, nor keeps reads on the
-- master forever. It is read with the counters in every probe; nothing sums it.
--
-- Tables whose engine is not transactional (MyISAM, Aria, MEMORY, ...) get no triggers:
-- their rows survive a rollback while the counter bump would not. Reads of them go to
-- the master.
--
-- The character set and binary collation are explicit (the server default may be
-- latin1 and case-insensitive): table names are case-sensitive on Linux and may be
-- non-ASCII, and `db.table` must never match another table's row.
--
-- The schema name `sluice` is the default of freshness.schema in the configuration;
-- the schema is never tracked itself. `sluice triggers install` runs these statements;
-- running them by hand is equivalent. No DELIMITER is needed.

CREATE DATABASE IF NOT EXISTS `sluice`;

CREATE TABLE IF NOT EXISTS `sluice`.`counters` (
  tbl  VARCHAR(192) NOT NULL COMMENT 'db.table the writes went to, or * for writes sluice bumps itself',
  slot SMALLINT UNSIGNED NOT NULL COMMENT 'CONNECTION_ID() % slots, or slots + @sluice_slot on a connection of sluice: spreads row locks',
  n    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (tbl, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT 'INSERT events (sluice)';

CREATE TABLE IF NOT EXISTS `sluice`.`counters_update` (
  tbl  VARCHAR(192) NOT NULL COMMENT 'db.table the writes went to, or * for writes sluice bumps itself',
  slot SMALLINT UNSIGNED NOT NULL COMMENT 'CONNECTION_ID() % slots, or slots + @sluice_slot on a connection of sluice: spreads row locks',
  n    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (tbl, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT 'UPDATE events (sluice)';

CREATE TABLE IF NOT EXISTS `sluice`.`counters_delete` (
  tbl  VARCHAR(192) NOT NULL COMMENT 'db.table the writes went to, or * for writes sluice bumps itself',
  slot SMALLINT UNSIGNED NOT NULL COMMENT 'CONNECTION_ID() % slots, or slots + @sluice_slot on a connection of sluice: spreads row locks',
  n    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (tbl, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT 'DELETE events (sluice)';

-- The schemas named for tracking: `sluice triggers install --schema DB` adds DB (also
-- when DB has no table yet, e.g. an application's database before its first migration),
-- `uninstall` removes it. With freshness.auto_install on, a table created in a named
-- schema gets its triggers (through sluice before the client's OK; elsewhere within one
-- probe). A separate table, so the probes' reads of the counters never include it.
CREATE TABLE IF NOT EXISTS `sluice`.`schemas` (
  db VARCHAR(64) NOT NULL PRIMARY KEY COMMENT 'a schema `sluice triggers install` was run on'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
