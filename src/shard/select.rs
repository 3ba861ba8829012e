//! SELECT on a sharded table: checks, routing, the per-shard statement and the merge spec.

use sqlparser::ast::{
    Distinct, Expr, JoinOperator, LimitClause, ObjectNamePart, OrderByKind, Query, Select, SelectFlavor,
    SelectItem, SelectItemQualifiedWildcardKind, SetExpr, Statement, TableAlias, TableFactor, TableWithJoins,
    Value,
};

use super::literal::unsigned;
use super::plan::{Ctx, Part, Refusal, Resolved, ShardPlan};
use super::route::KeyCtx;
use super::shape::{has_wildcard, shape};
use super::spec::MergeSpec;
use super::visitors::{NoShardedSubquery, Requalify};
use super::walk::walk_select;
use super::ParamValue;

fn refuse<T>(msg: String) -> Result<T, Refusal> {
    Err(Refusal(msg))
}

fn refuse_if_mentioned(ctx: &Ctx<'_>, q: &Query, what: &str) -> Result<Option<ShardPlan>, Refusal> {
    match ctx.query_mentions(q) {
        Some(t) => refuse(format!(
            "sluice: {what} involving sharded table {t} is not supported"
        )),
        None => Ok(None),
    }
}

/// Where the sharded table sits in FROM.
struct Found<'a> {
    from: usize,
    /// None: the first table of `from`; Some(k): the table of join k.
    join: Option<usize>,
    res: Resolved<'a>,
}

fn select_mut(q: &mut Query) -> Result<&mut Select, Refusal> {
    match q.body.as_mut() {
        SetExpr::Select(s) => Ok(s),
        _ => refuse("sluice: internal error: not a SELECT".into()),
    }
}

fn factor_mut(s: &mut Select, from: usize, join: Option<usize>) -> Option<&mut TableFactor> {
    let twj = s.from.get_mut(from)?;
    match join {
        None => Some(&mut twj.relation),
        Some(k) => twj.joins.get_mut(k).map(|j| &mut j.relation),
    }
}

pub(super) fn plan_query(q: Query, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    if q.with.is_some() {
        return refuse_if_mentioned(ctx, &q, "WITH (a common table expression)");
    }
    match q.body.as_ref() {
        SetExpr::Select(_) => {}
        SetExpr::SetOperation { .. } => return super::union::plan_union(q, ctx),
        _ => return refuse_if_mentioned(ctx, &q, "this form of query"),
    }
    let Some(planned) = plan_select(q, ctx)? else {
        return Ok(None);
    };
    let parts = planned
        .parts
        .into_iter()
        .map(|p| Part {
            shard: p.shard,
            group: p.group,
            sql: Statement::Query(Box::new(p.query)).to_string().into(),
            params: Vec::new(),
            prepared: false,
        })
        .collect();
    Ok(Some(ShardPlan::Select {
        parts,
        merge: planned.merge,
        wildcard_helpers: planned.wildcard_helpers,
    }))
}

/// One sub-table's statement of a planned SELECT, as a tree (a UNION puts several together).
pub(super) struct QueryPart {
    pub shard: u32,
    pub group: usize,
    pub query: Query,
}

/// A SELECT planned for its sub-tables, before rendering (see [`ShardPlan::Select`]).
pub(super) struct Planned {
    pub parts: Vec<QueryPart>,
    pub merge: MergeSpec,
    pub wildcard_helpers: Option<usize>,
    /// The sharded table it reads.
    pub table: String,
}

