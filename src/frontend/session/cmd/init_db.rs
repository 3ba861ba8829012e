//! COM_INIT_DB.

use crate::frontend::prepared::Conn;
use crate::frontend::session::gate::Route;
use crate::frontend::session::{CmdResult, Session};
use crate::protocol::response::ResponseKind;
use crate::router::plan::RouteReason;

impl Session {
    pub(in crate::frontend::session) async fn init_db(&mut self, payload: &[u8]) -> CmdResult {
        let db = String::from_utf8_lossy(&payload[1..]).into_owned();
        // hook(topo43c): a replica answers when the master is absent or paused.
        if self.init_db_on_replica(&db).await? {
            return Ok(());
        }
        let route = Route::master(RouteReason::SessionState);
        let Some(tracker) = self
            .run_on(route, payload, ResponseKind::Single, None, None)
            .await?
        else {
            return Ok(());
        };
        if !tracker.error {
            // The connection records it too, or its next borrower (another
            // session maybe) is judged in sync by `sync_to_state` and runs in
            // this session's database (as after `USE`, followups.rs).
            if let Some(h) = self.backends.slot(Conn::Master) {
                h.conn.db = Some(db.clone());
            }
            self.state.set_db(Some(db));
        }
        Ok(())
    }
}
