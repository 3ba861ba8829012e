//! What sluice decodes of a backend's result sets when it merges shards:
//! column definitions, text rows, binary rows (and their conversions), and
//! the server-order comparison of values.
//!
//! Input: a column count (1..=8) and 6 bytes per column (type, flags,
//! collation, decimals as a column definition has them), then one payload read as a column
//! definition, a text row and a binary row. Properties checked: nothing
//! panics; a rewritten column definition reads back as written; the value
//! comparison is reflexive and antisymmetric (the k-way merge relies on it).
#![no_main]

use std::cmp::Ordering;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

use sluice::merge::{
    binary_row_to_text, column_origin, compare, exact_order, orderable, parse_binary_row, parse_column_def,
    rewrite_column_def, text_row_to_binary, types, ColumnMeta, TextRow,
};

/// Column types a server sends; other type bytes are mapped onto these.
const TYPES: [u8; 31] = [
    types::DECIMAL,
    types::TINY,
    types::SHORT,
    types::LONG,
    types::FLOAT,
    types::DOUBLE,
    types::NULL,
    types::TIMESTAMP,
    types::LONGLONG,
    types::INT24,
    types::DATE,
    types::TIME,
    types::DATETIME,
    types::YEAR,
    types::NEWDATE,
    types::VARCHAR,
    types::BIT,
    types::TIMESTAMP2,
    types::DATETIME2,
    types::TIME2,
    types::JSON,
    types::NEWDECIMAL,
    types::ENUM,
    types::SET,
    types::TINY_BLOB,
    types::MEDIUM_BLOB,
    types::LONG_BLOB,
    types::BLOB,
    types::VAR_STRING,
    types::STRING,
    types::GEOMETRY,
];

/// Bytes per column in the input: type, flags (u16 LE), collation (u16 LE),
/// decimals, as a column definition carries them.
const META: usize = 6;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 8) + 1;
    let Some(spec) = rest.get(..META * n) else {
        return;
    };
    let payload = &rest[META * n..];
    let metas: Vec<ColumnMeta> = spec
        .chunks(META)
        .map(|c| {
            let ty = if TYPES.contains(&c[0]) {
                c[0]
            } else {
                TYPES[usize::from(c[0]) % TYPES.len()]
            };
            ColumnMeta::new(
                ty,
                u16::from_le_bytes([c[1], c[2]]),
                u16::from_le_bytes([c[3], c[4]]),
                c[5],
            )
        })
        .collect();

    // A column definition.
    let _ = parse_column_def(payload);
    let _ = column_origin(payload);
    if let Some(rewritten) = rewrite_column_def(payload, &metas[0]) {
        assert_eq!(
            parse_column_def(&rewritten),
            Some(metas[0]),
            "rewritten definition reads back differently"
        );
    }

    // A text row, and the comparison the merge sorts by.
    if let Ok(row) = TextRow::parse(Bytes::copy_from_slice(payload)) {
        let _ = row.visible_payload(n);
        for m in &metas {
            let _ = (orderable(m), exact_order(m));
            for i in 0..row.len().min(4) {
                let a = row.field(i);
                assert_eq!(compare(a, a, m), Ordering::Equal, "a value differs from itself");
                for j in i + 1..row.len().min(4) {
                    let b = row.field(j);
                    assert_eq!(
                        compare(a, b, m),
                        compare(b, a, m).reverse(),
                        "comparison is not antisymmetric"
                    );
                }
            }
        }
        let _ = text_row_to_binary(&row, &metas, n);
    }

    // A binary row, and the conversions both ways.
    let _ = parse_binary_row(payload, &metas);
    if let Ok(text) = binary_row_to_text(payload, &metas) {
        assert_eq!(text.len(), n);
        if let Ok(bin) = text_row_to_binary(&text, &metas, n) {
            let _ = parse_binary_row(&bin, &metas);
        }
    }
});