/// Plans a query whose body is one SELECT (no WITH): `Ok(None)` when no sharded table is in
/// its FROM (sharded tables in its subqueries are refused).
pub(super) fn plan_select(mut q: Query, ctx: &Ctx<'_>) -> Result<Option<Planned>, Refusal> {
    let found = {
        let sel = select_mut(&mut q)?;
        scan_from(&sel.from, ctx)?
    };
    let Some(found) = found else {
        // No sharded table in FROM: the statement is ours only through a subquery.
        let Query { body, order_by, .. } = &mut q;
        if let SetExpr::Select(sel) = body.as_mut() {
            walk_select(sel, order_by.as_mut(), &mut NoShardedSubquery { ctx })?;
        }
        return Ok(None);
    };
    let rule = found.res.rule;
    let table = rule.table.clone();

    check_query_clauses(&q, &table)?;
    {
        let Query { body, order_by, .. } = &mut q;
        let SetExpr::Select(sel) = body.as_mut() else {
            return refuse("sluice: internal error: not a SELECT".into());
        };
        check_select_clauses(sel, &table)?;
        check_joins(sel, &found, &table)?;
        walk_select(sel, order_by.as_mut(), &mut NoShardedSubquery { ctx })?;
    }

    // How the statement names the table; `db.t.c` references become `t.c` (the sub-table
    // is aliased `t` when the client gave no alias).
    let (qualifiers, written_name) = {
        let sel = select_mut(&mut q)?;
        let Some(TableFactor::Table { name, alias, .. }) = factor_mut(sel, found.from, found.join) else {
            return refuse("sluice: internal error: table not found".into());
        };
        let written = name.0.last().and_then(ObjectNamePart::as_ident).cloned();
        match alias {
            Some(a) => (vec![vec![a.name.value.clone()]], written),
            None => (
                vec![vec![table.clone()], vec![found.res.db.clone(), table.clone()]],
                written,
            ),
        }
    };
    let Some(written_name) = written_name else {
        return refuse("sluice: internal error: table name".into());
    };
    {
        let mut rq = Requalify {
            db: &found.res.db,
            table: &table,
            sub: None,
        };
        let Query { body, order_by, .. } = &mut q;
        if let SetExpr::Select(sel) = body.as_mut() {
            walk_select(sel, order_by.as_mut(), &mut rq)?;
            for item in &mut sel.projection {
                if let SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _) = item
                {
                    rq.qualifier(n);
                }
            }
        }
    }

    let key = KeyCtx {
        rule,
        qualifiers,
        values: ctx.values,
    };
    let shards = match ctx.forced_shards {
        Some(s) => s.to_vec(),
        None => key.route(select_mut(&mut q)?.selection.as_ref()),
    };

    if shards.len() > 1 {
        refuse_distinct_ordered_by_expression(&q, &table)?;
    }
    // One shard holds every row the statement can see: it runs as the client wrote it.
    let (template, mut merge, wildcard_helpers) = if shards.len() == 1 {
        let sel = select_mut(&mut q)?;
        let wildcard = has_wildcard(sel);
        let visible = if wildcard { 0 } else { sel.projection.len() };
        (q, MergeSpec::concat(visible), wildcard.then_some(0))
    } else {
        let limit = parse_limit(&q.limit_clause, &table, ctx.values)?;
        shape(q, limit, &table, &key, ctx)?
    };

    refuse_compared_quotients(&template, &merge, &table)?;

    // Collations are looked up on the first part's sub-table (its group gives the column
    // definitions the merge reads).
    let tagged = merge.group.as_mut().and_then(|g| g.tagged.as_mut());
    if let (Some(t), Some(&first)) = (tagged, shards.first()) {
        for c in &mut t.collation_of {
            c.schema.clone_from(&found.res.db);
            c.table = rule.sub_table(first);
        }
    }
    let mut parts = Vec::with_capacity(shards.len());
    for &s in &shards {
        let mut q = template.clone();
        let sel = select_mut(&mut q)?;
        if let Some(TableFactor::Table { name, alias, .. }) = factor_mut(sel, found.from, found.join) {
            if let Some(ObjectNamePart::Identifier(last)) = name.0.last_mut() {
                last.value = rule.sub_table(s);
            }
            if alias.is_none() {
                *alias = Some(TableAlias {
                    explicit: true,
                    name: written_name.clone(),
                    columns: vec![],
                    at: None,
                });
            }
        }
        if let Some(w) = &mut sel.selection {
            key.prune(w, s);
        }
        parts.push(QueryPart {
            shard: s,
            group: rule.group_of(s),
            query: q,
        });
    }
    Ok(Some(Planned {
        parts,
        merge,
        wildcard_helpers,
        table,
    }))
}

