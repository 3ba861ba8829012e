//! The multi-shard shape of a SELECT without grouping (plain rows, DISTINCT) and the
//! helpers shared with grouping: resolving ORDER BY / GROUP BY terms to select-list
//! columns, hidden helper columns, positions.

use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, Ident, LimitClause, OrderBy, OrderByKind, Query, Select, SelectItem,
    SetExpr, Value,
};

use super::group::{order_item, Grouped};
use super::literal::unsigned;
use super::plan::{Ctx, Refusal};
use super::route::KeyCtx;
use super::spec::{Limit, MergeSpec, SortKey};
use super::visitors::{column_ref, expr_key, AggScan, BareNames, NonDeterministic};
use super::walk::walk;

fn refuse<T>(msg: String) -> Result<T, Refusal> {
    Err(Refusal(msg))
}

fn select_mut(q: &mut Query) -> Result<&mut Select, Refusal> {
    match q.body.as_mut() {
        SetExpr::Select(s) => Ok(s),
        _ => refuse("sluice: internal error: not a SELECT".into()),
    }
}

pub(super) fn has_wildcard(s: &Select) -> bool {
    s.projection
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)))
}

pub(super) fn limit_clause(o: u64, n: u64) -> LimitClause {
    LimitClause::OffsetCommaLimit {
        offset: Expr::value(Value::Number("0".into(), false)),
        limit: Expr::value(Value::Number(o.saturating_add(n).to_string(), false)),
    }
}

/// A select-list item: expression and alias (None for wildcards).
pub(super) type Item = (Expr, Option<Ident>);

pub(super) fn items(s: &Select) -> Vec<Option<Item>> {
    s.projection
        .iter()
        .map(|i| match i {
            SelectItem::UnnamedExpr(e) => Some((e.clone(), None)),
            SelectItem::ExprWithAlias { expr, alias } => Some((expr.clone(), Some(alias.clone()))),
            _ => None,
        })
        .collect()
}

/// The visible column an ORDER BY / GROUP BY / HAVING term denotes: a position (when
/// `positions`), a select alias (an unqualified name matching an alias, as MySQL resolves
/// ORDER BY), the same column, or the same expression. `Err` for a position out of range.
pub(super) fn find_visible(
    e: &Expr,
    items: &[Item],
    positions: bool,
    table: &str,
) -> Result<Option<usize>, Refusal> {
    if positions {
        if let Some(n) = unsigned(e) {
            return match usize::try_from(n) {
                Ok(n) if (1..=items.len()).contains(&n) => Ok(Some(n - 1)),
                _ => refuse(format!(
                    "sluice: position {n} is not in the select list (sharded table {table})"
                )),
            };
        }
    }
    if let Expr::Identifier(id) = e {
        if let Some(i) = items.iter().position(|(_, a)| {
            a.as_ref()
                .is_some_and(|a| a.value.eq_ignore_ascii_case(&id.value))
        }) {
            return Ok(Some(i));
        }
    }
    if let Some((quals, col)) = column_ref(e) {
        let hit = items.iter().position(|(x, _)| {
            column_ref(x).is_some_and(|(q2, c2)| {
                c2.eq_ignore_ascii_case(col) && (quals.is_empty() || q2.is_empty() || quals == q2)
            })
        });
        if hit.is_some() {
            return Ok(hit);
        }
    }
    let k = expr_key(e);
    Ok(items.iter().position(|(x, _)| expr_key(x) == k))
}

/// ASC/DESC of an ORDER BY term (MySQL has no NULLS FIRST/LAST or USING).
pub(super) fn direction(o: &sqlparser::ast::OrderByExpr, table: &str) -> Result<bool, Refusal> {
    use sqlparser::ast::OrderBySort;
    if o.options.nulls_first.is_some() || o.with_fill.is_some() {
        return refuse(format!(
            "sluice: this ORDER BY on sharded table {table} is not supported"
        ));
    }
    match &o.options.sort {
        None | Some(OrderBySort::Asc) => Ok(false),
        Some(OrderBySort::Desc) => Ok(true),
        Some(OrderBySort::Using(_)) => refuse(format!(
            "sluice: this ORDER BY on sharded table {table} is not supported"
        )),
    }
}

