//! GROUP BY and aggregates across shards.
//!
//! Each shard returns partial groups: the same select list with `AVG(x)` replaced in place
//! by `SUM(x)` (aliased with the client's column name) plus a hidden `COUNT(x)`, and
//! `COUNT(DISTINCT x)` replaced by `x` (then grouped by keys and `x`); hidden helper
//! columns for group keys, ORDER BY terms and HAVING aggregates that are not selected;
//! `GROUP BY` and `ORDER BY` written as positions of the shard's select list, so the shard
//! groups and sorts by exactly the columns the merge reads; no HAVING (applied after the
//! merge) and no LIMIT (the merge applies it).
//!
//! DISTINCT aggregates of two or more different expressions x_0, x_1, … (other than the
//! shard key alone) make tagged sub-streams in the same parts: the sub-table is joined
//! with a derived table of tags 0..n, `COUNT(DISTINCT x_j)` becomes `CASE WHEN tag = j
//! THEN x_j END`, and the shards group and sort by (keys, tag, each CASE) — see
//! [`spec::Tagged`].
//!
//! A selected column that is neither a group key nor an aggregate (MySQL without
//! `ONLY_FULL_GROUP_BY` returns any value of the group) merges as MIN: one of the group's
//! values, and the exact value when it is determined by the keys.
//!
//! Here: [`Grouped`] (the select list item by item, ORDER BY, [`Grouped::build`]);
//! `calls.rs` (which aggregate a call is), `tags.rs` (tagged sub-streams of several
//! DISTINCT arguments), `concat.rs` (GROUP_CONCAT's helpers), `having.rs` (HAVING as
//! the merge evaluates it).

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    BinaryOperator, CaseWhen, DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, GroupByExpr, Ident, ObjectName, ObjectNamePart, OrderBy, OrderByExpr, OrderByOptions,
    OrderBySort, Select, SelectItem, SetExpr, Statement, TableWithJoins, Value,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::concat::{concat_call, count_star, is_concat, max_len, sum_of, ConcatCall};
use super::literal::literal_or_param;
use super::plan::{Ctx, Refusal};
use super::route::KeyCtx;
use super::shape::{direction, find_visible, helper_expr, is_null, order_by_positions, Item};
use super::spec::{
    self, AggKind, AggSpec, CmpOp, CollationOf, Concat, ConcatItem, GroupSpec, Limit, MergeSpec, SortKey,
    Tagged,
};
use super::visitors::{column_ref, expr_key, AggScan, MisreadOperators, MERGEABLE_AGGREGATES};
use super::walk::function_name;

mod calls;
pub(crate) use calls::divides;
mod concat;
mod having;
mod tags;

use calls::{agg_call, renamed, AggCall};
use tags::{tag_ref, tag_table, tagged_x, Stream};

fn refuse<T>(msg: String) -> Result<T, Refusal> {
    Err(Refusal(msg))
}

/// `ORDER BY`/`GROUP BY` term: the position `col + 1` of the select list.
pub(super) fn order_item(col: usize, desc: bool) -> OrderByExpr {
    OrderByExpr {
        expr: position(col),
        options: OrderByOptions {
            sort: Some(if desc { OrderBySort::Desc } else { OrderBySort::Asc }),
            nulls_first: None,
        },
        with_fill: None,
    }
}

fn position(col: usize) -> Expr {
    Expr::value(Value::Number((col + 1).to_string(), false))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Key,
    Agg,
    /// Neither key nor aggregate: merged as MIN.
    Any,
    /// The hidden COUNT(x) of an AVG(x).
    AvgCount,
    CountDistinct,
    /// The tag of a row's sub-stream (several DISTINCT arguments).
    Tag,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Order,
    Having,
}