/// A merge that orders, groups or deduplicates by a quotient (`c / 3`): the server
/// compares the value it keeps to more digits than it sends (0.000333333 and 0.000 are
/// two groups, both shown `0.000`); the parts send it rounded. Refused.
fn refuse_compared_quotients(q: &Query, merge: &MergeSpec, table: &str) -> Result<(), Refusal> {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Ok(());
    };
    fn item(i: &SelectItem) -> Option<&Expr> {
        match i {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
            _ => None,
        }
    }
    // What the merge compares, MIN/MAX's values aside (rounding keeps their order, and
    // equal roundings show the same text).
    let mut compared: Vec<usize> = merge.order_by.iter().map(|k| k.col).collect();
    if let Some(g) = &merge.group {
        compared.extend(&g.keys);
        compared.extend(g.order_after.iter().map(|k| k.col));
        compared.extend(g.aggs.iter().filter_map(|a| a.kind.distinct_arg(a.col)));
    }
    if merge.distinct {
        compared.extend(0..merge.visible);
    }
    let quotient = if has_wildcard(sel) {
        // Columns after a wildcard cannot be told apart: any quotient selected counts.
        !compared.is_empty() && sel.projection.iter().filter_map(item).any(super::group::divides)
    } else {
        compared
            .iter()
            .filter_map(|&c| sel.projection.get(c).and_then(item))
            .any(super::group::divides)
    };
    if quotient {
        return refuse(format!(
            "sluice: ordering, grouping or DISTINCT by a division (x / y) on sharded table {table} is not \
             supported across shards (the server compares the quotient with digits it does not send)"
        ));
    }
    Ok(())
}

/// A SELECT DISTINCT whose ORDER BY writes an expression again after another term
/// (`SELECT DISTINCT k, CONCAT(c, 'x') … ORDER BY k, CONCAT(c, 'x')`, `c COLLATE …`,
/// `REPLACE(c, …)`, `CONCAT(c, '')` of another character set, TEXT or VARCHAR): MariaDB
/// 10.11 then keeps one row per value of the terms before it (`SELECT DISTINCT id > 0,
/// c COLLATE latin1_bin … ORDER BY id > 0, c COLLATE latin1_bin` returns one row of
/// several distinct ones; ordered by aliases or positions, all of them), which a merge
/// does not reproduce. Which expressions do it is the server's affair (`UPPER(c)` and
/// `LEFT(c, 2)` did not): every expression after the first term is refused across
/// sub-tables.
fn refuse_distinct_ordered_by_expression(q: &Query, table: &str) -> Result<(), Refusal> {
    let distinct = matches!(q.body.as_ref(), SetExpr::Select(s) if s.distinct.is_some());
    let terms = super::shape::order_terms(&q.order_by);
    let named = |e: &Expr| {
        matches!(
            e,
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Value(_)
        )
    };
    if distinct && terms.iter().skip(1).any(|t| !named(&t.expr)) {
        return refuse(format!(
            "sluice: SELECT DISTINCT ordered by an expression after another ORDER BY term on sharded table \
             {table} is not supported across shards (MariaDB keeps one row per value of the terms before \
             such an expression; order by the column's alias or position instead)"
        ));
    }
    Ok(())
}

/// Finds the sharded table of FROM; refuses two of them, and sharded tables inside derived
/// tables, parenthesized joins or table functions.
fn scan_from<'a>(from: &[TableWithJoins], ctx: &Ctx<'a>) -> Result<Option<Found<'a>>, Refusal> {
    let mut found: Vec<Found<'a>> = Vec::new();
    for (i, twj) in from.iter().enumerate() {
        let factors = std::iter::once((None, &twj.relation))
            .chain(twj.joins.iter().enumerate().map(|(k, j)| (Some(k), &j.relation)));
        for (join, f) in factors {
            match f {
                TableFactor::Table { name, args: None, .. } => {
                    if let Some(res) = ctx.resolve(name) {
                        found.push(Found { from: i, join, res });
                    }
                }
                TableFactor::Derived { subquery, .. } => {
                    if let Some(t) = ctx.query_mentions(subquery) {
                        return refuse(format!(
                            "sluice: a sharded table inside a subquery (derived table in FROM) \
                             is not supported ({t})"
                        ));
                    }
                }
                TableFactor::NestedJoin { .. } => {
                    if let Some(t) = ctx.mentions_text(&f.to_string()) {
                        return refuse(format!(
                            "sluice: a parenthesized join involving sharded table {t} is not supported"
                        ));
                    }
                }
                other => {
                    if let Some(t) = ctx.mentions_text(&other.to_string()) {
                        return refuse(format!(
                            "sluice: this FROM item involving sharded table {t} is not supported"
                        ));
                    }
                }
            }
        }
    }
    if found.len() > 1 {
        return refuse("sluice: a JOIN of two sharded tables is not supported".into());
    }
    Ok(found.pop())
}

