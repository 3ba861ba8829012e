//! The config loader on arbitrary text: YAML parsing, typed fields
//! (durations, addresses, password hashes, shard rules) and validation must
//! answer with an error, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

use sluice::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::from_yaml_str(text, "fuzz.yaml") {
        Ok(_) => {}
        Err(e) => {
            assert!(!e.to_string().is_empty());
            let _ = e.line();
        }
    }
});
