//! COM_QUERY.

use crate::frontend::session::pipeline::Exec;
use crate::frontend::session::{CmdResult, Session};
use crate::protocol::consts::*;
use crate::protocol::packets::ErrPacket;
use crate::router::route::Source;

impl Session {
    /// COM_QUERY: through the pipeline (pipeline.rs).
    pub(in crate::frontend::session) async fn query(&mut self, payload: &[u8]) -> CmdResult {
        // hook(kill): KILL and SHOW PROCESSLIST are answered by sluice;
        // CONNECTION_ID() becomes the session's id, IS_USED_LOCK() the
        // holder's (thread_ids).
        if let Some(i) = crate::frontend::kill::intercept(&payload[1..]) {
            return self.intercepted(i).await;
        }
        let rewritten;
        let registry = &self.shared.sessions;
        let payload = match crate::frontend::thread_ids::rewrite(&payload[1..], self.proc.id, || {
            registry.lock_holders()
        }) {
            Some(sql) => {
                rewritten = [&[COM_QUERY][..], &sql].concat();
                &rewritten[..]
            }
            None => payload,
        };
        let sql = &payload[1..];
        let c = self.classify(sql);
        // hook(kill): a KILL or SHOW PROCESSLIST after the first statement
        // of a text would reach the server with sluice's ids (or list the
        // backend account's threads): refused, never forwarded.
        if c.multi_statement && later_intercept(sql) {
            return self
                .send_err(&ErrPacket::new(
                    errcode::ER_NOT_SUPPORTED_YET,
                    "42000",
                    "sluice answers KILL and SHOW PROCESSLIST itself only as the first statement \
                     of a multi-statement text; send them on their own",
                ))
                .await;
        }
        self.statement(&c, sql, Source::Text, Exec::Text { payload })
            .await
    }
}

/// A statement after the first of the text that sluice would answer itself.
/// (Cheap unless the text names KILL or PROCESSLIST.)
fn later_intercept(sql: &[u8]) -> bool {
    use crate::router::route::mentions;
    (mentions(sql, b"kill") || mentions(sql, b"processlist"))
        && crate::router::classify::split_statements(sql)
            .skip(1)
            .any(|s| crate::frontend::kill::intercept(s).is_some())
}