pub(super) fn check_query_clauses(q: &Query, table: &str) -> Result<(), Refusal> {
    if q.fetch.is_some()
        || q.for_clause.is_some()
        || q.settings.is_some()
        || q.format_clause.is_some()
        || !q.pipe_operators.is_empty()
    {
        return refuse(format!(
            "sluice: this query syntax on sharded table {table} is not supported"
        ));
    }
    if let Some(ob) = &q.order_by {
        if ob.interpolate.is_some() || matches!(ob.kind, OrderByKind::All(_)) {
            return refuse(format!(
                "sluice: this ORDER BY on sharded table {table} is not supported"
            ));
        }
    }
    Ok(())
}

fn check_select_clauses(s: &Select, table: &str) -> Result<(), Refusal> {
    if s.into.is_some() {
        return refuse(format!(
            "sluice: SELECT … INTO on sharded table {table} is not supported"
        ));
    }
    if s.select_modifiers.as_ref().is_some_and(|m| m.sql_calc_found_rows) {
        return refuse(format!(
            "sluice: SQL_CALC_FOUND_ROWS on sharded table {table} is not supported"
        ));
    }
    if matches!(s.distinct, Some(Distinct::On(_)))
        || s.top.is_some()
        || s.exclude.is_some()
        || s.prewhere.is_some()
        || !s.lateral_views.is_empty()
        || !s.connect_by.is_empty()
        || !s.cluster_by.is_empty()
        || !s.distribute_by.is_empty()
        || !s.sort_by.is_empty()
        || s.qualify.is_some()
        || s.value_table_mode.is_some()
        || s.flavor != SelectFlavor::Standard
    {
        return refuse(format!(
            "sluice: this SELECT syntax on sharded table {table} is not supported"
        ));
    }
    if s.projection
        .iter()
        .any(|i| matches!(i, SelectItem::ExprWithAliases { .. }))
    {
        return refuse(format!(
            "sluice: this SELECT syntax on sharded table {table} is not supported"
        ));
    }
    Ok(())
}

/// A join of the sharded table with other tables is answered per shard when every row of
/// the result comes from a row of the sharded table: inner and cross joins, the sharded
/// table on the kept side of LEFT/RIGHT joins. Its sub-tables must share one backend group,
/// where the other tables are expected to be.
fn check_joins(s: &Select, found: &Found<'_>, table: &str) -> Result<(), Refusal> {
    let Some(twj) = s.from.get(found.from) else {
        return Ok(());
    };
    let others = s.from.len() > 1 || !twj.joins.is_empty();
    if others && found.res.rule.spans_groups() {
        return refuse(format!(
            "sluice: a JOIN with sharded table {table} needs all its sub-tables in one backend group"
        ));
    }
    let outer = || {
        refuse(format!(
            "sluice: an outer JOIN in which sharded table {table} is the optional side is not supported"
        ))
    };
    let keeps_right = |op: &JoinOperator| {
        matches!(
            op,
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) | JoinOperator::FullOuter(_)
        )
    };
    let plain = |op: &JoinOperator| {
        matches!(
            op,
            JoinOperator::Join(_)
                | JoinOperator::Inner(_)
                | JoinOperator::CrossJoin(_)
                | JoinOperator::StraightJoin(_)
                | JoinOperator::Left(_)
                | JoinOperator::LeftOuter(_)
                | JoinOperator::Right(_)
                | JoinOperator::RightOuter(_)
                | JoinOperator::FullOuter(_)
        )
    };
    let start = match found.join {
        None => 0,
        Some(k) => {
            let op = &twj.joins[k].join_operator;
            if !plain(op) {
                return refuse(format!(
                    "sluice: this JOIN with sharded table {table} is not supported"
                ));
            }
            if matches!(
                op,
                JoinOperator::Left(_) | JoinOperator::LeftOuter(_) | JoinOperator::FullOuter(_)
            ) {
                return outer();
            }
            k + 1
        }
    };
    for j in &twj.joins[start..] {
        if !plain(&j.join_operator) {
            return refuse(format!(
                "sluice: this JOIN with sharded table {table} is not supported"
            ));
        }
        if keeps_right(&j.join_operator) {
            return outer();
        }
    }
    Ok(())
}

