//! One client session: the command loop.
//!
//! The session owns its client socket and the backend connection(s) serving
//! it, in one task: a command is read, planned, written to the backend and
//! its response relayed, with no channel hop in between.
//!
//! Session states (written down because later routing depends on them):
//! - *Handshake* → *Ready* once authenticated and the default database, if
//!   any, was accepted by the master.
//! - *Ready*: reads a command. The backend connection is checked out on first
//!   use and kept (pinned) for the session's life; it is synchronized with the
//!   session's tracked state (default database) whenever it is (re)acquired.
//! - A backend failure sends the client an error and drops the connection;
//!   the session stays *Ready* and reconnects on its next command.
//! - *Closed*: COM_QUIT, client EOF, or a client protocol error.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tracing::{debug, info, warn};

use crate::backend::{BackendError, PoolKey, Pooled};
use crate::error;
use crate::protocol::consts::*;
use crate::protocol::packets::{ok_packet, ErrPacket};
use crate::protocol::response::{ResponseKind, ResponseTracker};
use crate::protocol::{PacketStream, ProtocolError};
use crate::router::{self, Plan, SessionEffect};

use super::handshake::{self, Authed, HandshakeError};
use super::io::ClientIo;
use super::listener::Shared;
use super::relay::{self, RelayError};

pub async fn run(socket: TcpStream, peer: SocketAddr, conn_id: u32, shared: Arc<Shared>) {
    let authed = match handshake::handshake(socket, peer, conn_id, &shared).await {
        Ok(a) => a,
        Err(HandshakeError::Refused(e)) => {
            info!(%peer, error = %e, "client refused");
            return;
        }
        Err(e) => {
            debug!(%peer, error = %e, "handshake failed");
            return;
        }
    };
    debug!(%peer, user = %authed.user, "client authenticated");
    let mut session = Session::new(authed, shared);
    if session.accept_login().await.is_ok() {
        session.command_loop().await;
    }
    session.client.shutdown().await;
}

/// A command either leaves the session usable or ends it.
type CmdResult = Result<(), Closed>;

/// The session must end (client gone or broke the protocol).
#[derive(Debug)]
pub struct Closed;

struct Session {
    shared: Arc<Shared>,
    client: PacketStream<ClientIo>,
    user: String,
    caps: CapabilityFlags,
    key: PoolKey,
    nonce: [u8; 20],
    /// The default database as the client sees it.
    db: Option<String>,
    /// Status flags of the last server answer (autocommit, in transaction).
    status: u16,
    /// The pinned master connection.
    master: Option<Pooled>,
    /// seq of the first reply packet (the one after the client's command).
    reply_seq: u8,
    login_seq: u8,
}

impl Session {
    fn new(a: Authed, shared: Arc<Shared>) -> Session {
        let key = PoolKey {
            caps: (a.caps & format_capabilities()).bits(),
            collation: a.collation,
        };
        Session {
            shared,
            client: a.client,
            user: a.user,
            caps: a.caps,
            key,
            nonce: a.nonce,
            db: a.db,
            status: SERVER_STATUS_AUTOCOMMIT,
            master: None,
            reply_seq: 1,
            login_seq: a.seq,
        }
    }

    /// Finish the login: check the default database on the master, then OK.
    async fn accept_login(&mut self) -> CmdResult {
        self.reply_seq = self.login_seq;
        if self.db.is_some() {
            if let Err(e) = self.backend(Plan::master(0, router::Reason::Default)).await {
                self.send_err(&e).await?;
                return Err(Closed);
            }
        }
        self.send_ok(0, 0).await
    }

