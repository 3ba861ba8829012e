//! `UNION ALL` / `UNION` of SELECTs reading sharded tables.
//!
//! A union of row sets is a union of per-shard unions: every part runs the *whole* union,
//! each branch against one of its sub-tables, so the server itself resolves the union's
//! column types (an INT branch beside a DECIMAL one prints `1.00`, lengths are the
//! widest, …) exactly as for the unsharded statement, and sluice only concatenates or
//! merges whole rows. The parts are "slots": slot `j` holds, for each branch, its `j`-th
//! sub-table statement, or, when the branch has fewer parts (it routes to fewer
//! sub-tables, or reads only unsharded tables and runs once), a copy with `LIMIT 0`,
//! which keeps the branch in the server's type resolution but contributes no rows.
//!
//! Exact because each row of the result comes from exactly one branch on exactly one
//! sub-table: a branch that reaches several sub-tables must therefore be row-wise (no
//! aggregates, GROUP BY, DISTINCT, ORDER BY or LIMIT of its own); one that reaches a
//! single sub-table may have any shape (it runs there as written). With `UNION`
//! (distinct) each part removes its own duplicates and the merge those across parts, over
//! rows sorted by every column. An outer ORDER BY names result columns (positions or
//! their names); the parts sort by those positions with `LIMIT 0, offset+count` and the
//! merge applies the offset: memory in proportion to the number of parts.

use sqlparser::ast::{
    Expr, LimitClause, Query, SelectItem, SetExpr, SetOperator, SetQuantifier, Statement, Value,
};

use super::literal::unsigned;
use super::plan::{Ctx, Part, Refusal, ShardPlan};
use super::select::{check_query_clauses, parse_limit, plan_select, QueryPart};
use super::shape::{direction, limit_clause, order_by_positions};
use super::spec::{Limit, MergeSpec, SortKey};
use super::text::Source;

fn refuse<T>(msg: String) -> Result<T, Refusal> {
    Err(Refusal(msg))
}

/// One branch of the union, planned.
enum Branch {
    /// Reads no sharded table: runs once, in the first part.
    Unsharded(Box<Query>),
    /// Reads a sharded table: one statement per sub-table it reaches.
    Sharded(Vec<QueryPart>),
}

/// The branches of a chain of UNIONs, left to right, and whether duplicates are removed.
fn flatten(body: SetExpr, out: &mut Vec<SetExpr>, distinct: &mut Option<bool>) -> Result<(), Refusal> {
    match body {
        SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            if op != SetOperator::Union {
                return refuse(format!(
                    "sluice: {op} of queries on a sharded table is not supported (UNION and UNION ALL are)"
                ));
            }
            let d = match set_quantifier {
                SetQuantifier::All => false,
                SetQuantifier::Distinct | SetQuantifier::None => true,
                _ => return refuse("sluice: this form of UNION on a sharded table is not supported".into()),
            };
            match distinct {
                Some(prev) if *prev != d => {
                    return refuse(
                        "sluice: a chain mixing UNION and UNION ALL on a sharded table is not supported \
                         (write all of them the same way)"
                            .into(),
                    )
                }
                _ => *distinct = Some(d),
            }
            flatten(*left, out, distinct)?;
            flatten(*right, out, distinct)
        }
        other => {
            out.push(other);
            Ok(())
        }
    }
}

/// A branch as a query of its own (a parenthesized branch keeps its ORDER BY / LIMIT).
fn branch_query(body: SetExpr, template: &Query) -> Result<Query, Refusal> {
    match body {
        SetExpr::Query(q) => match *q.body {
            SetExpr::Select(_) if q.with.is_none() => Ok(*q),
            _ => refuse(
                "sluice: a nested UNION or WITH inside a UNION on a sharded table is not supported".into(),
            ),
        },
        b @ SetExpr::Select(_) => {
            let mut q = template.clone();
            q.body = Box::new(b);
            q.order_by = None;
            q.limit_clause = None;
            q.locks = Vec::new();
            Ok(q)
        }
        _ => refuse("sluice: this UNION branch on a sharded table is not supported".into()),
    }
}

/// A branch's statement in a union: bare when it has no ORDER BY / LIMIT of its own, else
/// in parentheses.
fn as_branch(q: Query) -> SetExpr {
    if q.order_by.is_none() && q.limit_clause.is_none() && q.locks.is_empty() {
        *q.body
    } else {
        SetExpr::Query(Box::new(q))
    }
}

