//! The client's handshake response (and the SSL request that may precede it)
//! as sluice parses it, COM_CHANGE_USER's body, and the password checks fed
//! with whatever scramble a client sent.
//!
//! Input: one config byte (what the greeting offered), then the packet
//! payload. Properties checked: nothing panics; agreed capabilities are a
//! subset of those offered; a refusal is a well-formed ERR packet; no
//! scramble from the input passes a password check it was not made for.
#![no_main]

use libfuzzer_sys::fuzz_target;

use sluice::config::Credential;
use sluice::frontend::auth::{verify_cleartext, verify_native, verify_sha2_fast};
use sluice::frontend::change_user::parse_change_user;
use sluice::frontend::handshake::{is_ssl_request, parse_handshake_response};
use sluice::protocol::consts::{offered_capabilities, CapabilityFlags, MARIADB_RELAYED_EXT};
use sluice::protocol::packets::ErrPacket;

const NONCE: [u8; 20] = *b"0123456789abcdefghij";
const PASSWORD: &str = "fuzz-secret";

fn check_scramble(scramble: &[u8]) {
    // The input cannot know the password; an empty answer only passes for
    // the empty password.
    assert!(!verify_native(
        &Credential::Password(PASSWORD.into()),
        &NONCE,
        scramble
    ));
    assert!(!verify_sha2_fast(PASSWORD, &NONCE, scramble));
    assert!(!verify_cleartext(&Credential::NativeHash([7; 20]), scramble));
    assert_eq!(
        verify_native(&Credential::Password(String::new()), &NONCE, scramble),
        scramble.is_empty()
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&config, payload)) = data.split_first() else {
        return;
    };
    let mut offered = offered_capabilities();
    if config & 1 != 0 {
        offered |= CapabilityFlags::CLIENT_SSL;
    }
    let offered_ext = if config & 2 != 0 { MARIADB_RELAYED_EXT } else { 0 };
    if offered_ext != 0 {
        offered.remove(CapabilityFlags::CLIENT_LONG_PASSWORD);
    }

    let ssl = is_ssl_request(payload);
    assert!(!ssl || payload.len() == 32);
    match parse_handshake_response(payload, offered, offered_ext) {
        Ok(r) => {
            assert!(offered.contains(r.caps), "agreed a capability not offered");
            assert_eq!(r.mariadb_ext & !offered_ext, 0, "agreed an extension not offered");
            assert!(r.db.as_ref().is_none_or(|d| !d.is_empty()));
            check_scramble(&r.scramble);
        }
        Err(e) => {
            let encoded = e.encode();
            assert_eq!(ErrPacket::parse(&encoded), Some(e));
        }
    }

    // COM_CHANGE_USER under the capabilities a session may have agreed.
    let secure = CapabilityFlags::CLIENT_SECURE_CONNECTION;
    let plugin_auth = CapabilityFlags::CLIENT_PLUGIN_AUTH;
    for caps in [
        offered,
        offered - secure,
        offered - plugin_auth,
        CapabilityFlags::empty(),
    ] {
        if let Some(req) = parse_change_user(payload, caps) {
            assert!(!req.user.contains('\0'));
            assert!(req.db.as_ref().is_none_or(|d| !d.is_empty() && !d.contains('\0')));
            assert!(req.plugin.is_none() || caps.contains(plugin_auth));
            if let Some(p) = &req.plugin {
                assert!(!p.contains(&0));
                let _ = mysql_common::packets::AuthPlugin::from_bytes(p);
            }
            check_scramble(&req.auth);
        }
    }
});
