//! INSERT / REPLACE / UPDATE / DELETE on a sharded table.
//!
//! INSERT and REPLACE need the key's position (from the column list, or without one from
//! the table's column order, `columns.rs`) and a literal key in every row; the rows are
//! split by shard, each part getting only its rows in their original order.
//! UPDATE and DELETE route on their WHERE like SELECT, or go to every shard. Qualified
//! column names `t.c` / `db.t.c` follow the table to its sub-table name. Writes never move a
//! row between sub-tables: assigning the key column is refused.

use std::collections::BTreeMap;

use sqlparser::ast::{
    Assignment, AssignmentTarget, Delete, Expr, FromTable, Ident, Insert, ObjectName, ObjectNamePart,
    OnInsert, SetExpr, Statement, TableFactor, TableObject, TableWithJoins, Update,
};

use super::literal::literal_or_param;
use super::plan::{Ctx, Part, Refusal, Resolved, ShardPlan};
use super::route::KeyCtx;
use super::visitors::{NoShardedSubquery, Requalify};
use super::walk::{idents, walk};

fn refuse<T>(msg: String) -> Result<T, Refusal> {
    Err(Refusal(msg))
}

fn no_sharded_subquery(exprs: &mut [&mut Expr], ctx: &Ctx<'_>) -> Result<(), Refusal> {
    let mut v = NoShardedSubquery { ctx };
    for e in exprs.iter_mut() {
        walk(e, &mut v)?;
    }
    Ok(())
}

fn assignment_exprs(a: &mut [Assignment]) -> Vec<&mut Expr> {
    a.iter_mut().map(|x| &mut x.value).collect()
}

fn names_key(name: &ObjectName, key: &str) -> bool {
    idents(name)
        .and_then(|ids| ids.last().map(|i| i.value.eq_ignore_ascii_case(key)))
        .unwrap_or(false)
}

fn assigns_key(a: &[Assignment], key: &str) -> bool {
    a.iter().any(|x| match &x.target {
        AssignmentTarget::ColumnName(n) => names_key(n, key),
        AssignmentTarget::Tuple(ns) => ns.iter().any(|n| names_key(n, key)),
    })
}

fn key_change(key: &str) -> Refusal {
    Refusal(format!(
        "sluice: changing the shard key column {key} would move the row to another sub-table; \
         delete and insert it instead"
    ))
}

fn rename(name: &mut ObjectName, sub: String) {
    if let Some(ObjectNamePart::Identifier(last)) = name.0.last_mut() {
        last.value = sub;
    }
}

fn requalify_assignments(rq: &mut Requalify<'_>, a: &mut [Assignment]) -> Result<(), Refusal> {
    for x in a {
        match &mut x.target {
            AssignmentTarget::ColumnName(n) => rq.object_name(n),
            AssignmentTarget::Tuple(ns) => ns.iter_mut().for_each(|n| rq.object_name(n)),
        }
        walk(&mut x.value, rq)?;
    }
    Ok(())
}

