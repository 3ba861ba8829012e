//! GROUP_CONCAT in a grouped statement: the shard's sub-group columns and the hidden
//! helpers (`COUNT(*)`, the summed length, the separator, `@@group_concat_max_len`) the
//! merge needs to append the partials in order and cut them as the server does.

use super::*;

impl Grouped<'_, '_> {
    /// Column `i` is a GROUP_CONCAT: the shards compute it per sub-group, under its
    /// column name; every GROUP_CONCAT must share the first one's ORDER BY.
    pub(super) fn concat_at(
        &mut self,
        i: usize,
        e: &Expr,
        alias: &Option<Ident>,
        call: ConcatCall,
    ) -> Result<(), Refusal> {
        let table = self.table;
        if self.count_distinct.is_some() || self.streams.is_some() || !self.additive_distinct {
            return refuse(format!(
                "sluice: GROUP_CONCAT beside COUNT/SUM/AVG(DISTINCT …) on sharded table {table} is not \
                 supported across shards"
            ));
        }
        let distinct_beside = self
            .items
            .iter()
            .any(|(x, _)| matches!(agg_call(x, table), Ok(Some(c)) if c.distinct_arg().is_some()));
        if distinct_beside {
            return refuse(format!(
                "sluice: GROUP_CONCAT beside COUNT/SUM/AVG(DISTINCT …) on sharded table {table} is not \
                 supported across shards"
            ));
        }
        if let Some((_, first)) = self.concats.first() {
            if first.order_key() != call.order_key() {
                return refuse(format!(
                    "sluice: GROUP_CONCATs with different ORDER BY on sharded table {table} are not \
                     supported across shards (each needs its own order)"
                ));
            }
        }
        let alias = match alias {
            Some(a) => a.clone(),
            None => match e {
                Expr::Function(f) => self.column_name(f),
                _ => Ident::with_quote('`', e.to_string().replace('`', "``")),
            },
        };
        self.shard_items[i] = SelectItem::ExprWithAlias {
            expr: call.shard.clone(),
            alias,
        };
        self.kinds[i] = Kind::Agg;
        self.concats.push((i, call));
        Ok(())
    }

    /// GROUP_CONCATs: the sub-group's order keys sorted after the group's, its helper
    /// columns (values' length, separator, row count, `group_concat_max_len`), and the
    /// value bytes each sub-group holds (GROUP BY terms the shards need not return).
    pub(super) fn concat_streams(
        &mut self,
        sort: &mut Vec<SortKey>,
        group_cols: &mut Vec<usize>,
    ) -> (Option<Box<Concat>>, Vec<Expr>) {
        let concats = std::mem::take(&mut self.concats);
        let Some((_, first)) = concats.first() else {
            return (None, Vec::new());
        };
        let never = || Expr::value(Value::Null);
        let order: Vec<(Expr, bool)> = first.order.clone();
        let mut order_cols = Vec::with_capacity(order.len());
        for (x, desc) in order {
            let c = self.push_helper(x, never(), Kind::Any);
            sort.push(SortKey { col: c, desc });
            group_cols.push(c);
            order_cols.push(c);
        }
        let rows_col = self.push_helper(count_star(), never(), Kind::Any);
        let max_len_col = self.push_helper(max_len(), never(), Kind::Any);
        let mut items = Vec::with_capacity(concats.len());
        let mut bytes = Vec::with_capacity(concats.len());
        for (col, call) in concats {
            let len_col = self.push_helper(sum_of(call.length.clone()), never(), Kind::Any);
            let sep_col = self.push_helper(call.separator.clone(), never(), Kind::Any);
            items.push(ConcatItem {
                col,
                len_col,
                sep_col,
                distinct_col: call.distinct.then(|| order_cols[0]),
            });
            bytes.push(call.bytes);
        }
        (
            Some(Box::new(Concat {
                rows_col,
                max_len_col,
                items,
            })),
            bytes,
        )
    }
}