pub(super) struct Grouped<'c, 'a> {
    table: &'c str,
    ctx: &'c Ctx<'a>,
    items: Vec<Item>,
    /// The client's expression of each column (visible ones, then helpers), for matching.
    orig: Vec<Expr>,
    kinds: Vec<Kind>,
    /// The shard's select list.
    shard_items: Vec<SelectItem>,
    keys: Vec<usize>,
    aggs: Vec<AggSpec>,
    count_distinct: Option<usize>,
    /// `expr_key` of the x in `count_distinct`.
    distinct_key: Option<Vec<String>>,
    /// DISTINCT aggregates of two or more different expressions: one tagged sub-stream
    /// each, in the order the select list first names them.
    streams: Option<Vec<Stream>>,
    /// Columns that are a column of the sharded table behind a CASE (its collation).
    collation_of: Vec<CollationOf>,
    /// Recognizes the shard key column.
    key: &'c KeyCtx<'a>,
    /// No selected `COUNT(DISTINCT x)` of anything but the shard key: then each
    /// `COUNT(DISTINCT key)` runs on the shards as written and the counts add (rows with
    /// equal keys share a shard, the very property routing by key relies on), with the
    /// server's own column definition. Beside a `COUNT(DISTINCT x)` of another column the
    /// shards group by x too, where a key's count would be split over x's sub-groups.
    additive_distinct: bool,
    /// Selected GROUP_CONCATs (their columns), all with the same ORDER BY.
    concats: Vec<(usize, ConcatCall)>,
}

