//! Visitors over expressions: aggregate and window detection, qualifier rewriting, checks
//! for sharded subqueries, misread operators and non-deterministic functions; expression
//! identity.

use sqlparser::ast::{BinaryOperator, Expr, Ident, ObjectName, ObjectNamePart, Query};
use sqlparser::tokenizer::Token;

use super::plan::Refusal;
use super::text::tokenize;
use super::walk::{function_name, idents, walk, Step, Visit};

/// Aggregate functions sluice can merge.
pub(crate) const MERGEABLE_AGGREGATES: [&str; 5] = ["COUNT", "SUM", "MIN", "MAX", "AVG"];

/// Aggregate functions of MariaDB/MySQL whose partial results sluice cannot merge.
const OTHER_AGGREGATES: [&str; 12] = [
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

/// Finds aggregate calls and window functions (not inside subqueries).
#[derive(Default)]
pub(crate) struct AggScan {
    /// Mergeable aggregate calls found.
    pub mergeable: usize,
    /// Names of aggregates that cannot be merged.
    pub other: Vec<String>,
    /// GROUP_CONCAT calls (merged per group in their own ORDER BY: see `concat.rs`).
    pub concat: usize,
    pub window: bool,
}

impl Visit for AggScan {
    fn expr(&mut self, e: &mut Expr) -> Result<Step, Refusal> {
        if let Expr::Function(f) = e {
            if f.over.is_some() {
                self.window = true;
            }
            if let Some(name) = function_name(f) {
                if MERGEABLE_AGGREGATES.contains(&name.as_str()) {
                    self.mergeable += 1;
                } else if name == "GROUP_CONCAT" {
                    self.concat += 1;
                } else if OTHER_AGGREGATES.contains(&name.as_str()) {
                    self.other.push(name);
                }
            }
        }
        Ok(Step::Into)
    }
}

impl AggScan {
    pub(crate) fn of(e: &Expr) -> Result<AggScan, Refusal> {
        let mut scan = AggScan::default();
        walk(&mut e.clone(), &mut scan)?;
        Ok(scan)
    }

    pub(crate) fn any_aggregate(&self) -> bool {
        self.mergeable > 0 || self.concat > 0 || !self.other.is_empty()
    }
}

/// Collects unqualified identifiers (column names or select aliases).
#[derive(Default)]
pub(crate) struct BareNames(pub Vec<String>);

impl Visit for BareNames {
    fn expr(&mut self, e: &mut Expr) -> Result<Step, Refusal> {
        if let Expr::Identifier(i) = e {
            self.0.push(i.value.clone());
        }
        Ok(Step::Into)
    }
}

/// A normalized token form of an expression, for "the same expression" tests: identifiers
/// without quotes and lower-cased, whitespace dropped.
pub(crate) fn expr_key(e: &Expr) -> Vec<String> {
    let text = e.to_string();
    match tokenize(&text) {
        Ok(tokens) => tokens
            .into_iter()
            .filter_map(|t| match t.token {
                Token::Whitespace(_) => None,
                Token::Word(w) => Some(w.value.to_lowercase()),
                other => Some(other.to_string()),
            })
            .collect(),
        Err(_) => vec![text],
    }
}

/// A column reference: its qualifiers and its column name.
pub(crate) fn column_ref(e: &Expr) -> Option<(Vec<&str>, &str)> {
    match e {
        Expr::Identifier(i) => Some((Vec::new(), i.value.as_str())),
        Expr::CompoundIdentifier(parts) => {
            let (last, quals) = parts.split_last()?;
            Some((
                quals.iter().map(|i| i.value.as_str()).collect(),
                last.value.as_str(),
            ))
        }
        Expr::Nested(x) => column_ref(x),
        _ => None,
    }
}

/// Rewrites qualified column references to a sharded table.
pub(crate) struct Requalify<'a> {
    /// Database the table resolves to.
    pub db: &'a str,
    /// Logical table name as the statement wrote it.
    pub table: &'a str,
    /// `Some(sub)`: `t.c` → `sub.c` and `db.t.c` → `db.sub.c` (writes: the sub-table
    /// keeps its own name). None: `db.t.c` → `t.c` (queries: the sub-table is aliased `t`).
    pub sub: Option<&'a str>,
}