pub(super) fn is_null(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::Null))
}

pub(super) fn order_terms(ob: &Option<OrderBy>) -> Vec<sqlparser::ast::OrderByExpr> {
    match ob {
        Some(OrderBy {
            kind: OrderByKind::Expressions(v),
            ..
        }) => v.clone(),
        _ => Vec::new(),
    }
}

/// Rewrites the template for a multi-shard answer and builds the merge spec.
pub(super) fn shape(
    mut q: Query,
    limit: Option<(u64, u64)>,
    table: &str,
    key: &KeyCtx<'_>,
    ctx: &Ctx<'_>,
) -> Result<(Query, MergeSpec, Option<usize>), Refusal> {
    let order = order_terms(&q.order_by);
    let sel = select_mut(&mut q)?;

    // Window functions and aggregates anywhere that matters.
    let mut scan = AggScan::default();
    {
        let mut exprs: Vec<Expr> = sel
            .projection
            .iter()
            .filter_map(|i| match i {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e.clone()),
                _ => None,
            })
            .collect();
        exprs.extend(sel.having.clone());
        exprs.extend(order.iter().map(|o| o.expr.clone()));
        for e in &mut exprs {
            walk(e, &mut scan)?;
        }
    }
    if scan.window || !sel.named_window.is_empty() {
        return refuse(format!(
            "sluice: window functions on sharded table {table} are not supported across shards"
        ));
    }
    if let Some(name) = scan.other.first() {
        return refuse(format!(
            "sluice: {name} on sharded table {table} is not supported across shards"
        ));
    }
    let group_exprs = match &sel.group_by {
        GroupByExpr::Expressions(v, mods) if mods.is_empty() => v.clone(),
        GroupByExpr::Expressions(..) => {
            return refuse(format!(
                "sluice: GROUP BY … WITH ROLLUP on sharded table {table} is not supported across shards"
            ))
        }
        GroupByExpr::All(_) => {
            return refuse(format!(
                "sluice: GROUP BY ALL on sharded table {table} is not supported"
            ))
        }
    };
    let grouped = !group_exprs.is_empty() || scan.mergeable > 0 || scan.concat > 0;
    let distinct = matches!(sel.distinct, Some(Distinct::Distinct));
    let wildcard = has_wildcard(sel);
    let list = items(sel);

    if grouped {
        if wildcard {
            return refuse(format!(
                "sluice: SELECT * with GROUP BY or aggregates on sharded table {table} is not supported"
            ));
        }
        if distinct {
            return refuse(format!(
                "sluice: DISTINCT together with GROUP BY or aggregates on sharded table {table} \
                 is not supported across shards"
            ));
        }
        let list: Vec<Item> = list.into_iter().flatten().collect();
        let (merge, shard_order) =
            Grouped::new(list, table, key, ctx).build(sel, &order, group_exprs, limit)?;
        q.order_by = shard_order;
        q.limit_clause = None;
        return Ok((q, merge, None));
    }

    let mut sort = Vec::new();
    if distinct {
        if wildcard {
            return refuse(format!(
                "sluice: SELECT DISTINCT * on sharded table {table} is not supported (name the columns)"
            ));
        }
        let list: Vec<Item> = list.into_iter().flatten().collect();
        let mut seen = vec![false; list.len()];
        for o in &order {
            let desc = direction(o, table)?;
            if is_null(&o.expr) {
                continue;
            }
            let Some(c) = find_visible(&o.expr, &list, true, table)? else {
                return refuse(format!(
                    "sluice: with DISTINCT, ORDER BY must name selected columns (sharded table {table})"
                ));
            };
            if !seen[c] {
                seen[c] = true;
                sort.push(SortKey { col: c, desc });
            }
        }
        for (c, s) in seen.iter().enumerate() {
            if !s {
                sort.push(SortKey::asc(c));
            }
        }
        q.order_by = Some(order_by_positions(&sort));
        if let Some((o, n)) = limit {
            q.limit_clause = Some(limit_clause(o, n));
        }
        let merge = MergeSpec {
            visible: list.len(),
            order_by: sort,
            limit: limit.map(|(offset, count)| Limit { offset, count }),
            group: None,
            distinct: true,
        };
        return Ok((q, merge, None));
    }

    // Plain rows: ORDER BY terms are selected columns or hidden helper columns.
    let base = if wildcard { 0 } else { list.len() };
    let named: Vec<Item> = list.iter().flatten().cloned().collect();
    let mut helpers: Vec<Expr> = Vec::new();
    for o in &order {
        let desc = direction(o, table)?;
        if is_null(&o.expr) {
            continue;
        }
        let col = if wildcard {
            if unsigned(&o.expr).is_some() {
                return refuse(format!(
                    "sluice: ORDER BY a position with SELECT * on sharded table {table} is not supported"
                ));
            }
            if NonDeterministic::in_expr(&o.expr) {
                return refuse(format!(
                    "sluice: ORDER BY a random value with SELECT * on sharded table {table} is not \
                     supported (name the columns)"
                ));
            }
            None
        } else {
            find_visible(&o.expr, &named, true, table)?
        };
        let col = match col {
            Some(c) => c,
            None => {
                // With a wildcard, a term naming a listed item sorts by that item's expression.
                let e = match find_visible(&o.expr, &named, false, table)? {
                    Some(i) if wildcard => named[i].0.clone(),
                    _ => helper_expr(&o.expr, &named, table)?,
                };
                helpers.push(e);
                base + helpers.len() - 1
            }
        };
        // A later term on the same column cannot change the order.
        if !sort.iter().any(|k: &SortKey| k.col == col) {
            sort.push(SortKey { col, desc });
        }
    }
    let sel = select_mut(&mut q)?;
    sel.projection
        .extend(helpers.iter().cloned().map(SelectItem::UnnamedExpr));
    // Without a wildcard the shards sort by the very columns the merge compares (positions);
    // with one, positions are unknown and the client's ORDER BY is kept (its terms are
    // deterministic, so the helper columns hold the values sorted by).
    if !wildcard && !sort.is_empty() {
        q.order_by = Some(order_by_positions(&sort));
    }
    if let Some((o, n)) = limit {
        q.limit_clause = Some(limit_clause(o, n));
    }
    let merge = MergeSpec {
        visible: base,
        order_by: sort,
        limit: limit.map(|(offset, count)| Limit { offset, count }),
        group: None,
        distinct: false,
    };
    Ok((q, merge, wildcard.then_some(helpers.len())))
}

