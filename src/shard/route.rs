//! Routing a WHERE clause to shards, and pruning IN lists per shard.
//!
//! Only the top of the condition is read: AND / OR / parentheses over `key = literal`,
//! `literal = key`, `key <=> literal` and `key IN (literals)`. A conjunct restricts the
//! shards (intersection), a disjunction unites them; anything else (NOT, functions,
//! subqueries, a literal whose shard is unknown) allows every shard. Contradictions such
//! as `key = 1 AND key = 2` (with 1 and 2 on different shards) leave no shard: the caller
//! then still asks one shard (shard 0), whose answer is then empty (or the aggregate of
//! nothing), with the right columns.
//!
//! A condition holding `||` or `XOR` is not routed (see [`MisreadOperators`]).
//!
//! Pruning: each shard gets the same condition with every routing IN list cut down to the
//! values of that shard, in their order, duplicates kept (`IN (5, 5)` is `IN (5)` for the
//! server). A list left empty becomes `false`. This is exact because equality under the
//! server's comparison implies the same shard (see [`super::rule`]), and because these
//! lists sit under AND/OR only, where the row passes exactly when the whole condition is
//! TRUE.

use std::collections::BTreeSet;

use sqlparser::ast::{BinaryOperator, Expr, InTarget, Value};

use super::literal::{literal_or_param, Lit};
use super::rule::{ShardFn, ShardRule};
use super::visitors::{column_ref, MisreadOperators};
use super::ParamValue;

/// How the statement names the sharded table, to recognize its key column.
pub(crate) struct KeyCtx<'a> {
    pub rule: &'a ShardRule,
    /// Qualifiers that denote the sharded table: `[alias]`, or `[table]` and `[db, table]`.
    pub qualifiers: Vec<Vec<String>>,
    /// A prepared statement's parameter values, for keys compared with a placeholder.
    pub values: Option<&'a [ParamValue]>,
}

impl KeyCtx<'_> {
    /// `e` is the shard key column of the sharded table (bare or qualified by its name
    /// or alias).
    pub(crate) fn is_key(&self, e: &Expr) -> bool {
        let Some((quals, col)) = column_ref(e) else {
            return false;
        };
        col.eq_ignore_ascii_case(&self.rule.key)
            && (quals.is_empty()
                || self
                    .qualifiers
                    .iter()
                    .any(|q| q.len() == quals.len() && q.iter().zip(&quals).all(|(a, b)| a == b)))
    }

    fn shard_of(&self, e: &Expr) -> Option<u32> {
        let lit = literal_or_param(e, self.values)?;
        self.rule.shard_for_lookup(&lit.key_value())
    }

    /// The shards of a routing IN list, None when it does not route.
    fn in_list_shards(&self, e: &Expr) -> Option<Vec<u32>> {
        match e {
            Expr::In {
                expr,
                target: InTarget::List(items),
                negated: false,
                ..
            } if self.is_key(expr) && !items.is_empty() && self.converts_quietly(items) => {
                items.iter().map(|x| self.shard_of(x)).collect()
            }
            _ => None,
        }
    }

    /// Whether the server compares the key with every value of the list without a
    /// conversion warning, so that cutting the list down per sub-table changes no
    /// warning: the server warns about a value it converts (`' 12 '` for an integer key:
    /// once per list of several values, none for one value), and per row when a list
    /// mixes strings and numbers. Otherwise the list is neither routed nor pruned: every
    /// sub-table evaluates it whole, as the one table would, and warnings of the parts
    /// are refused by the merge. (A one-value list is an equality to the server.)
    fn converts_quietly(&self, items: &[Expr]) -> bool {
        if items.len() < 2 {
            return true;
        }
        items.iter().all(|x| match literal_or_param(x, self.values) {
            Some(Lit::Null) => true,
            Some(Lit::Int(_) | Lit::Decimal(_) | Lit::Float(_)) => self.rule.function == ShardFn::Mod,
            Some(Lit::Str(s)) => match self.rule.function {
                ShardFn::Hash => true,
                ShardFn::Mod => {
                    let digits = s.strip_prefix(b"-").unwrap_or(&s);
                    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
                }
            },
            None => false,
        })
    }

    /// The shards that can hold rows satisfying `e`; None means all.
    fn analyze(&self, e: &Expr) -> Option<BTreeSet<u32>> {
        match e {
            Expr::Nested(x) => self.analyze(x),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => match (self.analyze(left), self.analyze(right)) {
                (Some(a), Some(b)) => Some(a.intersection(&b).copied().collect()),
                (Some(a), None) | (None, Some(a)) => Some(a),
                (None, None) => None,
            },
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => {
                let mut a = self.analyze(left)?;
                a.extend(self.analyze(right)?);
                Some(a)
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq | BinaryOperator::Spaceship,
                right,
            } => {
                if self.is_key(left) {
                    self.shard_of(right).map(|s| BTreeSet::from([s]))
                } else if self.is_key(right) {
                    self.shard_of(left).map(|s| BTreeSet::from([s]))
                } else {
                    None
                }
            }
            Expr::In { .. } => self.in_list_shards(e).map(|v| v.into_iter().collect()),
            _ => None,
        }
    }

    /// The shards a statement with this WHERE goes to (ascending; all when unrestricted;
    /// shard 0 alone when the condition can hold nowhere).
    pub(crate) fn route(&self, selection: Option<&Expr>) -> Vec<u32> {
        let trusted = selection.filter(|e| !MisreadOperators::in_expr(e));
        match trusted.and_then(|e| self.analyze(e)) {
            None => (0..self.rule.shards).collect(),
            Some(set) if set.is_empty() => vec![0],
            Some(set) => set.into_iter().collect(),
        }
    }

    /// Cuts every routing IN list down to the values of `shard` (nothing when the
    /// condition holds an operator whose precedence the parser misreads).
    pub(crate) fn prune(&self, e: &mut Expr, shard: u32) {
        if !MisreadOperators::in_expr(e) {
            self.prune_trusted(e, shard);
        }
    }

    fn prune_trusted(&self, e: &mut Expr, shard: u32) {
        match e {
            Expr::Nested(x) => self.prune_trusted(x, shard),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And | BinaryOperator::Or,
                right,
            } => {
                self.prune_trusted(left, shard);
                self.prune_trusted(right, shard);
            }
            Expr::In { .. } => {
                let Some(shards) = self.in_list_shards(e) else {
                    return;
                };
                let Expr::In {
                    target: InTarget::List(items),
                    ..
                } = e
                else {
                    return;
                };
                let kept: Vec<Expr> = items
                    .drain(..)
                    .zip(shards)
                    .filter(|(_, s)| *s == shard)
                    .map(|(x, _)| x)
                    .collect();
                if kept.is_empty() {
                    *e = Expr::value(Value::Boolean(false));
                } else {
                    *items = kept;
                }
            }
            _ => {}
        }
    }
}