    async fn command_loop(&mut self) {
        loop {
            let pkt = match self.client.read_packet().await {
                Ok(p) => p,
                Err(ProtocolError::TooLarge { limit, .. }) => {
                    self.reply_seq = 1;
                    let _ = self.send_err(&error::packet_too_large(limit)).await;
                    return;
                }
                Err(e) => {
                    if !e.is_disconnect() {
                        info!(error = %e, "client protocol error");
                    }
                    return;
                }
            };
            self.reply_seq = pkt.seq.wrapping_add(1);
            let Some(&cmd) = pkt.payload.first() else {
                let _ = self.send_err(&error::bad_handshake("empty command packet")).await;
                return;
            };
            let r = match cmd {
                COM_QUIT => return,
                COM_PING => self.send_ok(0, 0).await,
                COM_QUERY => self.query(&pkt.payload).await,
                COM_INIT_DB => self.init_db(&pkt.payload).await,
                COM_FIELD_LIST => self
                    .forward(&pkt.payload, ResponseKind::FieldList)
                    .await
                    .map(drop),
                COM_STATISTICS | COM_STMT_RESET => {
                    self.forward(&pkt.payload, ResponseKind::Single).await.map(drop)
                }
                COM_STMT_PREPARE => self.forward(&pkt.payload, ResponseKind::Prepare).await.map(drop),
                COM_STMT_EXECUTE => self.forward(&pkt.payload, ResponseKind::Execute).await.map(drop),
                COM_STMT_FETCH => self.forward(&pkt.payload, ResponseKind::Fetch).await.map(drop),
                COM_STMT_CLOSE | COM_STMT_SEND_LONG_DATA => self.forward_no_reply(&pkt.payload).await,
                COM_SET_OPTION => self.set_option(&pkt.payload).await,
                COM_RESET_CONNECTION => self.reset_connection(&pkt.payload).await,
                COM_CHANGE_USER => self.change_user(&pkt.payload).await,
                other => self.send_err(&error::unknown_command(other)).await,
            };
            if r.is_err() {
                return;
            }
        }
    }

    async fn query(&mut self, payload: &[u8]) -> CmdResult {
        let (plan, effect) = router::plan_query(&payload[1..]);
        let Some(tracker) = self.forward_planned(plan, payload, ResponseKind::Query).await? else {
            return Ok(());
        };
        if let SessionEffect::UseDb(db) = effect {
            if !tracker.error {
                if let Some(conn) = self.master.as_mut() {
                    conn.db = Some(db.clone());
                }
                self.db = Some(db);
            }
        }
        Ok(())
    }

    async fn init_db(&mut self, payload: &[u8]) -> CmdResult {
        let db = String::from_utf8_lossy(&payload[1..]).into_owned();
        let Some(tracker) = self.forward(payload, ResponseKind::Single).await? else {
            return Ok(());
        };
        if !tracker.error {
            if let Some(conn) = self.master.as_mut() {
                conn.db = Some(db.clone());
            }
            self.db = Some(db);
        }
        Ok(())
    }

    async fn set_option(&mut self, payload: &[u8]) -> CmdResult {
        let r = self.forward(payload, ResponseKind::Single).await;
        // The option (multi-statements on/off) changes the connection's
        // behaviour for good; COM_RESET_CONNECTION does not undo it, so the
        // connection must not serve another client afterwards.
        if let Some(conn) = self.master.as_mut() {
            conn.broken = true;
        }
        r.map(drop)
    }

    async fn reset_connection(&mut self, payload: &[u8]) -> CmdResult {
        if self.master.is_none() {
            self.status = SERVER_STATUS_AUTOCOMMIT;
            return self.send_ok(0, 0).await;
        }
        let r = self.forward(payload, ResponseKind::Single).await?;
        if let Some(conn) = self.master.as_mut() {
            // What the server keeps as default database after a reset is
            // version-dependent: make the next command re-sync it.
            conn.db = None;
            conn.dirty = false;
        }
        if r.is_some_and(|t| !t.error) {
            self.status = SERVER_STATUS_AUTOCOMMIT;
        }
        Ok(())
    }

