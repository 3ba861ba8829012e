//! Several DISTINCT aggregates of different expressions in one grouped statement: tagged
//! sub-streams in the same parts (see [`Tagged`]): each row of the sub-table joined with
//! a derived table of tags 0..n, `COUNT(DISTINCT x_j)` read from `CASE WHEN tag = j THEN
//! x_j END`, the shards grouping and sorting by (keys, tag, each CASE).

use super::*;

/// Several DISTINCT arguments: the sub-stream of one of them (see [`Tagged`]).
pub(super) struct Stream {
    pub(super) key: Vec<String>,
    /// Its column in the shard's select list (`CASE WHEN tag = j THEN x END`), once made.
    pub(super) col: Option<usize>,
}

/// The derived table and column that tag the sub-streams: each row of the sharded table
/// joined with the tags 0..n.
const TAG_TABLE: &str = "__sluice_d";
const TAG_COLUMN: &str = "__sluice_w";

pub(super) fn tag_ref() -> Expr {
    Expr::CompoundIdentifier(vec![Ident::new(TAG_TABLE), Ident::new(TAG_COLUMN)])
}

/// `CASE WHEN __sluice_d.__sluice_w = j THEN x END`: x in the rows of tag j, else NULL.
pub(super) fn tagged_x(j: usize, x: &Expr) -> Expr {
    Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition: Expr::BinaryOp {
                left: Box::new(tag_ref()),
                op: BinaryOperator::Eq,
                right: Box::new(Expr::value(Value::Number(j.to_string(), false))),
            },
            result: x.clone(),
        }],
        else_result: None,
    }
}

/// `(SELECT 0 AS __sluice_w UNION ALL SELECT 1 …) AS __sluice_d`, joined to the FROM list.
pub(super) fn tag_table(n: usize) -> Result<TableWithJoins, Refusal> {
    let internal = || Refusal("sluice: internal error: the tag table".into());
    let mut sql = format!("SELECT 1 FROM (SELECT 0 AS {TAG_COLUMN}");
    for j in 1..n {
        sql.push_str(&format!(" UNION ALL SELECT {j}"));
    }
    sql.push_str(&format!(") AS {TAG_TABLE}"));
    let mut stmts = Parser::parse_sql(&MySqlDialect {}, &sql).map_err(|_| internal())?;
    let Some(Statement::Query(q)) = stmts.pop() else {
        return Err(internal());
    };
    let SetExpr::Select(sel) = *q.body else {
        return Err(internal());
    };
    sel.from.into_iter().next().ok_or_else(internal)
}

impl Grouped<'_, '_> {
    /// The column of x, the argument of the (non-additive) DISTINCT aggregates: the shards
    /// group by the keys and x and the merge takes each x once per group. Only one such x
    /// per statement: a second one would need its own sorted stream.
    pub(super) fn distinct_col(&mut self, x: &Expr) -> Result<usize, Refusal> {
        let k = expr_key(x);
        if self.streams.is_some() {
            let j = self.stream_of(&k)?;
            if let Some(c) = self.streams.as_ref().and_then(|s| s[j].col) {
                return Ok(c);
            }
            // Never matched by a HAVING or ORDER BY term: its merged value is no x.
            let c = self.push_helper(tagged_x(j, x), Expr::value(Value::Null), Kind::CountDistinct);
            self.stream_at(j, c, x);
            return Ok(c);
        }
        match (&self.distinct_key, self.count_distinct) {
            (Some(have), Some(c)) if *have == k => Ok(c),
            (Some(_), _) => refuse(format!(
                "sluice: DISTINCT aggregates of two different expressions on sharded table {} are not \
                 supported across shards (supported: COUNT/SUM/AVG(DISTINCT x) of one x, or any number \
                 of them of the shard key {} alone)",
                self.table, self.key.rule.key
            )),
            (None, _) => {
                let c = self.push_helper(x.clone(), x.clone(), Kind::CountDistinct);
                self.count_distinct = Some(c);
                self.distinct_key = Some(k);
                Ok(c)
            }
        }
    }

    /// The tagged sub-stream of the DISTINCT argument with `expr_key` `k`.
    pub(super) fn stream_of(&self, k: &[String]) -> Result<usize, Refusal> {
        self.streams
            .as_ref()
            .and_then(|s| s.iter().position(|st| st.key == k))
            .ok_or_else(|| Refusal("sluice: internal error: a DISTINCT argument without its stream".into()))
    }

    /// Column `c` holds sub-stream `j`'s x (behind a CASE: when x is a column, the
    /// merge compares it under that column's collation, which the executor looks up).
    pub(super) fn stream_at(&mut self, j: usize, c: usize, x: &Expr) {
        if let Some(s) = self.streams.as_mut() {
            s[j].col = Some(c);
        }
        if let Some((quals, name)) = column_ref(x) {
            let ours = quals.is_empty()
                || self
                    .key
                    .qualifiers
                    .iter()
                    .any(|q| q.len() == quals.len() && q.iter().zip(&quals).all(|(a, b)| a == b));
            if ours {
                self.collation_of.push(CollationOf {
                    col: c,
                    schema: String::new(),
                    table: String::new(),
                    column: name.to_string(),
                });
            }
        }
    }
}
