//! One file per client command (dispatched by `Session::command_loop`):
//! COM_QUERY and COM_STMT_EXECUTE build a statement for the pipeline, the
//! others run on a fixed route (the master) or are answered by sluice.

mod change_user;
mod execute;
// hook(abandon/kill/wait_timeout): the session's side of KILL, processlist,
// wait_timeout and its end.
mod init_db;
mod kill;
mod prepare;
mod query;
mod reset;
mod set_option;
mod stmt;

use crate::frontend::session::gate::Route;
use crate::frontend::session::{CmdResult, Session};
use crate::protocol::response::ResponseKind;
use crate::router::plan::RouteReason;

impl Session {
    pub(in crate::frontend::session) async fn simple(
        &mut self,
        payload: &[u8],
        kind: ResponseKind,
    ) -> CmdResult {
        let route = Route::master(RouteReason::Command);
        self.run_on(route, payload, kind, None, None).await.map(drop)
    }
}
