//! COM_CHANGE_USER.

use crate::error;
use crate::frontend::change_user::parse_change_user;
use crate::frontend::handshake;
use crate::frontend::prepared::Conn;
use crate::frontend::session::{Closed, CmdResult, Session};

impl Session {
    /// COM_CHANGE_USER: authenticate again, then start over with clean
    /// backend state.
    pub(in crate::frontend::session) async fn change_user(&mut self, payload: &[u8]) -> CmdResult {
        let Some(req) = parse_change_user(&payload[1..], self.caps) else {
            let _ = self
                .send_err(&error::bad_handshake("malformed COM_CHANGE_USER"))
                .await;
            return Err(Closed);
        };
        let mut seq = self.reply_seq;
        // The users of the newest configuration, as for a new login, and
        // the same bounded exchange (unknown users included), within
        // `limits.handshake_timeout`.
        let rt = self.shared.runtime();
        let plugin = req
            .plugin
            .map(|p| mysql_common::packets::AuthPlugin::from_bytes(&p).into_owned());
        let tls = self.client.get_ref().is_tls();
        let ip = self
            .client
            .get_ref()
            .peer_ip()
            .and_then(|ip| ip.parse().ok())
            .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let exchange = handshake::login(
            &mut self.client,
            &mut seq,
            &self.shared,
            &rt.config,
            &req.user,
            ip,
            plugin,
            &self.nonce,
            &req.auth,
            tls,
        );
        let verdict = match tokio::time::timeout(rt.config.limits.handshake_timeout, exchange).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                let _ = handshake::exchange_failed(&mut self.client, &mut seq, e).await;
                return Err(Closed);
            }
            Err(_) => return Err(Closed),
        };
        drop(rt);
        self.reply_seq = seq;
        let (login, account) = match verdict {
            handshake::Verdict::Accepted(l, account) => (l, account),
            handshake::Verdict::Denied(e) => {
                let _ = self.send_err(&e).await;
                return Err(Closed);
            }
        };
        // The session now counts against the new user's max_connections
        // (and keeps its place among all sessions).
        if let Err(e) = self
            .user_slot
            .switch_user(&self.shared.user_limits, &req.user, account.as_ref())
        {
            let _ = self.send_err(&e).await;
            return Err(Closed);
        }
        // Give the connections back and start clean, from now on as the new
        // account. One with state no reset undoes (a role: MariaDB keeps it
        // across COM_CHANGE_USER too) is closed, one with tracked state reset
        // (`finish_connections`).
        self.finish_connections().await;
        self.clear_state();
        self.login = login;
        self.user = req.user;
        self.proc.set_user(&self.user); // hook(kill)
        if let Some(c) = req.collation {
            self.key.collation = c;
        }
        self.state.set_db(req.db);
        if self.state.db().is_some() {
            if let Err(e) = self.held(Conn::Master).await {
                self.send_err(&e).await?;
                return Ok(());
            }
        }
        self.send_ok().await
    }
}