impl Requalify<'_> {
    /// Rewrites the qualifier of one name (`[db.]t.c`, `[db.]t.*`) in place.
    pub(crate) fn idents(&self, parts: &mut Vec<Ident>) {
        let n = parts.len();
        if n == 3 && parts[0].value == self.db && parts[1].value == self.table {
            match self.sub {
                Some(sub) => parts[1].value = sub.to_string(),
                None => {
                    parts.remove(0);
                }
            }
        } else if n == 2 && parts[0].value == self.table {
            if let Some(sub) = self.sub {
                parts[0].value = sub.to_string();
            }
        }
    }

    /// Same for a column name written as an object name (`SET t.c = …`, INSERT lists).
    pub(crate) fn object_name(&self, name: &mut ObjectName) {
        self.rewrite_object(name, |ids| self.idents(ids));
    }

    /// Rewrites a table qualifier alone (`[db.]t` of `[db.]t.*`).
    pub(crate) fn qualifier(&self, name: &mut ObjectName) {
        self.rewrite_object(name, |ids| {
            ids.push(Ident::new(""));
            self.idents(ids);
            ids.pop();
        });
    }

    fn rewrite_object(&self, name: &mut ObjectName, f: impl Fn(&mut Vec<Ident>)) {
        let Some(ids) = idents(name) else { return };
        let mut ids: Vec<Ident> = ids.into_iter().cloned().collect();
        let before = ids.len();
        f(&mut ids);
        let changed = ids.len() != before
            || ids
                .iter()
                .zip(&name.0)
                .any(|(a, b)| b.as_ident().is_some_and(|b| b.value != a.value));
        if changed {
            *name = ObjectName(ids.into_iter().map(ObjectNamePart::Identifier).collect());
        }
    }
}

impl Visit for Requalify<'_> {
    fn expr(&mut self, e: &mut Expr) -> Result<Step, Refusal> {
        match e {
            Expr::CompoundIdentifier(parts) => self.idents(parts),
            Expr::QualifiedWildcard(name, _) => self.qualifier(name),
            _ => {}
        }
        Ok(Step::Into)
    }
}

/// Refuses any subquery that mentions a sharded table.
pub(crate) struct NoShardedSubquery<'c, 'a> {
    pub ctx: &'c super::plan::Ctx<'a>,
}

impl Visit for NoShardedSubquery<'_, '_> {
    fn query(&mut self, q: &mut Query) -> Result<(), Refusal> {
        match self.ctx.query_mentions(q) {
            Some(t) => Err(Refusal(format!(
                "sluice: a subquery that reads sharded table {t} is not supported"
            ))),
            None => Ok(()),
        }
    }
}

/// Finds `||` and `XOR`, whose precedence sqlparser 0.64 gets wrong for MySQL:
/// `a = 1 AND b = 2 || c = 3` is `(a = 1 AND b = 2) OR c = 3` to the server (without
/// `PIPES_AS_CONCAT`) but `a = 1 AND b = ((2 || c) = 3)` to the parser, and `XOR` binds
/// tighter than comparisons there. The text renders back unchanged, so the server still
/// reads what the client wrote; only the tree's AND/OR structure cannot be trusted.
#[derive(Default)]
pub(crate) struct MisreadOperators(pub bool);

impl Visit for MisreadOperators {
    fn expr(&mut self, e: &mut Expr) -> Result<Step, Refusal> {
        if let Expr::BinaryOp {
            op: BinaryOperator::StringConcat | BinaryOperator::Xor,
            ..
        } = e
        {
            self.0 = true;
        }
        Ok(Step::Into)
    }
}

impl MisreadOperators {
    pub(crate) fn in_expr(e: &Expr) -> bool {
        let mut v = MisreadOperators::default();
        // An expression the walker cannot read is treated as misread too.
        walk(&mut e.clone(), &mut v).map_or(true, |()| v.0)
    }
}

/// Finds functions whose value differs at each evaluation (`RAND()`, `UUID()`, …).
#[derive(Default)]
pub(crate) struct NonDeterministic(pub bool);

impl Visit for NonDeterministic {
    fn expr(&mut self, e: &mut Expr) -> Result<Step, Refusal> {
        if let Expr::Function(f) = e {
            if function_name(f).is_some_and(|n| {
                [
                    "RAND",
                    "UUID",
                    "UUID_SHORT",
                    "SYS_GUID",
                    "RANDOM_BYTES",
                    "SYSDATE",
                ]
                .contains(&n.as_str())
            }) {
                self.0 = true;
            }
        }
        Ok(Step::Into)
    }
}

impl NonDeterministic {
    pub(crate) fn in_expr(e: &Expr) -> bool {
        let mut v = NonDeterministic::default();
        walk(&mut e.clone(), &mut v).map_or(true, |()| v.0)
    }
}