pub(super) fn plan_insert(mut ins: Insert, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    let TableObject::TableName(target) = &ins.table else {
        return match ctx.mentions_text(&Statement::Insert(ins).to_string()) {
            Some(t) => refuse(format!(
                "sluice: this INSERT involving sharded table {t} is not supported"
            )),
            None => Ok(None),
        };
    };
    let Some(Resolved { rule, db }) = ctx.resolve(target) else {
        // Not into a sharded table: it must not read one either.
        if let Some(src) = &ins.source {
            if let Some(t) = ctx.query_mentions(src) {
                return refuse(format!(
                    "sluice: INSERT … SELECT from sharded table {t} is not supported"
                ));
            }
        }
        if let Some(OnInsert::DuplicateKeyUpdate(a)) = &mut ins.on {
            no_sharded_subquery(&mut assignment_exprs(a), ctx)?;
        }
        no_sharded_subquery(&mut assignment_exprs(&mut ins.assignments), ctx)?;
        return Ok(None);
    };
    let table = rule.table.clone();
    let key = rule.key.as_str();
    if ins.returning.is_some()
        || ins.output.is_some()
        || ins.or.is_some()
        || ins.table_alias.is_some()
        || ins.partitioned.is_some()
        || !ins.after_columns.is_empty()
        || ins.overwrite
        || ins.has_table_keyword
        || ins.settings.is_some()
        || ins.format_clause.is_some()
        || ins.multi_table_insert_type.is_some()
    {
        return refuse(format!(
            "sluice: this INSERT syntax on sharded table {table} is not supported"
        ));
    }
    match &mut ins.on {
        None => {}
        Some(OnInsert::DuplicateKeyUpdate(a)) => {
            if assigns_key(a, key) {
                return Err(key_change(key));
            }
            no_sharded_subquery(&mut assignment_exprs(a), ctx)?;
        }
        Some(_) => {
            return refuse(format!(
                "sluice: this INSERT syntax on sharded table {table} is not supported"
            ))
        }
    }

    let key_of = |e: &Expr| -> Result<u32, Refusal> {
        let Some(lit) = literal_or_param(e, ctx.values) else {
            return refuse(format!(
                "sluice: the shard key {key} of a row inserted into sharded table {table} must be a \
                 literal value (not an expression, DEFAULT or a placeholder without its value)"
            ));
        };
        rule.shard_for_insert(&lit.key_value())
            .map_err(|m| Refusal(format!("sluice: {m}")))
    };

    // Rows per shard, in statement order.
    let mut per_shard: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let rows_len;
    match &mut ins.source {
        None => {
            // INSERT … SET col = value, …
            let Some(a) = ins.assignments.iter().find(|a| match &a.target {
                AssignmentTarget::ColumnName(n) => names_key(n, key),
                AssignmentTarget::Tuple(_) => false,
            }) else {
                return refuse(format!(
                    "sluice: an INSERT into sharded table {table} must set the shard key column {key}"
                ));
            };
            per_shard.entry(key_of(&a.value)?).or_default().push(0);
            rows_len = 1;
            no_sharded_subquery(&mut assignment_exprs(&mut ins.assignments), ctx)?;
        }
        Some(src) => {
            let plain = src.with.is_none()
                && src.order_by.is_none()
                && src.limit_clause.is_none()
                && src.fetch.is_none()
                && src.locks.is_empty();
            let SetExpr::Values(values) = src.body.as_mut() else {
                return refuse(format!(
                    "sluice: INSERT … SELECT into sharded table {table} is not supported"
                ));
            };
            if !plain {
                return refuse(format!(
                    "sluice: this INSERT syntax on sharded table {table} is not supported"
                ));
            }
            if ins.columns.is_empty() {
                // The table's own column order (learned by the session, see
                // `columns.rs`), written out in every part.
                if values.rows.iter().any(|r| r.content.is_empty()) {
                    return refuse(format!(
                        "sluice: an INSERT into sharded table {table} must give the shard key column \
                         {key} (a row of defaults has none)"
                    ));
                }
                let Some(cols) = ctx.rules.column_order(&rule.db, &rule.table) else {
                    return refuse(format!(
                        "{} {table} needs the table's column order, which sluice could not read; \
                         name the columns",
                        super::columns::WANTS_COLUMNS
                    ));
                };
                ins.columns = cols
                    .iter()
                    .map(|c| ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote('`', c))]))
                    .collect();
            }
            let Some(k) = ins.columns.iter().position(|c| names_key(c, key)) else {
                return refuse(format!(
                    "sluice: an INSERT into sharded table {table} must give the shard key column {key}"
                ));
            };
            // A row whose length is not the column list's: the server's own error (1136,
            // "Column count doesn't match value count at row N"), which it gives before
            // writing any row, from the whole statement on one sub-table.
            let mismatch = values.rows.iter().any(|r| r.content.len() != ins.columns.len());
            for (i, row) in values.rows.iter_mut().enumerate() {
                let shard = if mismatch { 0 } else { key_of(&row.content[k])? };
                per_shard.entry(shard).or_default().push(i);
                no_sharded_subquery(&mut row.content.iter_mut().collect::<Vec<_>>(), ctx)?;
            }
            rows_len = values.rows.len();
        }
    }
    if rows_len == 0 {
        return refuse(format!(
            "sluice: an INSERT into sharded table {table} without rows"
        ));
    }

    // The sub-table of the statement's last row.
    let per_last = per_shard
        .iter()
        .filter_map(|(s, rows)| rows.last().map(|&i| (*s, i)))
        .max_by_key(|&(_, i)| i);
    let mut parts = Vec::with_capacity(per_shard.len());
    for (shard, rows) in per_shard {
        let mut one = ins.clone();
        let sub = rule.sub_table(shard);
        let mut rq = Requalify {
            db: &db,
            table: &table,
            sub: Some(&sub),
        };
        for c in &mut one.columns {
            rq.object_name(c);
        }
        if let Some(OnInsert::DuplicateKeyUpdate(a)) = &mut one.on {
            requalify_assignments(&mut rq, a)?;
        }
        requalify_assignments(&mut rq, &mut one.assignments)?;
        if let Some(src) = &mut one.source {
            if let SetExpr::Values(values) = src.body.as_mut() {
                let all = std::mem::take(&mut values.rows);
                values.rows = all
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| rows.contains(i))
                    .map(|(_, r)| r)
                    .collect();
                for r in &mut values.rows {
                    for e in &mut r.content {
                        walk(e, &mut rq)?;
                    }
                }
            }
        }
        if let TableObject::TableName(n) = &mut one.table {
            rename(n, sub.clone());
        }
        parts.push(Part {
            shard,
            group: rule.group_of(shard),
            sql: Statement::Insert(one).to_string().into(),
            params: Vec::new(),
            prepared: false,
        });
    }
    let insert_id_from = per_last.map(|(s, _)| s);
    Ok(Some(ShardPlan::Write {
        parts,
        ddl: false,
        insert_id_from,
    }))
}