/// In a prepared statement, a LIMIT kept as written must still be SQL once its parameters
/// are written in (`LIMIT 2e0`, `LIMIT '3'` are not, though MariaDB takes such parameters):
/// it is written as the numbers it stands for.
fn bound_limit(q: &mut Query, table: &str, ctx: &Ctx<'_>) -> Result<(), Refusal> {
    if ctx.values.is_none() || q.limit_clause.is_none() {
        return Ok(());
    }
    if let Some((o, n)) = parse_limit(&q.limit_clause, table, ctx.values)? {
        let num = |v: u64| Expr::value(Value::Number(v.to_string(), false));
        q.limit_clause = Some(LimitClause::OffsetCommaLimit {
            offset: num(o),
            limit: num(n),
        });
    }
    Ok(())
}

/// The same branch returning no rows (its columns still count in the union's types).
fn no_rows(mut q: Query) -> SetExpr {
    q.limit_clause = Some(LimitClause::LimitOffset {
        limit: Some(Expr::value(Value::Number("0".into(), false))),
        offset: None,
        limit_by: vec![],
    });
    SetExpr::Query(Box::new(q))
}

/// The result column an outer ORDER BY term of the union names: a position, or a bare name
/// equal to exactly one result column's name (its alias, else the column it selects). The
/// server accepts nothing else there but expressions of those names, which are refused.
fn result_column(e: &Expr, first: &[SelectItem], table: &str) -> Result<usize, Refusal> {
    if let Some(n) = unsigned(e) {
        return match usize::try_from(n) {
            Ok(n) if (1..=first.len()).contains(&n) => Ok(n - 1),
            _ => refuse(format!(
                "sluice: position {n} is not in the select list (UNION on sharded table {table})"
            )),
        };
    }
    let Expr::Identifier(id) = e else {
        return refuse(format!(
            "sluice: the ORDER BY of a UNION on sharded table {table} must name result columns \
             (by position or name) across shards"
        ));
    };
    let names: Vec<Option<&str>> = first
        .iter()
        .map(|i| match i {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.as_str()),
            SelectItem::UnnamedExpr(x) => super::visitors::column_ref(x).map(|(_, c)| c),
            _ => None,
        })
        .collect();
    let mut hits = names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_some_and(|n| n.eq_ignore_ascii_case(&id.value)));
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Ok(i),
        _ => refuse(format!(
            "sluice: ORDER BY {} of a UNION on sharded table {table}: not exactly one result column \
             of that name",
            id.value
        )),
    }
}

