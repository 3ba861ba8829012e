//! Walking expressions of the sqlparser AST (the crate's `visitor` feature is off): every
//! `Expr` variant is matched, so a new kind of child cannot be skipped silently. Subqueries
//! are reported to the visitor, not entered.

use sqlparser::ast::{
    AccessExpr, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments,
    Ident, InTarget, JoinConstraint, JoinOperator, ListAggOnOverflow, ObjectName, ObjectNamePart, OrderBy,
    OrderByKind, Query, Select, SelectItem, SelectItemQualifiedWildcardKind, Subscript, TableFactor,
    WindowFrameBound, WindowType,
};

use super::plan::Refusal;

/// Whether to walk the children of the expression just visited.
pub(crate) enum Step {
    Into,
    #[allow(dead_code)] // part of the visitor protocol; no visitor needs it yet
    Skip,
}

pub(crate) trait Visit {
    /// Each expression, before its children.
    fn expr(&mut self, _e: &mut Expr) -> Result<Step, Refusal> {
        Ok(Step::Into)
    }
    /// Each subquery met inside an expression (not entered).
    fn query(&mut self, _q: &mut Query) -> Result<(), Refusal> {
        Ok(())
    }
}

fn unsupported(e: &Expr) -> Refusal {
    Refusal(format!(
        "sluice: the expression {e} is not supported in a statement on a sharded table"
    ))
}

