//! The collation of table columns a sharded merge compares strings under (result
//! metadata carries the connection's collation, not the column's), as read from the
//! server, cached with the rule set's other learned definitions: emptied after DDL through
//! sluice (`ShardRules::forget_columns`) and trusted [`COLLATION_TTL`] at most for DDL
//! sent to the server directly. A collation kept across `ALTER TABLE … MODIFY c … COLLATE`
//! (or a table dropped and created again) ordered the rows under the old one.

use std::future::Future;
use std::time::Duration;

use super::rule::ShardRules;

/// How long a column's collation is trusted (DDL outside sluice), as descriptions are.
pub const COLLATION_TTL: Duration = super::describe::DESCRIPTION_TTL;

/// The collation id of each column asked (`None`: not a string column), by `(group,
/// schema, table, column)`.
pub(crate) type CollationCache = super::learned::Learned<(usize, String, String, String), Option<u16>>;

impl ShardRules {
    /// The collation id of `schema.table.column` on group `group`: cached, or read by
    /// `read` (the server's answer, `None` when it gave none; answers are cached, failures
    /// not). `None` when unknown or not a string column.
    pub async fn column_collation(
        &self,
        group: usize,
        (schema, table, column): (&str, &str, &str),
        read: impl Future<Output = Option<Option<u16>>>,
    ) -> Option<u16> {
        let key = (group, schema.to_owned(), table.to_owned(), column.to_owned());
        if let Some(id) = self.collations.get(&key, COLLATION_TTL) {
            return id;
        }
        let found = read.await?;
        self.collations.learn(key, found);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ShardRules {
        ShardRules::new(vec![crate::shard::parse_atlas("test.t.k.2").expect("rule")]).expect("rules")
    }

    #[tokio::test]
    async fn answers_are_cached_until_ddl_and_failures_never() {
        let r = rules();
        let col = ("test", "t_0", "c");
        assert_eq!(r.column_collation(0, col, async { None }).await, None);
        assert_eq!(
            r.column_collation(0, col, async { Some(Some(46)) }).await,
            Some(46)
        );
        assert_eq!(
            r.column_collation(0, col, async { Some(Some(45)) }).await,
            Some(46)
        );
        // Another group's table of that name is another table.
        assert_eq!(r.column_collation(1, col, async { Some(Some(8)) }).await, Some(8));
        r.forget_columns();
        assert_eq!(
            r.column_collation(0, col, async { Some(Some(45)) }).await,
            Some(45)
        );
    }
}
