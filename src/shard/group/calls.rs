//! The aggregate calls a grouped statement's select list, ORDER BY and HAVING hold
//! (`COUNT`, `SUM`, `AVG`, `MIN`, `MAX`, their DISTINCT forms), read at the top of an
//! expression, and how each becomes a shard's partial aggregate.

use super::*;
use crate::shard::walk::{walk, Step, Visit};

/// An aggregate call at the top of an expression.
pub(super) enum AggCall {
    Simple(AggKind),
    Avg(Function),
    CountDistinct(Expr),
    SumDistinct(Expr),
    AvgDistinct(Box<Function>, Expr),
}

impl AggCall {
    /// The argument of a DISTINCT aggregate.
    pub(super) fn distinct_arg(&self) -> Option<&Expr> {
        match self {
            AggCall::CountDistinct(x) | AggCall::SumDistinct(x) | AggCall::AvgDistinct(_, x) => Some(x),
            _ => None,
        }
    }
}

/// Recognizes `COUNT(*)`, `COUNT(x)`, `COUNT(DISTINCT x)`, `SUM(x)`, `MIN(x)`, `MAX(x)`,
/// `AVG(x)` (ALL or DISTINCT for MIN/MAX). Other forms of these functions are refused.
pub(super) fn agg_call(e: &Expr, table: &str) -> Result<Option<AggCall>, Refusal> {
    let Expr::Function(f) = e else { return Ok(None) };
    let Some(name) = function_name(f) else {
        return Ok(None);
    };
    if !MERGEABLE_AGGREGATES.contains(&name.as_str()) {
        return Ok(None);
    }
    let odd = || {
        refuse(format!(
            "sluice: this use of {name}() on sharded table {table} is not supported across shards"
        ))
    };
    let FunctionArguments::List(list) = &f.args else {
        return odd();
    };
    if f.over.is_some()
        || f.filter.is_some()
        || f.null_treatment.is_some()
        || !f.within_group.is_empty()
        || !matches!(f.parameters, FunctionArguments::None)
        || !list.clauses.is_empty()
        || list.args.len() != 1
    {
        return odd();
    }
    let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
    let arg = match &list.args[0] {
        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if name == "COUNT" && !distinct => None,
        FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x),
        _ => return odd(),
    };
    if matches!(name.as_str(), "SUM" | "AVG") && arg.is_some_and(divides) {
        return refuse(format!(
            "sluice: {name}() of a division on sharded table {table} is not supported across shards \
             (the server adds each quotient with digits it does not send: 0.001 / 3 is 0.000333333 \
             inside, 0.0003333 on the wire, so the shards' partial sums would be rounded)"
        ));
    }
    Ok(Some(match (name.as_str(), distinct, arg) {
        ("COUNT", false, _) => AggCall::Simple(AggKind::Count),
        ("COUNT", true, Some(x)) => AggCall::CountDistinct(x.clone()),
        ("SUM", false, Some(_)) => AggCall::Simple(AggKind::Sum),
        ("MIN", _, Some(_)) => AggCall::Simple(AggKind::Min),
        ("MAX", _, Some(_)) => AggCall::Simple(AggKind::Max),
        ("AVG", false, Some(_)) => AggCall::Avg(f.clone()),
        ("SUM", true, Some(x)) => AggCall::SumDistinct(x.clone()),
        ("AVG", true, Some(x)) => AggCall::AvgDistinct(Box::new(f.clone()), x.clone()),
        _ => return odd(),
    }))
}

pub(super) fn renamed(f: &Function, name: &str) -> Expr {
    let mut f = f.clone();
    f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]);
    Expr::Function(f)
}

/// Whether `x` holds a division (`/`), whose quotient the server keeps to more digits
/// than it sends.
pub(crate) fn divides(x: &Expr) -> bool {
    struct Divides(bool);
    impl Visit for Divides {
        fn expr(&mut self, e: &mut Expr) -> Result<Step, Refusal> {
            if matches!(
                e,
                Expr::BinaryOp {
                    op: BinaryOperator::Divide,
                    ..
                }
            ) {
                self.0 = true;
            }
            Ok(Step::Into)
        }
    }
    let mut v = Divides(false);
    // An expression the walk cannot read is refused where the statement is planned.
    let _ = walk(&mut x.clone(), &mut v);
    v.0
}
