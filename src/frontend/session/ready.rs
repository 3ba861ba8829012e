//! What the chosen connection needs before a statement runs on it: an
//! empty diagnostics area when it is borrowed, the session's
//! LAST_INSERT_ID, and the pin a write to a sequence user takes.

use crate::error;
use crate::frontend::prepared::Conn;
use crate::frontend::sequence_users;
use crate::frontend::session::backends::lost;
use crate::frontend::session::pipeline::Exec;
use crate::frontend::session::state::PREV_EVERYWHERE;
use crate::frontend::session::Session;
use crate::protocol::packets::ErrPacket;
use crate::router::classify::Classified;
use crate::router::plan::{Pins, Plan, RouteReason};
use crate::router::previous;
use crate::router::route::Source;

impl Session {
    /// Make `conn` ready for the statement (see the module doc); an error
    /// is the client's answer instead of the statement's.
    pub(super) async fn ready(
        &mut self,
        plan: &Plan<'_>,
        c: &Classified,
        sql: &[u8],
        conn: Conn,
        exec: &Exec<'_>,
    ) -> Result<Ready, ErrPacket> {
        let on_master = conn == Conn::Master;
        // The connection did not run this session's previous statement.
        let borrowed = self.gen_of(conn) == 0;
        if c.refers_to_previous && borrowed {
            // The connection that ran the previous statement went back to
            // the pool (it had no warnings, else it would be kept): make
            // sure the borrowed one answers with an empty diagnostics area,
            // never with another session's.
            self.clear_diagnostics(conn).await?;
        }
        // hook(sequences): a write to a table whose column defaults or
        // triggers call a sequence function leaves LASTVAL() on the
        // connection, like NEXTVAL() in the text (which the plan pins).
        if on_master
            && plan.is_write
            && !plan
                .effects
                .pin
                .intersects(Pins::SESSION_STATE | Pins::CONNECTION_STATE)
            && !self.keeps_connection_state()
            && self.writes_sequence_user(sql).await
        {
            self.pin(Pins::SESSION_STATE);
        }
        // ROW_COUNT()/FOUND_ROWS() on the connection are not the session's.
        let prev_foreign = borrowed
            || self.state.prev_clobbered() == PREV_EVERYWHERE
            || (self.state.prev_clobbered() != 0 && self.state.prev_clobbered() == self.gen_of(conn));
        if on_master && plan.effects.last_insert_id {
            self.held(Conn::Master).await?;
            self.sync_last_insert_id().await?;
        }
        // FOUND_ROWS() after a sharded read whose count the merge did not see (one
        // sub-table's LIMIT, a UNION's): refused rather than another statement's count.
        if c.refers_to_previous && self.state.found_rows_unknown() {
            let text = match exec {
                Exec::Text { payload } => payload.get(1..).unwrap_or_default(),
                _ => &[][..],
            };
            if text.windows(10).any(|w| w.eq_ignore_ascii_case(b"found_rows")) {
                return Err(ErrPacket::new(
                    crate::protocol::consts::errcode::ER_NOT_SUPPORTED_YET,
                    "42000",
                    "sluice: FOUND_ROWS() after a SELECT on a sharded table with a LIMIT on one sub-table, \
                     a UNION with a LIMIT or aggregates without GROUP BY is not supported (sluice does not \
                     see the count the server would keep)",
                ));
            }
        }
        Ok(Ready {
            borrowed,
            prev_foreign,
        })
    }

    /// ROW_COUNT()/FOUND_ROWS() on a connection that ran other sessions'
    /// statements since this session's last one: the session's own values,
    /// written into the text.
    pub(super) fn session_values(
        &self,
        c: &Classified,
        sql: &[u8],
        src: Source,
        exec: &Exec<'_>,
        ready: Ready,
    ) -> Values {
        match *exec {
            // (Not in a multi-statement: its own statements come before.)
            Exec::Text { payload } if c.refers_to_previous && ready.prev_foreign && !c.multi_statement => {
                let lex = self.state.lex().unwrap_or_default();
                match previous::rewrite(&payload[1..], self.state.prev(), lex) {
                    Some(sql) => Values::Text([&payload[..1], &sql[..]].concat()),
                    None => Values::Same,
                }
            }
            // A prepared one runs as its own variant statement on this
            // connection: the same parameters, the values in its text.
            // IS_USED_LOCK() in one maps the holder's thread id to the
            // holding session as it is now (thread_ids), so its variant
            // is made per execution.
            Exec::Prepared {
                long_data,
                variant: None,
                order: None,
                ..
            } if ((c.refers_to_previous && ready.borrowed)
                || c.force_master == Some(RouteReason::LockFunction))
                && !c.multi_statement =>
            {
                let registry = &self.shared.sessions;
                let params = match src {
                    Source::Prepared { params } => params,
                    Source::Text => 0,
                };
                // (Not with long data: it went to the statement's own
                // server-side copy, which a variant is not.)
                let (mapped, order) = match c.force_master {
                    Some(RouteReason::LockFunction) if !long_data => {
                        crate::frontend::thread_ids::rewrite_prepared(sql, self.proc.id, params, || {
                            registry.lock_holders()
                        })
                        .map_or((None, None), |(s, o)| (Some(s), o))
                    }
                    _ => (None, None),
                };
                let base = mapped.as_deref().unwrap_or(sql);
                let lex = self.state.lex().unwrap_or_default();
                let variant = match c.refers_to_previous && ready.prev_foreign {
                    true => previous::rewrite(base, self.state.prev(), lex).or(mapped),
                    false => mapped,
                };
                Values::Prepared { variant, order }
            }
            _ => Values::Same,
        }
    }

