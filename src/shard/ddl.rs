//! DDL on a logical sharded table: the same statement for every sub-table.
//!
//! The per-shard text is the client's text with the one table-name token replaced (located
//! by the parser, and checked to hold exactly that name before it is replaced), not the
//! rendering of the AST: sqlparser 0.64 renders some DDL differently from what it parsed
//! (`CREATE INDEX i USING BTREE ON t (a)` comes back as `… ON t USING BTREE (a)`, which
//! MariaDB rejects), and column definitions, table options and comments must reach the
//! server exactly as written.

use sqlparser::ast::{
    AlterTableOperation, CreateTableLikeKind, ObjectName, ObjectType, RenameTableNameKind, Statement,
};

use super::plan::{Ctx, Part, Refusal, ShardPlan};
use super::rule::ShardRule;

fn refuse<T>(msg: String) -> Result<T, Refusal> {
    Err(Refusal(msg))
}

pub(super) fn plan_ddl(stmt: &Statement, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    let sharded = |n: &ObjectName| ctx.resolve(n).map(|r| r.rule);
    match stmt {
        Statement::CreateTable(ct) => {
            let like = match &ct.like {
                Some(CreateTableLikeKind::Parenthesized(l) | CreateTableLikeKind::Plain(l)) => Some(&l.name),
                None => None,
            };
            if let Some(src) = like
                .and_then(sharded)
                .or_else(|| ct.clone.as_ref().and_then(sharded))
            {
                return refuse(format!(
                    "sluice: CREATE TABLE … LIKE sharded table {} is not supported",
                    src.table
                ));
            }
            let Some(rule) = sharded(&ct.name) else {
                if let Some(t) = ct.query.as_ref().and_then(|q| ctx.query_mentions(q)) {
                    return refuse(format!(
                        "sluice: CREATE TABLE … SELECT from sharded table {t} is not supported"
                    ));
                }
                return Ok(None);
            };
            if ct.temporary {
                return refuse(format!(
                    "sluice: CREATE TEMPORARY TABLE of sharded table {} is not supported",
                    rule.table
                ));
            }
            if ct.query.is_some() {
                return refuse(format!(
                    "sluice: CREATE TABLE … SELECT for sharded table {} is not supported",
                    rule.table
                ));
            }
            broadcast(ctx, rule, &ct.name)
        }
        Statement::AlterTable(at) => {
            let Some(rule) = sharded(&at.name) else {
                for op in &at.operations {
                    if let AlterTableOperation::RenameTable {
                        table_name: RenameTableNameKind::As(n) | RenameTableNameKind::To(n),
                    } = op
                    {
                        if let Some(r) = sharded(n) {
                            return refuse(format!(
                                "sluice: renaming a table to sharded table {} is not supported",
                                r.table
                            ));
                        }
                    }
                }
                return Ok(None);
            };
            let key = rule.key.as_str();
            for op in &at.operations {
                let touches_key = match op {
                    AlterTableOperation::RenameTable { .. } => {
                        return refuse(format!(
                            "sluice: RENAME of sharded table {} is not supported",
                            rule.table
                        ))
                    }
                    AlterTableOperation::DropColumn { column_names, .. } => {
                        column_names.iter().any(|c| c.value.eq_ignore_ascii_case(key))
                    }
                    AlterTableOperation::RenameColumn {
                        old_column_name,
                        new_column_name,
                    } => {
                        old_column_name.value.eq_ignore_ascii_case(key)
                            && !new_column_name.value.eq_ignore_ascii_case(key)
                    }
                    AlterTableOperation::ChangeColumn {
                        old_name, new_name, ..
                    } => {
                        old_name.value.eq_ignore_ascii_case(key) && !new_name.value.eq_ignore_ascii_case(key)
                    }
                    _ => false,
                };
                if touches_key {
                    return refuse(format!(
                        "sluice: dropping or renaming the shard key column {key} of sharded table {} \
                         is not supported",
                        rule.table
                    ));
                }
            }
            broadcast(ctx, rule, &at.name)
        }
        Statement::Drop {
            object_type: ObjectType::Table,
            names,
            temporary,
            ..
        } => {
            let Some(rule) = names.iter().find_map(sharded) else {
                return Ok(None);
            };
            if names.len() > 1 {
                return refuse(format!(
                    "sluice: DROP TABLE naming sharded table {} together with other tables is not supported",
                    rule.table
                ));
            }
            if *temporary {
                return refuse(format!(
                    "sluice: DROP TEMPORARY TABLE of sharded table {} is not supported",
                    rule.table
                ));
            }
            broadcast(ctx, rule, &names[0])
        }
        Statement::Drop {
            object_type: ObjectType::Index,
            table: Some(t),
            ..
        } => match sharded(t) {
            Some(rule) => broadcast(ctx, rule, t),
            None => Ok(None),
        },
        Statement::Drop { .. } => Ok(None),
        Statement::Truncate(tr) => {
            let Some(rule) = tr.table_names.iter().find_map(|t| sharded(&t.name)) else {
                return Ok(None);
            };
            if tr.table_names.len() > 1 {
                return refuse(format!(
                    "sluice: TRUNCATE naming sharded table {} together with other tables is not supported",
                    rule.table
                ));
            }
            broadcast(ctx, rule, &tr.table_names[0].name)
        }
        Statement::CreateIndex(ci) => match sharded(&ci.table_name) {
            Some(rule) => broadcast(ctx, rule, &ci.table_name),
            None => Ok(None),
        },
        Statement::RenameTable(renames) => {
            match renames
                .iter()
                .find_map(|r| sharded(&r.old_name).or_else(|| sharded(&r.new_name)))
            {
                Some(rule) => refuse(format!(
                    "sluice: RENAME TABLE of sharded table {} is not supported",
                    rule.table
                )),
                None => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// The statement once per sub-table, the table name token replaced by the sub-table's.
fn broadcast(ctx: &Ctx<'_>, rule: &ShardRule, name: &ObjectName) -> Result<Option<ShardPlan>, Refusal> {
    let cannot = || {
        Refusal(format!(
            "sluice: cannot rewrite this statement for the sub-tables of sharded table {}",
            rule.table
        ))
    };
    if !ctx.spliceable {
        return Err(cannot());
    }
    let ident = name.0.last().and_then(|p| p.as_ident()).ok_or_else(cannot)?;
    let (a, b) = ctx
        .src
        .offset(ident.span.start)
        .zip(ctx.src.offset(ident.span.end))
        .ok_or_else(cannot)?;
    let quote = |v: &str| match ident.quote_style {
        Some(q) => format!("{q}{v}{q}"),
        None => v.to_string(),
    };
    if ctx.src.text.get(a..b) != Some(quote(&ident.value).as_str()) {
        return Err(cannot());
    }
    let parts = (0..rule.shards)
        .map(|s| Part {
            shard: s,
            group: rule.group_of(s),
            sql: format!(
                "{}{}{}",
                &ctx.src.text[..a],
                quote(&rule.sub_table(s)),
                &ctx.src.text[b..]
            )
            .into(),
            params: Vec::new(),
            prepared: false,
        })
        .collect();
    Ok(Some(ShardPlan::Write {
        parts,
        ddl: true,
        insert_id_from: None,
    }))
}
