//! Wire protocol shared by the frontend (sluice as a server) and the backend
//! (sluice as a client): framing, the small packets sluice builds itself, and
//! the state machine that finds where a server's response ends.
//!
//! Handshake and handshake-response layouts come from `mysql_common`; the hot
//! path never decodes rows, it only looks at the first bytes of each packet.

pub mod codec;
pub mod consts;
pub mod error;
pub mod native_password;
pub mod packets;
pub mod response;
pub mod resultset;
pub mod transport;

pub use codec::{Packet, PacketStream};
pub use error::ProtocolError;