/// Walks `e` and all its sub-expressions.
pub(crate) fn walk(e: &mut Expr, v: &mut dyn Visit) -> Result<(), Refusal> {
    if let Step::Skip = v.expr(e)? {
        return Ok(());
    }
    match e {
        Expr::Identifier(_)
        | Expr::CompoundIdentifier(_)
        | Expr::Value(_)
        | Expr::TypedString(_)
        | Expr::MatchAgainst { .. }
        | Expr::Wildcard(_)
        | Expr::QualifiedWildcard(..) => Ok(()),
        Expr::CompoundFieldAccess { root, access_chain } => {
            walk(root, v)?;
            for a in access_chain {
                match a {
                    AccessExpr::Dot(x) => walk(x, v)?,
                    AccessExpr::Subscript(Subscript::Index { index }) => walk(index, v)?,
                    AccessExpr::Subscript(Subscript::Slice {
                        lower_bound,
                        upper_bound,
                        stride,
                    }) => {
                        for x in [lower_bound, upper_bound, stride].into_iter().flatten() {
                            walk(x, v)?;
                        }
                    }
                }
            }
            Ok(())
        }
        Expr::JsonAccess { value, .. } => walk(value, v),
        Expr::IsFalse(x)
        | Expr::IsNotFalse(x)
        | Expr::IsTrue(x)
        | Expr::IsNotTrue(x)
        | Expr::IsNull(x)
        | Expr::IsNotNull(x)
        | Expr::IsUnknown(x)
        | Expr::IsNotUnknown(x)
        | Expr::UnaryOp { expr: x, .. }
        | Expr::Nested(x)
        | Expr::Prefixed { value: x, .. }
        | Expr::Collate { expr: x, .. }
        | Expr::Extract { expr: x, .. }
        | Expr::Ceil { expr: x, .. }
        | Expr::Floor { expr: x, .. }
        | Expr::IsJson { expr: x, .. }
        | Expr::IsNormalized { expr: x, .. } => walk(x, v),
        Expr::IsDistinctFrom(a, b)
        | Expr::IsNotDistinctFrom(a, b)
        | Expr::BinaryOp {
            left: a, right: b, ..
        }
        | Expr::AnyOp {
            left: a, right: b, ..
        }
        | Expr::AllOp {
            left: a, right: b, ..
        }
        | Expr::AtTimeZone {
            timestamp: a,
            time_zone: b,
        }
        | Expr::Position { expr: a, r#in: b }
        | Expr::RLike {
            expr: a, pattern: b, ..
        } => {
            walk(a, v)?;
            walk(b, v)
        }
        Expr::Like {
            expr,
            pattern,
            escape_char,
            ..
        }
        | Expr::ILike {
            expr,
            pattern,
            escape_char,
            ..
        }
        | Expr::SimilarTo {
            expr,
            pattern,
            escape_char,
            ..
        } => {
            walk(expr, v)?;
            walk(pattern, v)?;
            if let Some(x) = escape_char {
                walk(x, v)?;
            }
            Ok(())
        }
        Expr::In { expr, target, .. } => {
            walk(expr, v)?;
            match target {
                InTarget::List(items) => items.iter_mut().try_for_each(|x| walk(x, v)),
                InTarget::Subquery(q) => v.query(q),
                InTarget::Unnest(x) => walk(x, v),
                InTarget::Table { .. } => Err(unsupported(e)),
            }
        }
        Expr::Between { expr, low, high, .. } => {
            walk(expr, v)?;
            walk(low, v)?;
            walk(high, v)
        }
        Expr::Convert { expr, styles, .. } => {
            walk(expr, v)?;
            styles.iter_mut().try_for_each(|x| walk(x, v))
        }
        Expr::Cast { expr, .. } => walk(expr, v),
        Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            walk(expr, v)?;
            for x in [substring_from, substring_for].into_iter().flatten() {
                walk(x, v)?;
            }
            Ok(())
        }
        Expr::Trim {
            expr,
            trim_what,
            trim_characters,
            ..
        } => {
            walk(expr, v)?;
            if let Some(x) = trim_what {
                walk(x, v)?;
            }
            if let Some(xs) = trim_characters {
                xs.iter_mut().try_for_each(|x| walk(x, v))?;
            }
            Ok(())
        }
        Expr::Overlay {
            expr,
            overlay_what,
            overlay_from,
            overlay_for,
        } => {
            walk(expr, v)?;
            walk(overlay_what, v)?;
            walk(overlay_from, v)?;
            if let Some(x) = overlay_for {
                walk(x, v)?;
            }
            Ok(())
        }
        Expr::Function(f) => walk_function(f, v),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(x) = operand {
                walk(x, v)?;
            }
            for c in conditions {
                walk(&mut c.condition, v)?;
                walk(&mut c.result, v)?;
            }
            if let Some(x) = else_result {
                walk(x, v)?;
            }
            Ok(())
        }
        Expr::Exists { subquery, .. } | Expr::Subquery(subquery) => v.query(subquery),
        Expr::Tuple(xs) => xs.iter_mut().try_for_each(|x| walk(x, v)),
        Expr::Array(a) => a.elem.iter_mut().try_for_each(|x| walk(x, v)),
        Expr::Interval(i) => walk(&mut i.value, v),
        Expr::MemberOf(m) => {
            walk(&mut m.value, v)?;
            walk(&mut m.array, v)
        }
        Expr::GroupingSets(_)
        | Expr::Cube(_)
        | Expr::Rollup(_)
        | Expr::Struct { .. }
        | Expr::Named { .. }
        | Expr::Dictionary(_)
        | Expr::Map(_)
        | Expr::OuterJoin(_)
        | Expr::Prior(_)
        | Expr::Lambda(_) => Err(unsupported(e)),
    }
}

fn walk_function(f: &mut Function, v: &mut dyn Visit) -> Result<(), Refusal> {
    walk_arguments(&mut f.parameters, v)?;
    walk_arguments(&mut f.args, v)?;
    for o in &mut f.within_group {
        walk(&mut o.expr, v)?;
    }
    if let Some(x) = &mut f.filter {
        walk(x, v)?;
    }
    if let Some(WindowType::WindowSpec(w)) = &mut f.over {
        w.partition_by.iter_mut().try_for_each(|x| walk(x, v))?;
        for o in &mut w.order_by {
            walk(&mut o.expr, v)?;
        }
        if let Some(frame) = &mut w.window_frame {
            for b in std::iter::once(&mut frame.start_bound).chain(frame.end_bound.as_mut()) {
                if let WindowFrameBound::Preceding(Some(x)) | WindowFrameBound::Following(Some(x)) = b {
                    walk(x, v)?;
                }
            }
        }
    }
    Ok(())
}