    /// COM_CHANGE_USER: authenticate again, then start over with clean
    /// backend state.
    async fn change_user(&mut self, payload: &[u8]) -> CmdResult {
        let Some(req) = parse_change_user(&payload[1..], self.caps) else {
            let _ = self
                .send_err(&error::bad_handshake("malformed COM_CHANGE_USER"))
                .await;
            return Err(Closed);
        };
        let mut seq = self.reply_seq;
        let user = self
            .shared
            .config
            .users
            .iter()
            .find(|u| u.name == req.user)
            .cloned();
        let ok = match &user {
            Some(u) => {
                let plugin = req
                    .plugin
                    .map(|p| mysql_common::packets::AuthPlugin::from_bytes(&p).into_owned());
                let plugin = plugin.or(Some(mysql_common::packets::AuthPlugin::MysqlNativePassword));
                handshake::authenticate(&mut self.client, &mut seq, u, plugin, &self.nonce, &req.auth)
                    .await
                    .map_err(|_| Closed)?
            }
            None => false,
        };
        self.reply_seq = seq;
        if !ok {
            let host = self
                .client
                .get_ref()
                .peer_ip()
                .unwrap_or_else(|| "unknown".to_string());
            let _ = self
                .send_err(&error::access_denied(&req.user, &host, !req.auth.is_empty()))
                .await;
            return Err(Closed);
        }
        // Give the old connection back (the pool resets it) and start clean.
        self.master = None;
        self.user = req.user;
        if let Some(c) = req.collation {
            self.key.collation = c;
        }
        self.db = req.db;
        self.status = SERVER_STATUS_AUTOCOMMIT;
        if self.db.is_some() {
            if let Err(e) = self.backend(Plan::master(0, router::Reason::Default)).await {
                self.send_err(&e).await?;
                return Ok(());
            }
        }
        self.send_ok(0, 0).await
    }

    async fn forward(
        &mut self,
        payload: &[u8],
        kind: ResponseKind,
    ) -> Result<Option<ResponseTracker>, Closed> {
        self.forward_planned(Plan::master(0, router::Reason::Default), payload, kind)
            .await
    }

    /// Send a command that has no response (COM_STMT_CLOSE, SEND_LONG_DATA).
    async fn forward_no_reply(&mut self, payload: &[u8]) -> CmdResult {
        let Ok(conn) = self.backend(Plan::master(0, router::Reason::Default)).await else {
            // Nothing to answer with: the statement is gone with the backend.
            return Ok(());
        };
        let mut seq = 0;
        if conn.stream.write_packet(&mut seq, payload).await.is_err() {
            conn.broken = true;
            self.master = None;
        }
        Ok(())
    }

    /// Run one command on the planned backend and relay its response.
    /// `Ok(None)`: the command failed and the client got an error.
    async fn forward_planned(
        &mut self,
        plan: Plan,
        payload: &[u8],
        kind: ResponseKind,
    ) -> Result<Option<ResponseTracker>, Closed> {
        if let Err(e) = self.backend(plan).await {
            self.send_err(&e).await?;
            return Ok(None);
        }
        let Some(mut conn) = self.master.take() else {
            return Ok(None);
        };
        let deprecate_eof = conn.deprecate_eof();
        conn.dirty = true;
        match relay::command(&mut self.client, &mut conn.stream, payload, kind, deprecate_eof).await {
            Ok(tracker) => {
                if let Some(st) = tracker.last_status {
                    self.status = st;
                }
                self.master = Some(conn);
                Ok(Some(tracker))
            }
            Err(RelayError::Client(e)) => {
                // The backend is mid-response: it cannot serve anyone else.
                conn.broken = true;
                debug!(error = %e, "client gone during a response");
                Err(Closed)
            }
            Err(RelayError::Backend {
                err,
                relayed,
                last_seq,
            }) => {
                conn.broken = true;
                let label = conn_label(&self.shared, plan);
                warn!(backend = %label, error = %err, "backend failed during a command");
                if relayed {
                    self.reply_seq = last_seq.wrapping_add(1);
                }
                let e = error::backend_error_packet(&label, "", &BackendError::Protocol(err));
                self.send_err(&e).await?;
                Ok(None)
            }
        }
    }

