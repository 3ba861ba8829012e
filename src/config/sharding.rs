//! The `sharding:` section as read from the file, resolved against the groups.

use serde::Deserialize;

use super::de;
use super::raw::SemanticError;
use super::{Group, Sharding};

/// `sharding:`: Atlas shorthand `db.table.column.N` entries and/or full rules.
#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { tables: [\"shop.orders.customer_id.4\"] }"
)]
pub(super) struct RawSharding {
    #[serde(default)]
    tables: Vec<RawAtlasTable>,
    #[serde(default)]
    rules: Vec<RawShardRule>,
    /// Largest statement on a sharded table sluice plans (bytes; see
    /// `ShardRules::max_statement_size`).
    #[serde(
        default = "default_max_statement_size",
        deserialize_with = "de::parse::<de::PacketSize, _>"
    )]
    max_statement_size: usize,
    /// Most bytes of COM_STMT_SEND_LONG_DATA held for one prepared statement on a
    /// sharded table (see `ShardRules::max_long_data_size`).
    #[serde(
        default = "default_max_long_data_size",
        deserialize_with = "de::parse::<de::PacketSize, _>"
    )]
    max_long_data_size: usize,
}

fn default_max_statement_size() -> usize {
    crate::shard::DEFAULT_MAX_STATEMENT_SIZE
}

fn default_max_long_data_size() -> usize {
    crate::shard::DEFAULT_MAX_LONG_DATA_SIZE
}

/// One Atlas shorthand entry, checked while it is read (so errors name its line).
struct RawAtlasTable(crate::shard::ShardRule);

impl<'de> Deserialize<'de> for RawAtlasTable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        crate::shard::parse_atlas(&s)
            .map(RawAtlasTable)
            .map_err(|e| serde::de::Error::custom(format!("`{s}`: {e}")))
    }
}

/// The full form of a sharded table.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { table: shop.orders, key: customer_id, shards: 4 }"
)]
struct RawShardRule {
    /// `db.table`
    table: String,
    key: String,
    shards: u32,
    #[serde(default)]
    function: RawShardFn,
    /// How string keys compare: `ci` (case-insensitive collations, default) or `bin`.
    #[serde(default)]
    key_collation: RawKeyCollation,
    /// Group name per sub-table; empty: all in the first group.
    #[serde(default)]
    placement: Vec<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawShardFn {
    #[default]
    Mod,
    Hash,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawKeyCollation {
    #[default]
    Ci,
    Bin,
}

impl RawSharding {
    pub(super) fn resolve(self, groups: &[Group]) -> Result<Sharding, SemanticError> {
        let err = |message: String| SemanticError {
            keys: &["sharding"],
            message,
        };
        let mut tables: Vec<crate::shard::ShardRule> = self.tables.into_iter().map(|t| t.0).collect();
        for r in self.rules {
            let Some((db, table)) = r.table.split_once('.') else {
                return Err(err(format!(
                    "sharding.rules: table `{}` must be written db.table",
                    r.table
                )));
            };
            let function = match r.function {
                RawShardFn::Mod => crate::shard::ShardFn::Mod,
                RawShardFn::Hash => crate::shard::ShardFn::Hash,
            };
            let mut rule = crate::shard::ShardRule::new(db, table, &r.key, r.shards, function);
            rule.collation = match r.key_collation {
                RawKeyCollation::Ci => crate::shard::KeyCollation::Ci,
                RawKeyCollation::Bin => crate::shard::KeyCollation::Bin,
            };
            if !r.placement.is_empty() {
                if r.placement.len() != r.shards as usize {
                    return Err(err(format!(
                        "sharding.rules: {}: placement names {} groups for {} shards",
                        r.table,
                        r.placement.len(),
                        r.shards
                    )));
                }
                let mut placement = Vec::with_capacity(r.placement.len());
                for name in &r.placement {
                    match groups.iter().position(|g| &g.name == name) {
                        Some(i) => placement.push(i),
                        None => {
                            return Err(err(format!(
                                "sharding.rules: {}: placement names group `{name}`, which is not configured",
                                r.table
                            )))
                        }
                    }
                }
                rule.placement = placement;
            }
            tables.push(rule);
        }
        for t in &tables {
            t.validate()
                .map_err(|e| err(format!("sharding: {}.{}: {e}", t.db, t.table)))?;
        }
        let rules = crate::shard::ShardRules::new(tables)
            .map_err(|e| err(format!("sharding: {e}")))?
            .with_max_statement_size(self.max_statement_size)
            .with_max_long_data_size(self.max_long_data_size);
        Ok(Sharding { rules })
    }
}
