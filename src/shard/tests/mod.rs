//! Unit tests of the shard planner: rules and placement, SELECT plans and merge specs,
//! writes, DDL, prepared statements, and every refusal with its sentence.

#![allow(clippy::unwrap_used)] // tests may unwrap (the crate denies it outside tests)

use crate::merge::{MergeSpec, SortKey};
use crate::shard::*;

mod ddl;
mod dump;
mod limits;
mod params;
mod refusals;
mod rules;
mod select;
mod select_merge;
mod split;
mod union;
mod write;

/// `test.post_reply.tid.4`, the seed's rule.
pub(super) fn rules() -> ShardRules {
    ShardRules::from_atlas(["test.post_reply.tid.4"]).unwrap()
}

pub(super) fn run(sql: &str) -> Result<Option<ShardPlan>, Refusal> {
    plan(sql, Some("test"), &rules())
}

/// A plan that must exist.
pub(super) fn planned(sql: &str) -> ShardPlan {
    match run(sql) {
        Ok(Some(p)) => p,
        other => panic!("{sql}: expected a plan, got {other:?}"),
    }
}

/// The per-shard SQL of a plan, as (shard, sql).
pub(super) fn sqls(p: &ShardPlan) -> Vec<(u32, String)> {
    p.parts().iter().map(|x| (x.shard, x.sql.to_string())).collect()
}

/// (shard, sql, the client's parameter of each `?`) of a prepared plan that must exist.
pub(super) fn prepared_parts(sql: &str, params: &[ParamValue], cs: &Charset) -> Vec<(u32, String, Vec<u16>)> {
    match plan_prepared(sql, params, cs, Some("test"), &rules()) {
        Ok(Some(p)) => p
            .parts()
            .iter()
            .map(|x| (x.shard, x.sql.to_string(), x.params.clone()))
            .collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

/// A select plan's parts and merge spec.
pub(super) fn select(sql: &str) -> (Vec<(u32, String)>, MergeSpec, Option<usize>) {
    match planned(sql) {
        p @ ShardPlan::Select { .. } => {
            let parts = sqls(&p);
            let ShardPlan::Select {
                merge,
                wildcard_helpers,
                ..
            } = p
            else {
                unreachable!()
            };
            (parts, merge, wildcard_helpers)
        }
        p => panic!("{sql}: expected a select plan, got {p:?}"),
    }
}

/// A write plan's parts and ddl flag.
pub(super) fn write(sql: &str) -> (Vec<(u32, String)>, bool) {
    match planned(sql) {
        ShardPlan::Write { parts, ddl, .. } => (
            parts.into_iter().map(|x| (x.shard, x.sql.to_string())).collect(),
            ddl,
        ),
        p => panic!("{sql}: expected a write plan, got {p:?}"),
    }
}

/// The refusal sentence.
pub(super) fn refused(sql: &str) -> String {
    match run(sql) {
        Err(Refusal(s)) => s,
        other => panic!("{sql}: expected a refusal, got {other:?}"),
    }
}

pub(super) fn asc(c: usize) -> SortKey {
    SortKey::asc(c)
}

pub(super) fn desc(c: usize) -> SortKey {
    SortKey::desc(c)
}