    /// Make sure the backend for `plan` is checked out and in sync with the
    /// session (default database). Errors are ready to send to the client.
    async fn backend(&mut self, plan: Plan) -> Result<&mut Pooled, ErrPacket> {
        let group = self.shared.topology.groups.get(plan.group).ok_or_else(|| {
            ErrPacket::new(errcode::CR_CONN_HOST_ERROR, "HY000", "sluice: no backend group")
        })?;
        let pool = group.master.clone();
        if self.master.as_ref().is_some_and(|c| c.broken) {
            self.master = None;
        }
        if self.master.is_none() {
            let conn = pool
                .get(self.key)
                .await
                .map_err(|e| error::backend_error_packet(&pool.label, pool.addr(), &e))?;
            if **self.shared.server_version.load() != conn.server_version {
                self.shared
                    .server_version
                    .store(Arc::new(conn.server_version.clone()));
            }
            self.master = Some(conn);
        }
        let db = self.db.clone();
        let conn = self
            .master
            .as_mut()
            .ok_or_else(|| ErrPacket::new(2013, "HY000", "sluice: backend lost"))?;
        if let Some(db) = db {
            if conn.db.as_deref() != Some(db.as_str()) {
                conn.dirty = true;
                match conn.init_db(&db).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(e),
                    Err(e) => return Err(error::backend_error_packet(&pool.label, pool.addr(), &e)),
                }
            }
        }
        Ok(conn)
    }

    async fn send_ok(&mut self, affected: u64, insert_id: u64) -> CmdResult {
        let p = ok_packet(affected, insert_id, self.status, 0);
        let mut seq = self.reply_seq;
        self.client.write_packet(&mut seq, &p).await.map_err(|_| Closed)
    }

    async fn send_err(&mut self, e: &ErrPacket) -> CmdResult {
        let mut seq = self.reply_seq;
        self.client
            .write_packet(&mut seq, &e.encode())
            .await
            .map_err(|_| Closed)
    }
}

fn conn_label(shared: &Shared, plan: Plan) -> String {
    shared
        .topology
        .groups
        .get(plan.group)
        .map(|g| g.master.label.clone())
        .unwrap_or_default()
}

struct ChangeUser {
    user: String,
    auth: Vec<u8>,
    db: Option<String>,
    collation: Option<u8>,
    plugin: Option<Vec<u8>>,
}

/// Parse COM_CHANGE_USER's body (after the command byte).
fn parse_change_user(b: &[u8], caps: CapabilityFlags) -> Option<ChangeUser> {
    let nul = b.iter().position(|&c| c == 0)?;
    let user = String::from_utf8_lossy(&b[..nul]).into_owned();
    let mut rest = &b[nul + 1..];
    let auth = if caps.contains(CapabilityFlags::CLIENT_SECURE_CONNECTION) {
        let len = usize::from(*rest.first()?);
        let a = rest.get(1..1 + len)?.to_vec();
        rest = &rest[1 + len..];
        a
    } else {
        let n = rest.iter().position(|&c| c == 0)?;
        let a = rest[..n].to_vec();
        rest = &rest[n + 1..];
        a
    };
    let (db, mut rest) = match rest.iter().position(|&c| c == 0) {
        Some(n) => (String::from_utf8_lossy(&rest[..n]).into_owned(), &rest[n + 1..]),
        None => (String::from_utf8_lossy(rest).into_owned(), &rest[rest.len()..]),
    };
    let mut collation = None;
    if rest.len() >= 2 {
        collation = Some(rest[0]);
        rest = &rest[2..];
    }
    let plugin = if caps.contains(CapabilityFlags::CLIENT_PLUGIN_AUTH) && !rest.is_empty() {
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        Some(rest[..n].to_vec())
    } else {
        None
    };
    Some(ChangeUser {
        user,
        auth,
        db: if db.is_empty() { None } else { Some(db) },
        collation,
        plugin,
    })
}