pub(super) fn plan_union(q: Query, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    let Some(named) = ctx.query_mentions(&q) else {
        return Ok(None);
    };
    check_query_clauses(&q, &named)?;
    if !q.locks.is_empty() {
        return refuse(format!(
            "sluice: FOR UPDATE / LOCK IN SHARE MODE on a UNION with sharded table {named} is not supported"
        ));
    }
    let mut bodies = Vec::new();
    let mut distinct = None;
    flatten((*q.body).clone(), &mut bodies, &mut distinct)?;
    let distinct = distinct.unwrap_or(false);

    // A prepared statement planned with its placeholders kept is given the shards its
    // values route to as one list; that list is per table, not per branch, so here every
    // branch routes by itself (placeholders unknown: all its sub-tables, still exact).
    let own = Ctx {
        rules: ctx.rules,
        db: ctx.db,
        src: Source::new(ctx.src.text),
        tokens: ctx.tokens.clone(),
        spliceable: ctx.spliceable,
        forced_shards: None,
        values: ctx.values,
    };
    let ctx = if ctx.forced_shards.is_some() { &own } else { ctx };

    let mut branches = Vec::with_capacity(bodies.len());
    let mut first_items: Option<Vec<SelectItem>> = None;
    let mut group = None;
    for body in bodies {
        let mut bq = branch_query(body, &q)?;
        bound_limit(&mut bq, &named, ctx)?;
        if first_items.is_none() {
            if let SetExpr::Select(s) = bq.body.as_ref() {
                first_items = Some(s.projection.clone());
            }
        }
        if ctx.query_mentions(&bq).is_none() {
            branches.push(Branch::Unsharded(Box::new(bq)));
            continue;
        }
        let Some(planned) = plan_select(bq, ctx)? else {
            return refuse(format!(
                "sluice: this UNION branch reading sharded table {named} is not supported"
            ));
        };
        let m = &planned.merge;
        let row_wise = m.order_by.is_empty()
            && m.limit.is_none()
            && m.group.is_none()
            && !m.distinct
            && matches!(planned.wildcard_helpers, None | Some(0));
        if planned.parts.len() > 1 && !row_wise {
            return refuse(format!(
                "sluice: a UNION branch with aggregates, GROUP BY, DISTINCT, ORDER BY or LIMIT of its own \
                 that reads several sub-tables of sharded table {} is not supported (run it as a \
                 statement of its own)",
                planned.table
            ));
        }
        for p in &planned.parts {
            if *group.get_or_insert(p.group) != p.group {
                return refuse(format!(
                    "sluice: a UNION on sharded table {} reaching sub-tables in several backend groups \
                     is not supported",
                    planned.table
                ));
            }
        }
        branches.push(Branch::Sharded(planned.parts));
    }
    let Some(first_items) = first_items else {
        return refuse(format!(
            "sluice: a UNION on sharded table {named} whose first branch is in parentheses is not \
             supported"
        ));
    };
    let group = group.unwrap_or(0);
    let slots = branches
        .iter()
        .map(|b| match b {
            Branch::Unsharded(_) => 1,
            Branch::Sharded(p) => p.len(),
        })
        .max()
        .unwrap_or(1);

    // The outer ORDER BY / LIMIT: as written for one part, else by positions with the
    // offset applied by the merge.
    let wildcard = first_items
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
    let mut outer = q.clone();
    let merge;
    if slots == 1 {
        bound_limit(&mut outer, &named, ctx)?;
        let visible = if wildcard { 0 } else { first_items.len() };
        merge = MergeSpec::concat(visible);
    } else {
        let limit = parse_limit(&q.limit_clause, &named, ctx.values)?;
        let terms = match &q.order_by {
            Some(sqlparser::ast::OrderBy {
                kind: sqlparser::ast::OrderByKind::Expressions(v),
                ..
            }) => v.clone(),
            _ => Vec::new(),
        };
        if wildcard && (!terms.is_empty() || distinct) {
            return refuse(format!(
                "sluice: ORDER BY or UNION (distinct) over SELECT * on sharded table {named} is not \
                 supported across shards (name the columns)"
            ));
        }
        let mut sort: Vec<SortKey> = Vec::new();
        for o in &terms {
            let desc = direction(o, &named)?;
            let col = result_column(&o.expr, &first_items, &named)?;
            if !sort.iter().any(|k| k.col == col) {
                sort.push(SortKey { col, desc });
            }
        }
        if distinct {
            for c in 0..first_items.len() {
                if !sort.iter().any(|k| k.col == c) {
                    sort.push(SortKey::asc(c));
                }
            }
        }
        outer.order_by = (!sort.is_empty()).then(|| order_by_positions(&sort));
        outer.limit_clause = limit.map(|(o, n)| limit_clause(o, n));
        merge = MergeSpec {
            visible: if wildcard { 0 } else { first_items.len() },
            order_by: sort,
            limit: limit.map(|(offset, count)| Limit { offset, count }),
            group: None,
            distinct,
        };
    }

    let quantifier = if distinct {
        SetQuantifier::Distinct
    } else {
        SetQuantifier::All
    };
    let mut parts = Vec::with_capacity(slots);
    for slot in 0..slots {
        let mut shard = None;
        let mut body: Option<SetExpr> = None;
        for b in &branches {
            let next = match b {
                Branch::Unsharded(bq) if slot == 0 => as_branch((**bq).clone()),
                Branch::Unsharded(bq) => no_rows((**bq).clone()),
                Branch::Sharded(ps) => match ps.get(slot) {
                    Some(p) => {
                        shard.get_or_insert(p.shard);
                        as_branch(p.query.clone())
                    }
                    None => match ps.first() {
                        Some(p) => no_rows(p.query.clone()),
                        None => return refuse("sluice: internal error: a branch without parts".into()),
                    },
                },
            };
            body = Some(match body {
                None => next,
                Some(left) => SetExpr::SetOperation {
                    left: Box::new(left),
                    op: SetOperator::Union,
                    set_quantifier: quantifier,
                    right: Box::new(next),
                },
            });
        }
        let Some(body) = body else {
            return refuse("sluice: internal error: an empty UNION".into());
        };
        let mut part = outer.clone();
        part.body = Box::new(body);
        parts.push(Part {
            shard: shard.unwrap_or(0),
            group,
            sql: Statement::Query(Box::new(part)).to_string().into(),
            params: Vec::new(),
            prepared: false,
        });
    }
    Ok(Some(ShardPlan::Select {
        parts,
        merge,
        wildcard_helpers: wildcard.then_some(0),
    }))
}