/// The single target table of an UPDATE/DELETE, if it is a plain table.
fn single_target(twj: &TableWithJoins) -> Option<(&ObjectName, bool)> {
    match &twj.relation {
        TableFactor::Table {
            name,
            args: None,
            alias,
            ..
        } if twj.joins.is_empty() => Some((name, alias.is_some())),
        _ => None,
    }
}

/// Any sharded table among these FROM items (first level).
fn any_sharded(twjs: &[TableWithJoins], ctx: &Ctx<'_>) -> Option<String> {
    twjs.iter().find_map(|twj| {
        std::iter::once(&twj.relation)
            .chain(twj.joins.iter().map(|j| &j.relation))
            .find_map(|f| match f {
                TableFactor::Table { name, .. } => ctx.resolve(name).map(|r| r.rule.table.clone()),
                other => ctx.mentions_text(&other.to_string()),
            })
    })
}

/// Qualifiers naming the target: its alias, or its name with and without database.
fn qualifiers(table: &str, db: &str, alias: Option<&str>) -> Vec<Vec<String>> {
    match alias {
        Some(a) => vec![vec![a.to_string()]],
        None => vec![vec![table.to_string()], vec![db.to_string(), table.to_string()]],
    }
}

fn alias_of(twj: &TableWithJoins) -> Option<String> {
    match &twj.relation {
        TableFactor::Table { alias: Some(a), .. } => Some(a.name.value.clone()),
        _ => None,
    }
}

/// sqlparser 0.64 reads `UPDATE IGNORE t` / `UPDATE LOW_PRIORITY t` as table `IGNORE`
/// aliased `t`, and `DELETE IGNORE FROM t` as a multi-table DELETE of table `IGNORE`.
fn misread_modifier(name: &ObjectName) -> bool {
    matches!(idents(name).as_deref(), Some([i]) if i.quote_style.is_none()
        && ["IGNORE", "LOW_PRIORITY", "QUICK"].contains(&i.value.to_ascii_uppercase().as_str()))
}

pub(super) fn plan_update(mut u: Update, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    if let TableFactor::Table {
        name, alias: Some(a), ..
    } = &u.table.relation
    {
        if misread_modifier(name) {
            if let Some(r) = ctx.resolve(&ObjectName(vec![ObjectNamePart::Identifier(a.name.clone())])) {
                return refuse(format!(
                    "sluice: UPDATE LOW_PRIORITY or IGNORE on sharded table {} is not supported",
                    r.rule.table
                ));
            }
        }
    }
    let target = single_target(&u.table).and_then(|(n, _)| ctx.resolve(n));
    let Some(Resolved { rule, db }) = target else {
        let mut all = vec![u.table.clone()];
        if let Some(
            sqlparser::ast::UpdateTableFromKind::BeforeSet(f)
            | sqlparser::ast::UpdateTableFromKind::AfterSet(f),
        ) = &u.from
        {
            all.extend(f.iter().cloned());
        }
        if let Some(t) = any_sharded(&all, ctx) {
            return refuse(format!(
                "sluice: a multi-table UPDATE involving sharded table {t} is not supported"
            ));
        }
        let mut exprs = assignment_exprs(&mut u.assignments);
        exprs.extend(u.selection.as_mut());
        no_sharded_subquery(&mut exprs, ctx)?;
        return Ok(None);
    };
    let table = rule.table.clone();
    let key = rule.key.as_str();
    if u.from.is_some() {
        return refuse(format!(
            "sluice: a multi-table UPDATE involving sharded table {table} is not supported"
        ));
    }
    if u.returning.is_some()
        || u.output.is_some()
        || u.or.is_some()
        || u.on_cluster.is_some()
        || u.settings.is_some()
    {
        return refuse(format!(
            "sluice: this UPDATE syntax on sharded table {table} is not supported"
        ));
    }
    if assigns_key(&u.assignments, key) {
        return Err(key_change(key));
    }
    {
        let mut exprs = assignment_exprs(&mut u.assignments);
        exprs.extend(u.selection.as_mut());
        exprs.extend(u.order_by.iter_mut().map(|o| &mut o.expr));
        exprs.extend(u.limit.as_mut());
        no_sharded_subquery(&mut exprs, ctx)?;
    }
    let alias = alias_of(&u.table);
    let kc = KeyCtx {
        rule,
        qualifiers: qualifiers(&table, &db, alias.as_deref()),
        values: ctx.values,
    };
    let shards = kc.route(u.selection.as_ref());
    if shards.len() > 1 && (!u.order_by.is_empty() || u.limit.is_some()) {
        return refuse(format!(
            "sluice: UPDATE with ORDER BY or LIMIT on several shards of sharded table {table} is not supported"
        ));
    }
    let mut parts = Vec::with_capacity(shards.len());
    for s in shards {
        let mut one = u.clone();
        let sub = rule.sub_table(s);
        if alias.is_none() {
            let mut rq = Requalify {
                db: &db,
                table: &table,
                sub: Some(&sub),
            };
            requalify_assignments(&mut rq, &mut one.assignments)?;
            for e in one
                .selection
                .iter_mut()
                .chain(one.order_by.iter_mut().map(|o| &mut o.expr))
            {
                walk(e, &mut rq)?;
            }
        }
        if let Some(w) = &mut one.selection {
            kc.prune(w, s);
        }
        if let TableFactor::Table { name, .. } = &mut one.table.relation {
            rename(name, sub);
        }
        parts.push(Part {
            shard: s,
            group: rule.group_of(s),
            sql: Statement::Update(one).to_string().into(),
            params: Vec::new(),
            prepared: false,
        });
    }
    Ok(Some(ShardPlan::Write {
        parts,
        ddl: false,
        insert_id_from: None,
    }))
}

