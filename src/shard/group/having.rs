//! HAVING across shards: the condition is applied by the merge after the groups are
//! combined, over selected columns, group keys, aggregates (hidden helper columns when
//! not selected) and literals; anything else is refused.

use super::*;

impl Grouped<'_, '_> {
    pub(super) fn having(&mut self, e: &Expr) -> Result<spec::Expr, Refusal> {
        use sqlparser::ast::{BinaryOperator as B, InTarget, UnaryOperator};
        let cmp = |op: &B| match op {
            B::Eq => Some(CmpOp::Eq),
            B::NotEq => Some(CmpOp::Ne),
            B::Lt => Some(CmpOp::Lt),
            B::LtEq => Some(CmpOp::Le),
            B::Gt => Some(CmpOp::Gt),
            B::GtEq => Some(CmpOp::Ge),
            _ => None,
        };
        Ok(match e {
            Expr::Nested(x) => self.having(x)?,
            Expr::BinaryOp {
                left,
                op: B::And,
                right,
            } => spec::Expr::and(self.having(left)?, self.having(right)?),
            Expr::BinaryOp {
                left,
                op: B::Or,
                right,
            } => spec::Expr::or(self.having(left)?, self.having(right)?),
            Expr::BinaryOp { left, op, right } if cmp(op).is_some() => {
                let op = cmp(op).unwrap_or(CmpOp::Eq);
                spec::Expr::cmp(self.having_operand(left)?, op, self.having_operand(right)?)
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => spec::Expr::not(self.having(expr)?),
            Expr::IsNull(x) => spec::Expr::is_null(self.having_operand(x)?),
            Expr::IsNotNull(x) => spec::Expr::not(spec::Expr::is_null(self.having_operand(x)?)),
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.having_operand(expr)?;
                let b = spec::Expr::and(
                    spec::Expr::cmp(x.clone(), CmpOp::Ge, self.having_operand(low)?),
                    spec::Expr::cmp(x, CmpOp::Le, self.having_operand(high)?),
                );
                if *negated {
                    spec::Expr::not(b)
                } else {
                    b
                }
            }
            Expr::In {
                expr,
                target: InTarget::List(list),
                negated,
                ..
            } if !list.is_empty() => {
                let x = self.having_operand(expr)?;
                let mut terms = Vec::with_capacity(list.len());
                for item in list {
                    terms.push(spec::Expr::cmp(x.clone(), CmpOp::Eq, self.having_operand(item)?));
                }
                // A balanced OR tree: evaluating and dropping it recurses log2(n) deep, not n.
                while terms.len() > 1 {
                    let mut next = Vec::with_capacity(terms.len().div_ceil(2));
                    let mut it = terms.into_iter();
                    while let Some(a) = it.next() {
                        next.push(match it.next() {
                            Some(b) => spec::Expr::or(a, b),
                            None => a,
                        });
                    }
                    terms = next;
                }
                let Some(any) = terms.pop() else {
                    return refuse("sluice: empty IN list".into());
                };
                if *negated {
                    spec::Expr::not(any)
                } else {
                    any
                }
            }
            _ => {
                return refuse(format!(
                    "sluice: the HAVING condition {e} on sharded table {} is not supported across shards",
                    self.table
                ))
            }
        })
    }

    pub(super) fn having_operand(&mut self, e: &Expr) -> Result<spec::Expr, Refusal> {
        // `"c"` is a string, or the column c under ANSI_QUOTES: the session's sql_mode
        // decides, which the merge does not read.
        if let Expr::Value(v) = e {
            if matches!(v.value, sqlparser::ast::Value::DoubleQuotedString(_)) {
                return refuse(format!(
                    "sluice: a double-quoted string in HAVING on sharded table {} is not supported across \
                     shards (under ANSI_QUOTES it names a column); write it with single quotes",
                    self.table
                ));
            }
        }
        if let Some(l) = literal_or_param(e, self.ctx.values) {
            return Ok(spec::Expr::Lit(l.to_spec()));
        }
        Ok(spec::Expr::Col(self.operand(e, Purpose::Having)?))
    }
}
