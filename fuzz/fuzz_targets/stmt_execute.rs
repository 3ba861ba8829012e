//! COM_STMT_EXECUTE as the session reads and rewrites it: the statement id,
//! the layout (cursor flags, new-params-bound flag), the parameter types, and
//! the injection of remembered types for a connection that has not seen
//! them.
//!
//! Input: the statement's parameter count (2 bytes), then the packet.
//! Properties checked: nothing panics; an execute rewritten with injected
//! types reads back as bound, with those types, and the same id and flags.
#![no_main]

use libfuzzer_sys::fuzz_target;

use sluice::frontend::prepared::{bound_types, execute_layout, inject_types, set_stmt_id, stmt_id};

fuzz_target!(|data: &[u8]| {
    let Some((head, payload)) = data.split_at_checked(2) else {
        return;
    };
    let params = u16::from_le_bytes([head[0], head[1]]) % 512;
    let id = stmt_id(payload);
    let Some(layout) = execute_layout(payload, params) else {
        return;
    };
    assert!(id.is_some(), "a layout without a statement id");
    let types = bound_types(payload, &layout, params);
    if let Some(t) = &types {
        assert_eq!(t.len(), 2 * usize::from(params));
    }
    if let (Some(at), false) = (layout.bound_at, layout.bound) {
        let remembered: Vec<u8> = (0..2 * usize::from(params)).map(|i| i as u8).collect();
        let mut out = inject_types(payload, at, &remembered);
        let again = execute_layout(&out, params).expect("injected execute has a layout");
        assert!(again.bound, "injected execute is not bound");
        assert_eq!(again.cursor_flags, layout.cursor_flags);
        assert_eq!(bound_types(&out, &again, params), Some(remembered.as_slice()));
        assert_eq!(stmt_id(&out), id);
        set_stmt_id(&mut out, 0xdead_beef);
        assert_eq!(stmt_id(&out), Some(0xdead_beef));
    }
});
