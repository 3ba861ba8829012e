//! COM_SET_OPTION.

use crate::frontend::session::{CmdResult, Session};
use crate::protocol::consts::*;
use crate::protocol::response::ResponseKind;
use crate::router::plan::Pins;

impl Session {
    pub(in crate::frontend::session) async fn set_option(&mut self, payload: &[u8]) -> CmdResult {
        let r = self.simple(payload, ResponseKind::Single).await;
        // The option (multi-statements on/off) changes the connection's
        // behaviour for good; COM_RESET_CONNECTION does not undo it, so the
        // connection must not serve another client afterwards. Replicas
        // would not know it: keep this session on the master.
        if let Some(m) = self.backends.master.as_mut() {
            m.conn.no_reuse = true;
        }
        self.pin(Pins::SET_OPTION);
        // Known here too: `KILL <id>; …` is sluice's only with it on
        // (cmd/kill.rs). The server accepts both values of the option.
        match payload.get(1..3) {
            Some([0, 0]) => self.caps.insert(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
            Some([1, 0]) => self.caps.remove(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
            _ => {}
        }
        r
    }
}
