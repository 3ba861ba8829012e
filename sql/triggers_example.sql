-- The three sluice triggers of one table, `shop`.`orders`, with the default counter
-- schema `sluice` and 16 slots. This is exactly what `sluice triggers install --schema shop`
-- creates for that table; do not edit the bodies by hand: sluice recognizes its triggers
-- by name and body, and `install` replaces a sluice trigger whose body differs.
--
-- For every base table of a schema, generate the full script (counter table, rows,
-- triggers) with
--
--   sluice triggers sql --schema shop > shop-triggers.sql          # tables read from the master
--   sluice triggers sql --schema shop --tables orders,customers    # no server contacted
--
-- and run it with `mariadb -h MASTER -u ADMIN -p < shop-triggers.sql`, or let sluice do
-- it: `sluice triggers install --schema shop` (idempotent; run it again after CREATE TABLE).
--
-- Notes:
-- * Each body is a single statement, so no DELIMITER is needed and the mariadb/mysql
--   client runs this file as is. MySQL cannot PREPARE a CREATE TRIGGER: send each
--   statement as a plain (text protocol) query.
-- * Triggers are named sluice_ai_<table>, sluice_au_<table>, sluice_ad_<table>. When that
--   is longer than 64 characters: sluice_ai_ + the first 45 characters of the table name
--   + _ + the first 8 hex digits of SHA-1(table name).
-- * They coexist with the table's own triggers (MariaDB >= 10.2.3 and MySQL >= 5.7.2
--   allow several triggers per event and timing); sluice never touches other triggers.
-- * Names are quoted as identifiers (backticks doubled) and, in the body, as a string
--   literal (quotes doubled, backslashes escaped: do not run this under the
--   NO_BACKSLASH_ESCAPES sql_mode, the generated script turns it off).
-- * The rows must exist before the triggers fire: counter_table.sql, then these rows,
--   then the triggers. The body is an upsert of an existing row: the insert meets the
--   primary key (tbl, slot) and updates that row instead, with one record lock (no gap
--   lock), and the server has no WHERE clause to resolve and no range optimizer to run,
--   which made the earlier body `UPDATE ... SET n = n + 1 WHERE tbl = ... AND slot = ...`
--   about a third more expensive per written row (benches/trigger_cost.sh). A row that is
--   missing after all (a counter table emptied by hand) is created with n = 1 rather than
--   the write going uncounted.
-- * Each event's trigger bumps its own counter table (`counters`, `counters_update`,
--   `counters_delete`; see counter_table.sql for why: LOCK TABLES).
-- * The slot: `slots + @sluice_slot` on a connection of sluice (a number no other live
--   sluice connection holds, so transactions through sluice never wait on each other's
--   counter rows), `CONNECTION_ID() % slots` for every other writer. CONV and the bounds
--   make any other value of the variable fall back to the connection id, never an error.
-- * Triggers of the earlier forms (sluice before issue 11, the upsert of all three
--   events into `counters`, and the slot from the connection id alone before issue 40)
--   still count correctly and keep their tables tracked;
--   `sluice triggers install` replaces them in place (CREATE OR REPLACE TRIGGER, one
--   statement each) and starts a new counter generation.

SET NAMES utf8mb4;

-- Names `shop` for tracking (freshness.auto_install gives its new tables triggers).
INSERT IGNORE INTO `sluice`.`schemas` (db) VALUES ('shop');

INSERT IGNORE INTO `sluice`.`counters` (tbl, slot) VALUES
  ('*', 0), ('*', 1), ('*', 2), ('*', 3), ('*', 4), ('*', 5), ('*', 6), ('*', 7),
  ('*', 8), ('*', 9), ('*', 10), ('*', 11), ('*', 12), ('*', 13), ('*', 14), ('*', 15);
INSERT IGNORE INTO `sluice`.`counters` (tbl, slot) VALUES
  ('shop.orders', 0), ('shop.orders', 1), ('shop.orders', 2), ('shop.orders', 3),
  ('shop.orders', 4), ('shop.orders', 5), ('shop.orders', 6), ('shop.orders', 7),
  ('shop.orders', 8), ('shop.orders', 9), ('shop.orders', 10), ('shop.orders', 11),
  ('shop.orders', 12), ('shop.orders', 13), ('shop.orders', 14), ('shop.orders', 15);
INSERT IGNORE INTO `sluice`.`counters_update` (tbl, slot) VALUES
  ('shop.orders', 0), ('shop.orders', 1), ('shop.orders', 2), ('shop.orders', 3),
  ('shop.orders', 4), ('shop.orders', 5), ('shop.orders', 6), ('shop.orders', 7),
  ('shop.orders', 8), ('shop.orders', 9), ('shop.orders', 10), ('shop.orders', 11),
  ('shop.orders', 12), ('shop.orders', 13), ('shop.orders', 14), ('shop.orders', 15);
INSERT IGNORE INTO `sluice`.`counters_delete` (tbl, slot) VALUES
  ('shop.orders', 0), ('shop.orders', 1), ('shop.orders', 2), ('shop.orders', 3),
  ('shop.orders', 4), ('shop.orders', 5), ('shop.orders', 6), ('shop.orders', 7),
  ('shop.orders', 8), ('shop.orders', 9), ('shop.orders', 10), ('shop.orders', 11),
  ('shop.orders', 12), ('shop.orders', 13), ('shop.orders', 14), ('shop.orders', 15);

-- AFTER, FOR EACH ROW, inside the writing transaction: the counter moves if and only if
-- the write commits, and the bump reaches a replica in the same transaction as the write.
CREATE TRIGGER `shop`.`sluice_ai_orders` AFTER INSERT ON `shop`.`orders` FOR EACH ROW INSERT INTO `sluice`.`counters` (tbl, slot, n) VALUES ('shop.orders', IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1) ON DUPLICATE KEY UPDATE n = n + 1;
CREATE TRIGGER `shop`.`sluice_au_orders` AFTER UPDATE ON `shop`.`orders` FOR EACH ROW INSERT INTO `sluice`.`counters_update` (tbl, slot, n) VALUES ('shop.orders', IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1) ON DUPLICATE KEY UPDATE n = n + 1;
CREATE TRIGGER `shop`.`sluice_ad_orders` AFTER DELETE ON `shop`.`orders` FOR EACH ROW INSERT INTO `sluice`.`counters_delete` (tbl, slot, n) VALUES ('shop.orders', IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1) ON DUPLICATE KEY UPDATE n = n + 1;