/// `LIMIT n`, `LIMIT o, n`, `LIMIT n OFFSET o` → (o, n).
pub(super) fn parse_limit(
    l: &Option<LimitClause>,
    table: &str,
    values: Option<&[ParamValue]>,
) -> Result<Option<(u64, u64)>, Refusal> {
    let Some(l) = l else { return Ok(None) };
    let (offset, count) = match l {
        LimitClause::OffsetCommaLimit { offset, limit } => (Some(offset), limit),
        LimitClause::LimitOffset {
            limit: Some(limit),
            offset,
            limit_by,
        } if limit_by.is_empty() => (offset.as_ref().map(|o| &o.value), limit),
        _ => {
            return refuse(format!(
                "sluice: this LIMIT on sharded table {table} is not supported"
            ))
        }
    };
    let num = |e: &Expr| -> Result<u64, Refusal> {
        if let Expr::Value(v) = e {
            if let (Value::Placeholder(tag), Some(values)) = (&v.value, values) {
                return limit_param(tag, values, table);
            }
            if matches!(v.value, Value::Placeholder(_)) {
                return refuse(format!(
                    "sluice: LIMIT with placeholders on sharded table {table} is not supported \
                     without the parameter values"
                ));
            }
        }
        if let (Some(n), _) | (None, Some(n)) = (unsigned(e), values.and_then(|_| bound_limit(e))) {
            return Ok(n);
        }
        refuse(format!("sluice: LIMIT on sharded table {table} must be a number"))
    };
    let o = match offset {
        Some(o) => num(o)?,
        None => 0,
    };
    Ok(Some((o, num(count)?)))
}

/// In a prepared statement, a LIMIT parameter written in as a literal: the string or
/// DOUBLE forms of a whole number (`'3'`, `3e0`) that MariaDB takes for `LIMIT ?`.
fn bound_limit(e: &Expr) -> Option<u64> {
    let Expr::Value(v) = e else { return None };
    match &v.value {
        Value::SingleQuotedString(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        Value::Number(s, false) => {
            let f: f64 = s.parse().ok()?;
            (f.fract() == 0.0 && (0.0..1.8e19).contains(&f)).then_some(f as u64)
        }
        _ => None,
    }
}

/// The number a `LIMIT ?` parameter stands for (placeholder `tag` is `?<index>`, see
/// `plan.rs`): MariaDB takes an integer, or a string or number holding one (`'3'`, `3.0`).
/// Anything else is refused rather than guessed.
fn limit_param(tag: &str, values: &[ParamValue], table: &str) -> Result<u64, Refusal> {
    let refuse_it = || {
        Refusal(format!(
            "sluice: a LIMIT parameter on sharded table {table} must be a non-negative whole number"
        ))
    };
    let v = tag
        .strip_prefix('?')
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| values.get(i))
        .ok_or_else(refuse_it)?;
    let digits = |b: &[u8]| -> Option<u64> {
        let s = std::str::from_utf8(b).ok()?;
        let s = s.strip_prefix('+').unwrap_or(s);
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.is_empty() || !int.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c == b'0') {
            return None;
        }
        int.parse().ok()
    };
    match v {
        ParamValue::Int(i) => u64::try_from(*i).ok(),
        ParamValue::UInt(u) => Some(*u),
        ParamValue::Float(f) if f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19 => Some(*f as u64),
        ParamValue::Bytes(b) | ParamValue::Decimal(b) => digits(b),
        _ => None,
    }
    .ok_or_else(refuse_it)
}
