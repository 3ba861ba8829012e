//! A console answer as a typed table, rendered two ways from the same rows:
//! a MySQL result set (integers as LONGLONG, text as utf8mb4 VARCHAR) and
//! HTTP JSON (a list of objects whose keys are the column names), so the
//! SQL and HTTP answers cannot drift apart.

use bytes::BytesMut;

use crate::protocol::consts::CapabilityFlags;
use crate::protocol::resultset::{queue_result, Column};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Text(String),
    Null,
}

impl Value {
    pub fn text(s: impl Into<String>) -> Value {
        Value::Text(s.into())
    }

    pub fn flag(b: bool) -> Value {
        Value::Int(i64::from(b))
    }

    pub fn opt_flag(b: Option<bool>) -> Value {
        b.map_or(Value::Null, Value::flag)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<(&'static str, Kind)>,
    pub rows: Vec<Vec<Value>>,
}

const TYPE_LONGLONG: u8 = 8;
const TYPE_VAR_STRING: u8 = 253;
const UTF8MB4_GENERAL_CI: u16 = 45;
const BINARY: u16 = 63;
const NUM_FLAG: u16 = 32768;

impl Table {
    pub fn new(columns: &[(&'static str, Kind)]) -> Table {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    fn mysql_columns(&self) -> Vec<Column> {
        self.columns
            .iter()
            .map(|&(name, kind)| match kind {
                Kind::Int => Column {
                    name,
                    charset: BINARY,
                    length: 20,
                    type_: TYPE_LONGLONG,
                    flags: NUM_FLAG,
                    decimals: 0,
                },
                Kind::Text => Column {
                    name,
                    charset: UTF8MB4_GENERAL_CI,
                    length: 1024,
                    type_: TYPE_VAR_STRING,
                    flags: 0,
                    decimals: 39,
                },
            })
            .collect()
    }

    /// The result set, queued on `out` from sequence id `seq`.
    pub fn queue(
        &self,
        out: &mut BytesMut,
        seq: &mut u8,
        caps: CapabilityFlags,
        ext_meta: bool,
        status: u16,
    ) {
        let rows: Vec<Vec<Option<Vec<u8>>>> = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| match v {
                        Value::Int(n) => Some(n.to_string().into_bytes()),
                        Value::Text(s) => Some(s.clone().into_bytes()),
                        Value::Null => None,
                    })
                    .collect()
            })
            .collect();
        queue_result(out, seq, caps, ext_meta, &self.mysql_columns(), &rows, status);
    }

    /// `[{"col": value, ...}, ...]`, one line per row.
    pub fn json(&self) -> String {
        let mut out = String::from("[");
        for (i, r) in self.rows.iter().enumerate() {
            out.push_str(if i == 0 { "\n  {" } else { ",\n  {" });
            for (j, ((name, _), v)) in self.columns.iter().zip(r).enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                json_str(&mut out, name);
                out.push_str(": ");
                match v {
                    Value::Int(n) => out.push_str(&n.to_string()),
                    Value::Text(s) => json_str(&mut out, s),
                    Value::Null => out.push_str("null"),
                }
            }
            out.push('}');
        }
        out.push_str(if self.rows.is_empty() { "]\n" } else { "\n]\n" });
        out
    }
}

/// A JSON string literal (RFC 8259 escapes).
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rows_keep_types_and_escape() {
        let mut t = Table::new(&[("id", Kind::Int), ("info", Kind::Text), ("x", Kind::Int)]);
        t.rows
            .push(vec![Value::Int(3), Value::text("a\"b\\\n\u{1}"), Value::Null]);
        assert_eq!(
            t.json(),
            "[\n  {\"id\": 3, \"info\": \"a\\\"b\\\\\\n\\u0001\", \"x\": null}\n]\n"
        );
        assert_eq!(Table::new(&[("id", Kind::Int)]).json(), "[]\n");
    }
}