pub(super) fn plan_delete(mut d: Delete, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    let from = match &d.from {
        FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v.clone(),
    };
    let single = d.tables.is_empty() && d.using.is_none() && from.len() == 1;
    let target = if single {
        single_target(&from[0]).and_then(|(n, _)| ctx.resolve(n))
    } else {
        None
    };
    let Some(Resolved { rule, db }) = target else {
        let mut all = from.clone();
        all.extend(d.using.iter().flatten().cloned());
        let named = d
            .tables
            .iter()
            .find_map(|n| ctx.resolve(n).map(|r| r.rule.table.clone()));
        if !d.tables.is_empty() && d.tables.iter().all(misread_modifier) {
            if let Some(t) = any_sharded(&all, ctx) {
                return refuse(format!(
                    "sluice: DELETE LOW_PRIORITY, QUICK or IGNORE on sharded table {t} is not supported"
                ));
            }
        }
        if let Some(t) = named.or_else(|| any_sharded(&all, ctx)) {
            return refuse(format!(
                "sluice: a multi-table DELETE involving sharded table {t} is not supported"
            ));
        }
        no_sharded_subquery(&mut d.selection.iter_mut().collect::<Vec<_>>(), ctx)?;
        return Ok(None);
    };
    let table = rule.table.clone();
    if d.returning.is_some() || d.output.is_some() || d.on_cluster.is_some() || d.settings.is_some() {
        return refuse(format!(
            "sluice: this DELETE syntax on sharded table {table} is not supported"
        ));
    }
    {
        let mut exprs: Vec<&mut Expr> = d.selection.iter_mut().collect();
        exprs.extend(d.order_by.iter_mut().map(|o| &mut o.expr));
        exprs.extend(d.limit.as_mut());
        no_sharded_subquery(&mut exprs, ctx)?;
    }
    let alias = alias_of(&from[0]);
    let kc = KeyCtx {
        rule,
        qualifiers: qualifiers(&table, &db, alias.as_deref()),
        values: ctx.values,
    };
    let shards = kc.route(d.selection.as_ref());
    if shards.len() > 1 && (!d.order_by.is_empty() || d.limit.is_some()) {
        return refuse(format!(
            "sluice: DELETE with ORDER BY or LIMIT on several shards of sharded table {table} is not supported"
        ));
    }
    let mut parts = Vec::with_capacity(shards.len());
    for s in shards {
        let mut one = d.clone();
        let sub = rule.sub_table(s);
        if alias.is_none() {
            let mut rq = Requalify {
                db: &db,
                table: &table,
                sub: Some(&sub),
            };
            for e in one
                .selection
                .iter_mut()
                .chain(one.order_by.iter_mut().map(|o| &mut o.expr))
            {
                walk(e, &mut rq)?;
            }
        }
        if let Some(w) = &mut one.selection {
            kc.prune(w, s);
        }
        let (FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v)) = &mut one.from;
        if let Some(TableFactor::Table { name, .. }) = v.get_mut(0).map(|t| &mut t.relation) {
            rename(name, sub);
        }
        parts.push(Part {
            shard: s,
            group: rule.group_of(s),
            sql: Statement::Delete(one).to_string().into(),
            params: Vec::new(),
            prepared: false,
        });
    }
    Ok(Some(ShardPlan::Write {
        parts,
        ddl: false,
        insert_id_from: None,
    }))
}