/// The expression of a hidden helper column for an ORDER BY term: a bare select alias is
/// replaced by its expression (in the select list an alias is not visible); other uses of
/// an alias inside an expression are refused.
pub(super) fn helper_expr(e: &Expr, items: &[Item], table: &str) -> Result<Expr, Refusal> {
    if let Expr::Identifier(id) = e {
        if let Some((x, _)) = items.iter().find(|(_, a)| {
            a.as_ref()
                .is_some_and(|a| a.value.eq_ignore_ascii_case(&id.value))
        }) {
            return Ok(x.clone());
        }
    }
    let mut names = BareNames::default();
    walk(&mut e.clone(), &mut names)?;
    let aliases: Vec<&Ident> = items.iter().filter_map(|(_, a)| a.as_ref()).collect();
    if names
        .0
        .iter()
        .any(|n| aliases.iter().any(|a| a.value.eq_ignore_ascii_case(n)))
    {
        return refuse(format!(
            "sluice: ORDER BY an expression using a select alias on sharded table {table} is not supported"
        ));
    }
    Ok(e.clone())
}

/// `ORDER BY 1, 3 DESC` for the given columns.
pub(super) fn order_by_positions(keys: &[SortKey]) -> OrderBy {
    OrderBy {
        kind: OrderByKind::Expressions(keys.iter().map(|k| order_item(k.col, k.desc)).collect()),
        interpolate: None,
    }
}
