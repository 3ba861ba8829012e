//! Helpers for topology tests: what an external tool does to promote and
//! re-point servers, and waiting for sluice to notice.

use std::time::{Duration, Instant};

use super::cluster::*;

/// What an external tool does to promote `s`.
pub fn promote(s: &Server) {
    s.sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0");
}

/// Point replica `s` at `master` (GTID `pos`: `slave_pos` or `current_pos`);
/// `threads`: what to start (`SLAVE`, `SLAVE IO_THREAD`).
pub fn repoint(s: &Server, master: &Server, pos: &str, threads: &str) {
    s.sql(&format!(
        "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER='{REPL_USER}', \
         MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID={pos}, MASTER_CONNECT_RETRY=1; START {threads}",
        master.port
    ));
}

/// Poll `ok` every 50 ms for up to 20 s; panics with sluice's log.
pub fn wait_for(what: &str, s: &Sluice, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
