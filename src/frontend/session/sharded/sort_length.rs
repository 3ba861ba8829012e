//! `max_sort_length` as the server applies it to a merge's parts. The server sorts
//! strings (ORDER BY, GROUP BY / DISTINCT done by sorting) by that prefix of their sort
//! key and compares whole values where it reads a key, by plan; the merge compares whole
//! values, so it refuses a sort key that may pass the value (`merge::value::
//! beyond_sort_length`). The value is the connection's own: the server's global when the
//! connection was opened or reset (`SET GLOBAL`, my.cnf), or what the session set there
//! (a procedure, a prepared `SET`). So it is asked of each connection a part runs on (a
//! scatter connection, or its group's master in a transaction or a pinned session), sent
//! just before the part (no round trip of its own: its answer is read before the part's),
//! for a merge that compares columns at all; the least answer is the merge's limit.
//! A session's own `SET max_sort_length` is such a value (its SETs are replayed on the
//! parts' connections before they are asked). A statement that sets it for itself (`SET
//! STATEMENT max_sort_length = … FOR`) is refused whole (`merge::inexact_comparison`).

use crate::backend::BackendConn;
use crate::merge::{self, ColumnMeta, MergeError, MergeSpec, RowSource, TextRow};
use crate::protocol::packets::ErrPacket;
use crate::shard::Part;

use super::io::{not_supported, read_head, read_rows, send_query, Head};

/// Asked without the session's `sql_select_limit` (0 would answer no row).
const QUERY: &str = "SELECT @@max_sort_length";

/// What the parts' connections said of their `max_sort_length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asked {
    /// Not asked (the merge compares nothing, or its parts ran on the master).
    Not,
    /// The least value of the parts' connections.
    Value(usize),
    /// A connection did not say.
    Unknown,
}

impl Asked {
    /// With one more connection's answer.
    pub(super) fn and(self, n: Option<usize>) -> Asked {
        match (self, n) {
            (Asked::Unknown, _) | (_, None) => Asked::Unknown,
            (Asked::Not, Some(n)) => Asked::Value(n),
            (Asked::Value(a), Some(n)) => Asked::Value(a.min(n)),
        }
    }
}

/// Whether the merge compares columns (which may turn out to be strings once their
/// definitions are read): the parts' connections are asked then.
pub(super) fn worth_asking(merge: &MergeSpec, parts: usize) -> bool {
    parts > 1 && !merge::compared_columns(merge).is_empty()
}

/// Send a part (`io::send_part`), after the question when `ask`, so its answer comes
/// first ([`answer`]).
pub(super) async fn send_part(conn: &mut BackendConn, part: &Part, ask: bool) -> Result<(), ErrPacket> {
    if ask {
        send_query(conn, &crate::backend::conn::unlimited(QUERY)).await?;
    }
    super::io::send_part(conn, part).await
}

/// When `ask`: read the answer to the question [`send_part`] sent, into `asked`.
pub(super) async fn answer(conn: &mut BackendConn, ask: bool, asked: &mut Asked) -> Result<(), ErrPacket> {
    if !ask {
        return Ok(());
    }
    let n = match read_head(conn).await? {
        Head::Error(_) => None,
        Head::Columns(_) => {
            let rows = read_rows(conn).await?;
            let n = rows.front().and_then(|r| r.field(0));
            n.and_then(|f| std::str::from_utf8(f).ok()?.parse().ok())
        }
    };
    *asked = asked.and(n);
    Ok(())
}

/// A source whose rows were sorted under `max_sort_length` (None: the merge compares no
/// strings, the source's own default stands): the merge refuses sort keys past it.
pub(super) struct SortLength<S>(S, Option<usize>);

impl<S: RowSource> RowSource for SortLength<S> {
    fn warnings(&self) -> Option<u16> {
        self.0.warnings()
    }

    fn max_sort_length(&self) -> usize {
        self.1.unwrap_or_else(|| self.0.max_sort_length())
    }

