//! The server side of the authentication exchange (`frontend::auth_exchange`)
//! fed with whatever a client sends after its handshake response, over an
//! in-memory socket: plugin switches, caching_sha2 fast and full auth,
//! sequence ids.
//!
//! Input: one config byte (credential kind, TLS or not, the plugin the client
//! named), one byte giving the length of the first auth response, that
//! response, then the raw bytes of the client's stream. Properties checked:
//! nothing panics or hangs (the exchange ends on its own, whatever the
//! stream holds: it is bounded, not driven by the input's length); no input
//! passes for a password it cannot know; at most `MAX_CLIENT_READS` client
//! packets are consumed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mysql_common::packets::AuthPlugin;
use tokio::io::AsyncWriteExt;

use sluice::config::{Credential, User};
use sluice::frontend::auth_exchange::{authenticate, ExchangeError, MAX_CLIENT_READS};
use sluice::protocol::PacketStream;

const NONCE: [u8; 20] = *b"0123456789abcdefghij";

fuzz_target!(|data: &[u8]| {
    let Some((&config, rest)) = data.split_first() else {
        return;
    };
    let Some((&first_len, rest)) = rest.split_first() else {
        return;
    };
    let n = usize::from(first_len).min(rest.len());
    let (first, stream) = rest.split_at(n);
    let credential = if config & 1 == 0 {
        Credential::Password("fuzz-secret".into())
    } else {
        Credential::NativeHash([7; 20])
    };
    let tls = config & 2 != 0;
    let plugin = match (config >> 2) & 3 {
        0 => None,
        1 => Some(AuthPlugin::MysqlNativePassword),
        2 => Some(AuthPlugin::CachingSha2Password),
        _ => Some(AuthPlugin::Other(b"dialog".as_slice().into())),
    };
    let user = User {
        name: "fuzz".into(),
        credential,
        max_connections: 0,
        require_tls: false,
        backend: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        client.write_all(stream).await.expect("write the client's bytes");
        // EOF after the input: the exchange must end, never wait for more.
        client.shutdown().await.expect("shutdown");
        let mut conn = PacketStream::new(server, 64 * 1024);
        let mut seq = 2u8;
        let r = authenticate(&mut conn, &mut seq, &user, plugin, &NONCE, first, tls).await;
        match r {
            Ok(proof) => assert!(!proof.proved, "the input passed for a password it cannot know"),
            Err(ExchangeError::OutOfOrder { got, expected }) => assert_ne!(got, expected),
            Err(ExchangeError::Protocol(_)) => {}
        }
        // Each client packet read follows one server packet: seq moves by two per
        // read, plus one for a final status packet.
        let moved = usize::from(seq.wrapping_sub(2));
        assert!(moved <= 2 * MAX_CLIENT_READS + 1, "{moved} sequence ids used");
        drop(client);
    });
});