fn walk_arguments(a: &mut FunctionArguments, v: &mut dyn Visit) -> Result<(), Refusal> {
    match a {
        FunctionArguments::None => Ok(()),
        FunctionArguments::Subquery(q) => v.query(q),
        FunctionArguments::List(list) => {
            for arg in &mut list.args {
                let x = match arg {
                    FunctionArg::Named { arg, .. } | FunctionArg::Unnamed(arg) => arg,
                    FunctionArg::ExprNamed { name, arg, .. } => {
                        walk(name, v)?;
                        arg
                    }
                };
                if let FunctionArgExpr::Expr(x) = x {
                    walk(x, v)?;
                }
            }
            for c in &mut list.clauses {
                match c {
                    FunctionArgumentClause::Where(x) | FunctionArgumentClause::Limit(x) => walk(x, v)?,
                    FunctionArgumentClause::OrderBy(os) => {
                        for o in os {
                            walk(&mut o.expr, v)?;
                        }
                    }
                    FunctionArgumentClause::OnOverflow(ListAggOnOverflow::Truncate {
                        filler: Some(x),
                        ..
                    }) => walk(x, v)?,
                    _ => {}
                }
            }
            Ok(())
        }
    }
}

/// Walks every expression of a SELECT (select list, join conditions, WHERE, GROUP BY,
/// HAVING) and of the query's ORDER BY. Derived tables are reported as subqueries.
pub(crate) fn walk_select(
    s: &mut Select,
    order_by: Option<&mut OrderBy>,
    v: &mut dyn Visit,
) -> Result<(), Refusal> {
    for item in &mut s.projection {
        match item {
            SelectItem::UnnamedExpr(x)
            | SelectItem::ExprWithAlias { expr: x, .. }
            | SelectItem::ExprWithAliases { expr: x, .. }
            | SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::Expr(x), _) => walk(x, v)?,
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(_), _)
            | SelectItem::Wildcard(_) => {}
        }
    }
    for twj in &mut s.from {
        walk_factor(&mut twj.relation, v)?;
        for j in &mut twj.joins {
            walk_factor(&mut j.relation, v)?;
            if let Some(JoinConstraint::On(x)) = join_constraint(&mut j.join_operator) {
                walk(x, v)?;
            }
        }
    }
    if let Some(x) = &mut s.selection {
        walk(x, v)?;
    }
    if let sqlparser::ast::GroupByExpr::Expressions(xs, _) = &mut s.group_by {
        xs.iter_mut().try_for_each(|x| walk(x, v))?;
    }
    if let Some(x) = &mut s.having {
        walk(x, v)?;
    }
    if let Some(ob) = order_by {
        if let OrderByKind::Expressions(os) = &mut ob.kind {
            for o in os {
                walk(&mut o.expr, v)?;
            }
        }
    }
    Ok(())
}

fn walk_factor(f: &mut TableFactor, v: &mut dyn Visit) -> Result<(), Refusal> {
    match f {
        TableFactor::Derived { subquery, .. } => v.query(subquery),
        TableFactor::NestedJoin { table_with_joins, .. } => {
            walk_factor(&mut table_with_joins.relation, v)?;
            for j in &mut table_with_joins.joins {
                walk_factor(&mut j.relation, v)?;
                if let Some(JoinConstraint::On(x)) = join_constraint(&mut j.join_operator) {
                    walk(x, v)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The constraint of a join operator, if it has one.
pub(crate) fn join_constraint(op: &mut JoinOperator) -> Option<&mut JoinConstraint> {
    match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c)
        | JoinOperator::CrossJoin(c)
        | JoinOperator::Semi(c)
        | JoinOperator::LeftSemi(c)
        | JoinOperator::RightSemi(c)
        | JoinOperator::Anti(c)
        | JoinOperator::LeftAnti(c)
        | JoinOperator::RightAnti(c)
        | JoinOperator::StraightJoin(c)
        | JoinOperator::AsOf { constraint: c, .. } => Some(c),
        JoinOperator::CrossApply
        | JoinOperator::OuterApply
        | JoinOperator::ArrayJoin
        | JoinOperator::LeftArrayJoin
        | JoinOperator::InnerArrayJoin => None,
    }
}

/// The identifiers of an object name, None when a part is not a plain identifier.
pub(crate) fn idents(name: &ObjectName) -> Option<Vec<&Ident>> {
    name.0.iter().map(ObjectNamePart::as_ident).collect()
}

/// Upper-cased name of a function with a one-part name.
pub(crate) fn function_name(f: &Function) -> Option<String> {
    match f.name.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Some(i.value.to_ascii_uppercase()),
        _ => None,
    }
}