    async fn next(&mut self) -> Result<Option<TextRow>, MergeError> {
        self.0.next().await
    }
}

fn unknown() -> ErrPacket {
    not_supported(
        "sluice: ordering, grouping or comparing strings across shards needs the max_sort_length of the \
         connections the parts ran on, which sluice could not read",
    )
}

/// The statement sets `max_sort_length` for itself (`SET STATEMENT max_sort_length = …
/// FOR`): its parts then sort under a value their connections were not asked.
pub(super) fn set_by_statement(sql: &str) -> bool {
    let var = b"max_sort_length";
    sql.as_bytes()
        .windows(var.len())
        .any(|w| w.eq_ignore_ascii_case(var))
}

/// The merge's sources with the `max_sort_length` their rows were sorted under, when it
/// compares strings across them: the least their connections said (`asked`). Err: not
/// known, refused.
pub(super) fn sorted_under<S: RowSource>(
    sources: Vec<S>,
    spec: &MergeSpec,
    metas: &[ColumnMeta],
    asked: Asked,
) -> Result<Vec<SortLength<S>>, ErrPacket> {
    let strings = (merge::compared_columns(spec).iter()).any(|&c| {
        metas
            .get(c)
            .is_some_and(|m| matches!(m.column_type, 15 | 249..=254))
    });
    // One source: nothing compared across parts (its own check stays as it was).
    let strings = strings && sources.len() > 1;
    let n = match (strings, asked) {
        (false, _) => None,
        (true, Asked::Value(n)) => Some(n),
        (true, Asked::Unknown | Asked::Not) => return Err(unknown()),
    };
    Ok(sources.into_iter().map(|s| SortLength(s, n)).collect())
}

/// Orders of computed strings (`computed`: the columns whose collation the server's
/// description gave) that the server does not give as the merge would, refused (a
/// DISTINCT ordered by an expression is refused by the planner, see
/// `crate::shard::select`):
/// - a VARCHAR under an 8-bit `_bin` collation (`LEFT(c, 2)`, `CONCAT(c, '')`, `LOWER(c)`,
///   even `c COLLATE latin1_bin`, under latin1_bin) is sorted by its bytes without PAD
///   SPACE (`'a'` before `'a '`), where the server compares it (GROUP BY, DISTINCT) and
///   sorts a column, a TEXT result or an aggregate with PAD SPACE; the merge broke such
///   ties by the next key (seed 404 of tests/sharding_gen.rs: `ORDER BY LEFT(c2, 2), c1`);
pub(super) fn no_pad_sort(spec: &MergeSpec, metas: &[ColumnMeta], computed: &[usize]) -> Option<String> {
    use merge::types;
    let group = spec.group.as_ref();
    let sorted = spec.order_by.iter().map(|k| k.col).chain(
        group
            .iter()
            .flat_map(|g| g.keys.iter().copied().chain(g.order_after.iter().map(|k| k.col))),
    );
    let aggregate = |c: usize| group.is_some_and(|g| g.aggs.iter().any(|a| a.col == c));
    let multi_byte = [
        "utf8", "ucs2", "utf16", "utf32", "big5", "gbk", "gb2312", "sjis", "cp932", "ujis", "eucjpms",
        "euckr",
    ];
    let no_pad = |m: &ColumnMeta| {
        let name = merge::collation::collation_name(m.collation);
        matches!(m.column_type, types::VARCHAR | types::VAR_STRING | types::STRING)
            && name.ends_with("_bin")
            && !multi_byte.iter().any(|p| name.starts_with(p))
    };
    let col = sorted
        .filter(|c| computed.contains(c) && !aggregate(*c))
        .find(|&c| metas.get(c).is_some_and(no_pad))?;
    Some(format!(
        "sluice: ordering by the computed string column {} across shards is not supported: the server \
         sorts such a value of an 8-bit _bin collation without PAD SPACE ('a' before 'a '), which it \
         compares with it elsewhere",
        col + 1
    ))
}