impl<'c, 'a> Grouped<'c, 'a> {
    pub(super) fn new(items: Vec<Item>, table: &'c str, key: &'c KeyCtx<'a>, ctx: &'c Ctx<'a>) -> Self {
        let additive_distinct = items.iter().all(|(e, _)| match agg_call(e, table) {
            Ok(Some(call)) => call.distinct_arg().is_none_or(|x| key.is_key(x)),
            _ => true,
        });
        // The different arguments of the (non-additive) DISTINCT aggregates selected.
        let mut xs: Vec<Vec<String>> = Vec::new();
        if !additive_distinct {
            for (e, _) in &items {
                if let Ok(Some(call)) = agg_call(e, table) {
                    if let Some(x) = call.distinct_arg() {
                        let k = expr_key(x);
                        if !xs.contains(&k) {
                            xs.push(k);
                        }
                    }
                }
            }
        }
        let streams = (xs.len() >= 2).then(|| {
            xs.into_iter()
                .map(|key| Stream { key, col: None })
                .collect::<Vec<_>>()
        });
        let shard_items = items
            .iter()
            .map(|(e, a)| match a {
                Some(alias) => SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: alias.clone(),
                },
                None => SelectItem::UnnamedExpr(e.clone()),
            })
            .collect();
        Grouped {
            table,
            ctx,
            orig: items.iter().map(|(e, _)| e.clone()).collect(),
            kinds: vec![Kind::Any; items.len()],
            items,
            shard_items,
            keys: Vec::new(),
            aggs: Vec::new(),
            count_distinct: None,
            distinct_key: None,
            streams,
            collation_of: Vec::new(),
            key,
            additive_distinct,
            concats: Vec::new(),
        }
    }

    /// `COUNT(DISTINCT x)` that merges as a sum of the shards' counts (see
    /// [`Self::additive_distinct`]).
    fn additive(&self, x: &Expr) -> bool {
        self.additive_distinct && self.key.is_key(x)
    }

    /// Keep the client's spelling of the aggregate call `e` as its column name (the server
    /// names `count( * )` as written, not re-rendered), unless it has an alias.
    fn keep_call_name(&mut self, i: usize, e: &Expr, alias: &Option<Ident>) {
        if let (None, Expr::Function(f)) = (alias, e) {
            self.shard_items[i] = SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias: self.column_name(f),
            };
        }
    }

    /// The shards compute the SUM of an AVG, under the AVG's column name.
    fn sum_for_avg(&mut self, i: usize, f: &Function, alias: Option<Ident>) {
        let alias = alias.unwrap_or_else(|| self.column_name(f));
        self.shard_items[i] = SelectItem::ExprWithAlias {
            expr: renamed(f, "SUM"),
            alias,
        };
    }

    /// Column `i` is the aggregate `kind`, merged across shards.
    fn merged(&mut self, i: usize, kind: AggKind) {
        self.aggs.push(AggSpec { col: i, kind });
        self.kinds[i] = Kind::Agg;
    }

    fn push_helper(&mut self, shard_expr: Expr, orig: Expr, kind: Kind) -> usize {
        self.shard_items.push(SelectItem::UnnamedExpr(shard_expr));
        self.orig.push(orig);
        self.kinds.push(kind);
        self.orig.len() - 1
    }

    /// The client's column name of a selected aggregate call: its text as written (what
    /// the server would name the column), else its rendering.
    fn column_name(&self, f: &Function) -> Ident {
        let text = self
            .source_text(f)
            .unwrap_or_else(|| Expr::Function(f.clone()).to_string());
        Ident::with_quote('`', text.replace('`', "``"))
    }

    fn source_text(&self, f: &Function) -> Option<String> {
        if !self.ctx.spliceable {
            return None;
        }
        let first = f.name.0.first()?.as_ident()?;
        let start = first.span.start;
        let tokens = &self.ctx.tokens;
        let i = tokens.iter().position(|t| t.span.start == start)?;
        let mut depth = 0usize;
        let mut end = None;
        for t in &tokens[i..] {
            match t.token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        end = Some(t.span.end);
                        break;
                    }
                }
                _ => {}
            }
        }
        let src = &self.ctx.src;
        let text = src.text.get(src.offset(start)?..src.offset(end?)?)?;
        let head = text.get(..first.value.len())?;
        (head.eq_ignore_ascii_case(&first.value) && text.ends_with(')')).then(|| text.to_string())
    }

    /// Adds the hidden columns of an aggregate call, returning its column.
    fn add_aggregate(&mut self, call: AggCall, e: &Expr, purpose: &str) -> Result<usize, Refusal> {
        if !self.concats.is_empty() && call.distinct_arg().is_some() {
            return refuse(format!(
                "sluice: GROUP_CONCAT beside COUNT/SUM/AVG(DISTINCT …) on sharded table {} is not \
                 supported across shards",
                self.table
            ));
        }
        Ok(match call {
            AggCall::SumDistinct(x) if self.additive(&x) => {
                let c = self.push_helper(e.clone(), e.clone(), Kind::Agg);
                self.aggs.push(AggSpec {
                    col: c,
                    kind: AggKind::Sum,
                });
                c
            }
            AggCall::AvgDistinct(f, x) if self.additive(&x) => {
                let s = self.push_helper(renamed(&f, "SUM"), e.clone(), Kind::Agg);
                let n = self.push_helper(renamed(&f, "COUNT"), renamed(&f, "COUNT"), Kind::AvgCount);
                self.aggs.push(AggSpec {
                    col: s,
                    kind: AggKind::Avg { count_col: n },
                });
                s
            }
            AggCall::SumDistinct(_) | AggCall::AvgDistinct(..) => {
                return refuse(format!(
                    "sluice: SUM/AVG(DISTINCT …) in {purpose} must be a selected one (sharded table {})",
                    self.table
                ))
            }
            AggCall::Simple(kind) => {
                let c = self.push_helper(e.clone(), e.clone(), Kind::Agg);
                self.aggs.push(AggSpec { col: c, kind });
                c
            }
            AggCall::Avg(f) => {
                let s = self.push_helper(renamed(&f, "SUM"), e.clone(), Kind::Agg);
                let n = self.push_helper(renamed(&f, "COUNT"), renamed(&f, "COUNT"), Kind::AvgCount);
                self.aggs.push(AggSpec {
                    col: s,
                    kind: AggKind::Avg { count_col: n },
                });
                s
            }
            AggCall::CountDistinct(x) if self.additive(&x) => {
                let c = self.push_helper(e.clone(), e.clone(), Kind::Agg);
                self.aggs.push(AggSpec {
                    col: c,
                    kind: AggKind::Count,
                });
                c
            }
            AggCall::CountDistinct(_) => {
                return refuse(format!(
                    "sluice: COUNT(DISTINCT …) in {purpose} must be the selected one (sharded table {})",
                    self.table
                ))
            }
        })
    }

    /// The column an ORDER BY or HAVING term denotes, adding hidden columns as needed.
    fn operand(&mut self, e: &Expr, purpose: Purpose) -> Result<usize, Refusal> {
        let table = self.table;
        let what = match purpose {
            Purpose::Order => "ORDER BY",
            Purpose::Having => "HAVING",
        };
        let key = expr_key(e);
        if let Some(call) = agg_call(e, table)? {
            if let Some(c) = self.orig.iter().position(|x| expr_key(x) == key) {
                return Ok(c);
            }
            return self.add_aggregate(call, e, what);
        }
        if let Some(c) = find_visible(e, &self.items, purpose == Purpose::Order, table)? {
            return Ok(c);
        }
        if let Some(c) = self.orig.iter().position(|x| expr_key(x) == key) {
            return Ok(c);
        }
        if is_concat(e) {
            return refuse(format!(
                "sluice: GROUP_CONCAT in {what} on sharded table {table} must be a selected one"
            ));
        }
        if AggScan::of(e)?.any_aggregate() {
            return refuse(format!(
                "sluice: an aggregate inside an expression (like SUM(x)+1) on sharded table {table} \
                 is not supported across shards"
            ));
        }
        match purpose {
            Purpose::Order => {
                let shard_expr = helper_expr(e, &self.items, table)?;
                let c = self.push_helper(shard_expr, e.clone(), Kind::Any);
                self.aggs.push(AggSpec {
                    col: c,
                    kind: AggKind::Min,
                });
                Ok(c)
            }
            Purpose::Having => refuse(format!(
                "sluice: HAVING on sharded table {table} may only use selected columns, group keys, \
                 aggregates and literals"
            )),
        }
    }

    /// Rewrites `sel` into the shard's statement and returns the merge spec and the
    /// shard's ORDER BY.
    pub(super) fn build(
        mut self,
        sel: &mut Select,
        order: &[OrderByExpr],
        group_exprs: Vec<Expr>,
        limit: Option<(u64, u64)>,
    ) -> Result<(MergeSpec, Option<OrderBy>), Refusal> {
        let table = self.table;
        let visible = self.items.len();

        // Group keys.
        for g in &group_exprs {
            if AggScan::of(g)?.any_aggregate() {
                return refuse(format!("sluice: GROUP BY an aggregate on sharded table {table}"));
            }
            let col = match find_visible(g, &self.items, true, table)? {
                Some(c) => {
                    if AggScan::of(&self.items[c].0)?.any_aggregate() {
                        return refuse(format!("sluice: GROUP BY an aggregate on sharded table {table}"));
                    }
                    c
                }
                None => {
                    let shard_expr = helper_expr(g, &self.items, table)?;
                    self.push_helper(shard_expr, g.clone(), Kind::Key)
                }
            };
            if !self.keys.contains(&col) {
                self.keys.push(col);
                self.kinds[col] = Kind::Key;
            }
        }

        // Selected columns; a COUNT(DISTINCT x) that is not additive first, so that its
        // column (x itself) is the x of SUM/AVG(DISTINCT x) beside it.
        let general_count = |g: &Self, e: &Expr| -> Result<bool, Refusal> {
            Ok(matches!(agg_call(e, table)?, Some(AggCall::CountDistinct(x)) if !g.additive(&x)))
        };
        let mut visit: Vec<usize> = Vec::with_capacity(visible);
        for i in 0..visible {
            if general_count(&self, &self.items[i].0)? {
                visit.push(i);
            }
        }
        for i in 0..visible {
            if !visit.contains(&i) {
                visit.push(i);
            }
        }
        for i in visit {
            if self.kinds[i] == Kind::Key {
                continue;
            }
            let (e, alias) = self.items[i].clone();
            if let Some(call) = concat_call(&e, &self.items, table)? {
                self.concat_at(i, &e, &alias, call)?;
                continue;
            }
            match agg_call(&e, table)? {
                Some(AggCall::SumDistinct(x)) if self.additive(&x) => {
                    self.keep_call_name(i, &e, &alias);
                    self.merged(i, AggKind::Sum);
                }
                Some(AggCall::AvgDistinct(f, x)) if self.additive(&x) => {
                    self.sum_for_avg(i, &f, alias);
                    let n = self.push_helper(renamed(&f, "COUNT"), renamed(&f, "COUNT"), Kind::AvgCount);
                    self.merged(i, AggKind::Avg { count_col: n });
                }
                Some(AggCall::SumDistinct(x)) => {
                    // The sub-group's SUM(DISTINCT x) is x, typed by the server as the SUM.
                    self.keep_call_name(i, &e, &alias);
                    let x_col = self.distinct_col(&x)?;
                    self.merged(i, AggKind::SumDistinct { x_col });
                }
                Some(AggCall::AvgDistinct(f, x)) => {
                    self.sum_for_avg(i, &f, alias);
                    let x_col = self.distinct_col(&x)?;
                    // Never matched by a HAVING or ORDER BY term (NULL literals are read
                    // as literals there): its merged value counts x once per shard.
                    let n = self.push_helper(renamed(&f, "COUNT"), Expr::value(Value::Null), Kind::AvgCount);
                    self.merged(i, AggKind::AvgDistinct { count_col: n, x_col });
                }
                Some(AggCall::CountDistinct(x)) if self.additive(&x) => {
                    self.keep_call_name(i, &e, &alias);
                    self.merged(i, AggKind::Count);
                }
                Some(AggCall::Simple(kind)) => {
                    self.keep_call_name(i, &e, &alias);
                    self.merged(i, kind);
                }
                Some(AggCall::Avg(f)) => {
                    self.sum_for_avg(i, &f, alias);
                    let n = self.push_helper(renamed(&f, "COUNT"), renamed(&f, "COUNT"), Kind::AvgCount);
                    self.merged(i, AggKind::Avg { count_col: n });
                }
                Some(AggCall::CountDistinct(x)) if self.streams.is_some() => {
                    let j = self.stream_of(&expr_key(&x))?;
                    if self.streams.as_ref().is_some_and(|s| s[j].col.is_some()) {
                        return refuse(format!(
                            "sluice: the same COUNT(DISTINCT {x}) twice on sharded table {table} is not \
                             supported across shards (select it once)"
                        ));
                    }
                    let alias = match alias {
                        Some(a) => a,
                        None => match &e {
                            Expr::Function(f) => self.column_name(f),
                            _ => Ident::with_quote('`', e.to_string().replace('`', "``")),
                        },
                    };
                    self.shard_items[i] = SelectItem::ExprWithAlias {
                        expr: tagged_x(j, &x),
                        alias,
                    };
                    self.stream_at(j, i, &x);
                    self.aggs.push(AggSpec {
                        col: i,
                        kind: AggKind::CountDistinct,
                    });
                    self.kinds[i] = Kind::CountDistinct;
                }
                Some(AggCall::CountDistinct(x)) => {
                    if self.count_distinct.is_some() {
                        return refuse(format!(
                            "sluice: the same COUNT(DISTINCT {x}) twice on sharded table {table} is not \
                             supported across shards (select it once)"
                        ));
                    }
                    self.distinct_key = Some(expr_key(&x));
                    let alias = match alias {
                        Some(a) => a,
                        None => match &e {
                            Expr::Function(f) => self.column_name(f),
                            _ => Ident::with_quote('`', e.to_string().replace('`', "``")),
                        },
                    };
                    self.shard_items[i] = SelectItem::ExprWithAlias { expr: x, alias };
                    self.count_distinct = Some(i);
                    self.aggs.push(AggSpec {
                        col: i,
                        kind: AggKind::CountDistinct,
                    });
                    self.kinds[i] = Kind::CountDistinct;
                }
                None => {
                    if AggScan::of(&e)?.any_aggregate() {
                        return refuse(format!(
                            "sluice: an aggregate inside an expression (like SUM(x)+1) on sharded \
                             table {table} is not supported across shards"
                        ));
                    }
                    self.aggs.push(AggSpec {
                        col: i,
                        kind: AggKind::Min,
                    });
                    self.kinds[i] = Kind::Any;
                }
            }
        }

        // Without GROUP BY but grouped by a DISTINCT argument, the shards answer no row over
        // no rows, and the merge gives the aggregates of nothing with the other columns
        // NULL: exact for column references only (a constant would have its value).
        if self.keys.is_empty()
            && (self.count_distinct.is_some() || self.streams.is_some() || !self.concats.is_empty())
        {
            let odd =
                (0..visible).find(|&i| self.kinds[i] == Kind::Any && column_ref(&self.items[i].0).is_none());
            if let Some(i) = odd {
                return refuse(format!(
                    "sluice: the expression {} beside COUNT/SUM/AVG(DISTINCT …) or GROUP_CONCAT without \
                     GROUP BY on sharded table {table} is not supported across shards (select columns or \
                     aggregates)",
                    self.items[i].0
                ));
            }
        }

        // ORDER BY, then HAVING (both may add hidden columns).
        let mut client_sort: Vec<SortKey> = Vec::new();
        for o in order {
            let desc = direction(o, table)?;
            if is_null(&o.expr) {
                continue;
            }
            let col = self.operand(&o.expr, Purpose::Order)?;
            if !client_sort.iter().any(|k| k.col == col) {
                client_sort.push(SortKey { col, desc });
            }
        }
        let having = match sel.having.take() {
            Some(h) if MisreadOperators::in_expr(&h) => {
                return refuse(format!(
                    "sluice: HAVING with || or XOR on sharded table {table} is not supported across shards"
                ))
            }
            Some(h) => Some(self.having(&h)?),
            None => None,
        };

        // COUNT(DISTINCT x) beside other aggregates: the shards group by (keys, x), so
        // every other aggregate arrives as partials of the (keys, x) sub-groups, which
        // combine like partials of shards (counts and sums add, MIN/MAX of MIN/MAX, AVG
        // from its SUM and COUNT); x itself is counted once per run of equal values in
        // the merged stream sorted by (keys, x).
        // The shards' order: the client's when it only uses group keys, else the keys.
        let keys_only = !client_sort.is_empty() && client_sort.iter().all(|k| self.kinds[k.col] == Kind::Key);
        let (mut shard_sort, order_after) = if keys_only {
            let mut s = client_sort.clone();
            for &k in &self.keys {
                if !s.iter().any(|x| x.col == k) {
                    s.push(SortKey::asc(k));
                }
            }
            (s, Vec::new())
        } else {
            let s: Vec<SortKey> = self.keys.iter().map(|&k| SortKey::asc(k)).collect();
            let after = if self.keys.is_empty() {
                Vec::new()
            } else {
                client_sort
            };
            (s, after)
        };
        let mut group_cols = self.keys.clone();
        if let Some(c) = self.count_distinct {
            shard_sort.push(SortKey::asc(c));
            group_cols.push(c);
        }
        // Several DISTINCT arguments: each row of the table joined with each tag, grouped
        // and sorted by (keys, tag, each stream's x), so that in a group the rows of tag j
        // come together sorted by x_j (the other streams' x being NULL there).
        let tagged = match self.streams.take() {
            None => None,
            Some(streams) => {
                let mut x_cols = Vec::with_capacity(streams.len());
                for s in &streams {
                    x_cols.push(s.col.ok_or_else(|| {
                        Refusal("sluice: internal error: a DISTINCT stream without its column".into())
                    })?);
                }
                let tag_col = self.push_helper(tag_ref(), Expr::value(Value::Null), Kind::Tag);
                for &c in std::iter::once(&tag_col).chain(&x_cols) {
                    shard_sort.push(SortKey::asc(c));
                    group_cols.push(c);
                }
                sel.from.push(tag_table(x_cols.len())?);
                Some(Box::new(Tagged {
                    tag_col,
                    x_cols,
                    collation_of: std::mem::take(&mut self.collation_of),
                }))
            }
        };

        let (concat, bytes) = self.concat_streams(&mut shard_sort, &mut group_cols);
        sel.projection = self.shard_items;
        let mut group_by: Vec<Expr> = group_cols.iter().map(|&c| position(c)).collect();
        group_by.extend(bytes);
        sel.group_by = GroupByExpr::Expressions(group_by, vec![]);
        let merge = MergeSpec {
            visible,
            order_by: shard_sort.clone(),
            limit: limit.map(|(offset, count)| Limit { offset, count }),
            group: Some(GroupSpec {
                keys: self.keys,
                aggs: self.aggs,
                having,
                order_after,
                tagged,
                concat,
            }),
            distinct: false,
        };
        let shard_order = (!shard_sort.is_empty()).then(|| order_by_positions(&shard_sort));
        Ok((merge, shard_order))
    }
}