    /// Already pinned for state the server keeps on the connection (a
    /// sequence's LASTVAL() among it): no sequence-user lookup needed.
    pub(super) fn keeps_connection_state(&self) -> bool {
        self.state.pins().has(Pins::SESSION_STATE) || self.state.pins().has(Pins::CONNECTION_STATE)
    }

    /// Whether the write `sql` touches a table whose column defaults or
    /// triggers call a sequence function (see sequence_users): the table it
    /// writes, or, when the text does not show one table, any table of the
    /// session's database. Looked up per schema: the session's copy, the
    /// process's, or the master's information_schema, read on the
    /// session's master connection.
    pub(super) async fn writes_sequence_user(&mut self, sql: &[u8]) -> bool {
        let written = sequence_users::written_table(sql);
        let (session_db, sequences) = self.state.db_and_sequences();
        let (db, table) = match &written {
            sequence_users::Written::One(Some(db), t) => (db.as_ref(), Some(t.as_ref())),
            sequence_users::Written::One(None, t) => match session_db {
                Some(db) => (db, Some(t.as_ref())),
                // No database: the statement fails (1046).
                None => return false,
            },
            sequence_users::Written::Unknown => match session_db {
                Some(db) => (db, None),
                None => return false,
            },
            sequence_users::Written::NotDml => return false,
        };
        let shared = &self.shared.sequence_users;
        let known = match sequences.get(db, shared) {
            Some(k) => k,
            None => {
                let cached = shared.get(db);
                let db = db.to_owned();
                let k = match cached {
                    Some(k) => k,
                    None => Box::pin(self.look_up_sequence_users(&db)).await,
                };
                self.state.sequences_mut().put(&db, k.clone());
                k
            }
        };
        match table {
            Some(t) => known.uses_sequences(t),
            None => known.any(),
        }
    }

    /// Read which tables of `db` use sequences. Unknown (no master, an
    /// error): every table counts, for this session only.
    pub(super) async fn look_up_sequence_users(&mut self, db: &str) -> sequence_users::Known {
        let generation = self.shared.sequence_users.generation();
        if self.held(Conn::Master).await.is_err() {
            return sequence_users::Known::new(None);
        }
        let Some(h) = self.backends.slot(Conn::Master) else {
            return sequence_users::Known::new(None);
        };
        let uid = h.conn.state.uid;
        let answer = h.conn.session_query_text(&sequence_users::lookup_sql(db)).await;
        self.state.clobbered(uid);
        let tables = match answer {
            Ok(Ok(Some(v))) => sequence_users::parse(&v),
            _ => None,
        };
        let known = sequence_users::Known::new(tables);
        if known.is_known() {
            self.shared.sequence_users.put(db, known.clone(), generation);
        }
        known
    }

    /// Before a master statement that mentions `LAST_INSERT_ID`: give the
    /// connection the session's value if it is not the one holding it.
    pub(super) async fn sync_last_insert_id(&mut self) -> Result<(), ErrPacket> {
        let label = self.label(Conn::Master);
        let Some(h) = self.backends.master.as_mut() else {
            return Ok(());
        };
        if h.conn.state.uid == self.state.lid().owner || h.conn.state.last_insert_id == self.state.lid().value
        {
            self.state.lid_mut().owner = h.conn.state.uid;
            return Ok(());
        }
        let sql = format!("DO LAST_INSERT_ID({})", self.state.lid().value);
        error::answered(&label, h.conn.query_drop(&sql).await)?;
        h.conn.state.last_insert_id = self.state.lid().value;
        self.state.lid_mut().owner = h.conn.state.uid;
        Ok(())
    }

    /// Borrow the connection for `conn` and run a statement that leaves no
    /// warnings, so SHOW WARNINGS & co. describe this session's (empty)
    /// previous statement.
    pub(super) async fn clear_diagnostics(&mut self, conn: Conn) -> Result<(), ErrPacket> {
        self.held(conn).await?;
        let label = self.label(conn);
        let h = self.backends.slot(conn).ok_or_else(|| lost(&label))?;
        // A statement that uses a table: only those reset the warnings.
        let r = h
            .conn
            .query_drop("SELECT 0 FROM information_schema.ENGINES LIMIT 0")
            .await;
        error::answered(&label, r)
    }
}

/// What `ready` found out about the statement's connection.
#[derive(Clone, Copy)]
pub(super) struct Ready {
    /// It did not run this session's previous statement.
    borrowed: bool,
    /// Its ROW_COUNT()/FOUND_ROWS() are not the session's.
    prev_foreign: bool,
}

/// The statement as it runs, when the session's own values had to be
/// written into it (`session_values`).
pub(super) enum Values {
    Same,
    /// A COM_QUERY packet in place of the client's.
    Text(Vec<u8>),
    /// The text a prepared statement runs as, and the client's parameters
    /// in the order it binds them, when that is not their own order
    /// (thread_ids::rewrite_prepared).
    Prepared {
        variant: Option<Vec<u8>>,
        order: Option<Vec<u16>>,
    },
}

impl Values {
    /// `exec` with these values.
    pub(super) fn over<'a>(&'a self, exec: Exec<'a>) -> Exec<'a> {
        match (self, exec) {
            (Values::Text(payload), Exec::Text { .. }) => Exec::Text { payload },
            (
                Values::Prepared { variant, order },
                Exec::Prepared {
                    id,
                    payload,
                    layout,
                    long_data,
                    ..
                },
            ) => Exec::Prepared {
                id,
                payload,
                layout,
                long_data,
                variant: variant.as_deref(),
                order: order.as_deref(),
            },
            (_, exec) => exec,
        }
    }
}
