//! GROUP_CONCAT across shards: recognizing the call and the shards' rewrite (see
//! [`crate::merge::Concat`] for the merge).
//!
//! `GROUP_CONCAT([DISTINCT] a, b ORDER BY k1 [DESC], … SEPARATOR 's')` becomes, on the
//! shards, `GROUP_CONCAT([DISTINCT] a, b SEPARATOR 's')` over sub-groups grouped by (group
//! keys, k1, …, `CAST(CONCAT(a, b) AS BINARY)`) and sorted by (group keys, k1, …): every
//! sub-group holds copies of one value with equal order keys, so its partial is exact
//! whatever order the server concatenates it in, and the merge appends the partials in
//! the GROUP_CONCAT's order.
//!
//! Decided and refused (each with a sentence naming the shape):
//! - no ORDER BY inside GROUP_CONCAT: the server's order is then unspecified (it follows
//!   its scan), so no merge can be byte-equal to it; add ORDER BY;
//! - ORDER BY terms other than columns of the tables (positions, aliases, expressions:
//!   a computed term's collation is not known to the merge);
//! - DISTINCT other than `GROUP_CONCAT(DISTINCT x ORDER BY x)` (the server drops
//!   duplicates of the arguments wherever they fall in the order);
//! - GROUP_CONCATs with different ORDER BY in one statement, and GROUP_CONCAT beside a
//!   DISTINCT aggregate (each needs its own sorted stream);
//! - GROUP_CONCAT in HAVING or ORDER BY that is not selected.

use sqlparser::ast::{
    CastKind, DataType, DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentClause, FunctionArguments, Ident, ObjectName, ObjectNamePart, Value,
};

use super::plan::Refusal;
use super::shape::{direction, Item};
use super::visitors::{column_ref, expr_key};
use super::walk::function_name;

/// A GROUP_CONCAT call at the top of a select item.
pub(super) struct ConcatCall {
    /// The shards' call: the client's without its ORDER BY.
    pub shard: Expr,
    /// `CAST(CONCAT(args) AS BINARY)`: the sub-groups' value bytes.
    pub bytes: Expr,
    /// `LENGTH(CONCAT(args))`.
    pub length: Expr,
    /// The separator literal (`','` when not written).
    pub separator: Expr,
    /// ORDER BY terms (column references) and directions.
    pub order: Vec<(Expr, bool)>,
    pub distinct: bool,
}

impl ConcatCall {
    /// The ORDER BY, for "the same order" tests.
    pub fn order_key(&self) -> Vec<(Vec<String>, bool)> {
        self.order.iter().map(|(e, d)| (expr_key(e), *d)).collect()
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    call_with(
        name,
        args.into_iter()
            .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
            .collect(),
    )
}

fn call_with(name: &str, args: Vec<FunctionArg>) -> Expr {
    use sqlparser::ast::FunctionArgumentList;
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// Whether `e` is a GROUP_CONCAT call.
pub(super) fn is_concat(e: &Expr) -> bool {
    matches!(e, Expr::Function(f) if function_name(f).as_deref() == Some("GROUP_CONCAT"))
}

/// Recognizes `GROUP_CONCAT(...)` at the top of a select item; refuses its forms that
/// cannot be merged exactly. `items`: the select list (aliases are not order terms).
pub(super) fn concat_call(e: &Expr, items: &[Item], table: &str) -> Result<Option<ConcatCall>, Refusal> {
    let Expr::Function(f) = e else { return Ok(None) };
    if function_name(f).as_deref() != Some("GROUP_CONCAT") {
        return Ok(None);
    }
    let refuse = |what: &str| -> Result<Option<ConcatCall>, Refusal> {
        Err(Refusal(format!(
            "sluice: GROUP_CONCAT {what} on sharded table {table} is not supported across shards"
        )))
    };
    let FunctionArguments::List(list) = &f.args else {
        return refuse("without arguments");
    };
    if f.over.is_some() || f.filter.is_some() || f.null_treatment.is_some() || !f.within_group.is_empty() {
        return refuse("with OVER, FILTER or WITHIN GROUP");
    }
    let mut args = Vec::with_capacity(list.args.len());
    for a in &list.args {
        match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => args.push(x.clone()),
            _ => return refuse("with this argument"),
        }
    }
    if args.is_empty() {
        return refuse("without arguments");
    }
    let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
    let mut order = Vec::new();
    let mut separator = Expr::value(Value::SingleQuotedString(",".into()));
    let mut clauses = Vec::new();
    for c in &list.clauses {
        match c {
            FunctionArgumentClause::OrderBy(terms) => {
                for o in terms {
                    let desc = direction(o, table)?;
                    let aliased = matches!(&o.expr, Expr::Identifier(id) if items.iter().any(|(_, a)| {
                        a.as_ref().is_some_and(|a| a.value.eq_ignore_ascii_case(&id.value))
                    }));
                    if column_ref(&o.expr).is_none() || aliased {
                        return refuse(&format!(
                            "ORDER BY {} (order by columns of the table, not positions, aliases or \
                             expressions)",
                            o.expr
                        ));
                    }
                    order.push((o.expr.clone(), desc));
                }
            }
            FunctionArgumentClause::Separator(v) => {
                separator = Expr::value(v.value.clone());
                clauses.push(c.clone());
            }
            _ => return refuse("with this clause"),
        }
    }
    if order.is_empty() {
        return refuse(
            "without its own ORDER BY (the server's order is then unspecified; write \
             GROUP_CONCAT(… ORDER BY …))",
        );
    }
    if distinct {
        let same = args.len() == 1 && order.len() == 1 && expr_key(&args[0]) == expr_key(&order[0].0);
        if !same {
            return refuse("DISTINCT other than GROUP_CONCAT(DISTINCT x ORDER BY x)");
        }
    }
    let mut shard = f.clone();
    if let FunctionArguments::List(l) = &mut shard.args {
        l.clauses = clauses;
    }
    let concat = call("CONCAT", args);
    Ok(Some(ConcatCall {
        shard: Expr::Function(shard),
        bytes: Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(concat.clone()),
            data_type: DataType::Binary(None),
            format: None,
        },
        length: call("LENGTH", vec![concat]),
        separator,
        order,
        distinct,
    }))
}

/// `SUM(e)`, `COUNT(*)`.
pub(super) fn sum_of(e: Expr) -> Expr {
    call("SUM", vec![e])
}

pub(super) fn count_star() -> Expr {
    call_with("COUNT", vec![FunctionArg::Unnamed(FunctionArgExpr::Wildcard)])
}

/// `@@group_concat_max_len`: the session's (the shards' connections replay its SETs).
pub(super) fn max_len() -> Expr {
    Expr::Identifier(Ident::new("@@group_concat_max_len"))
}
