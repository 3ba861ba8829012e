//! Statements that would cost sluice more than it can afford: expressions nested or
//! chained too deeply to walk (a stack overflow ends the process), statements too large
//! to plan in bounded memory.

use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};

use super::*;
use crate::shard::text::{depth_bound, parse, tokenize, MAX_EXPR_DEPTH};

fn chain(terms: usize) -> String {
    vec!["0"; terms].join(" + ")
}

#[test]
fn flat_chains_are_refused_before_parsing() {
    for sql in [
        format!("SELECT id FROM post_reply WHERE {}", chain(4000)),
        format!("SELECT {} FROM post_reply", chain(4000)),
        format!("SELECT id FROM post_reply WHERE tid = 1 AND ({})", chain(2000)),
        format!(
            "UPDATE post_reply SET subject = 'x' WHERE {}",
            vec!["tid = 1"; 1500].join(" OR ")
        ),
        format!("SELECT id FROM post_reply WHERE tid IN (1, {})", chain(3000)),
    ] {
        let e = run(&sql).unwrap_err();
        assert!(e.0.contains("nest too deeply"), "{e}");
    }
    // Mentioned only in a comment: not a statement on a sharded table, not parsed here.
    let sql = format!("SELECT {} /* post_reply */", chain(4000));
    assert_eq!(run(&sql).unwrap(), None);
}

#[test]
fn chains_within_the_bound_plan_on_a_small_stack() {
    // Just inside the limit, on a thread with a tokio worker's 2 MiB stack (debug build
    // frames are the largest): parse, plan, render, drop.
    // (Deep ones are planned on a thread of their own, shallow ones on the caller's.)
    for terms in [MAX_EXPR_DEPTH - 20, 120] {
        let sql = format!("SELECT id FROM post_reply WHERE tid = 1 AND {} = 0", chain(terms));
        let t = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || run(&sql).map(|p| p.map(|p| p.parts().len())))
            .unwrap();
        assert_eq!(t.join().unwrap(), Ok(Some(1)), "{terms} terms");
    }
    // A HAVING IN list is a balanced tree: 50,000 values evaluate on a small stack.
    let list = (0..50_000).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT tid, COUNT(*) FROM post_reply GROUP BY tid HAVING COUNT(*) IN ({list})");
    let t = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let big = rules().with_max_statement_size(1 << 20);
            plan(&sql, Some("test"), &big).map(|p| p.map(|p| p.parts().len()))
        })
        .unwrap();
    assert_eq!(t.join().unwrap(), Ok(Some(4)));
    // Long flat lists are not deep.
    let list = (0..20_000).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    assert!(run(&format!("SELECT id FROM post_reply WHERE tid IN ({list})")).is_ok());
    let rows = (0..5_000)
        .map(|i| format!("({i}, {i}, 'x')"))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(run(&format!(
        "INSERT INTO post_reply (id, tid, subject) VALUES {rows}"
    ))
    .is_ok());
}

fn depth(e: &Expr) -> usize {
    1 + match e {
        Expr::BinaryOp { left, right, .. } => depth(left).max(depth(right)),
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::IsNull(expr) | Expr::IsNotNull(expr) => {
            depth(expr)
        }
        Expr::In {
            expr,
            target: sqlparser::ast::InTarget::List(list),
            ..
        } => list.iter().map(depth).max().unwrap_or(0).max(depth(expr)),
        Expr::Between { expr, low, high, .. } => depth(expr).max(depth(low)).max(depth(high)),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => conditions
            .iter()
            .flat_map(|c| [depth(&c.condition), depth(&c.result)])
            .chain(operand.iter().map(|x| depth(x)))
            .chain(else_result.iter().map(|x| depth(x)))
            .max()
            .unwrap_or(0),
        Expr::Function(f) => match &f.args {
            sqlparser::ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .map(|a| match a {
                    sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(x)) => {
                        depth(x)
                    }
                    _ => 0,
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        },
        _ => 0,
    }
}

/// The pre-scan's bound is at least the depth of what the parser builds.
#[test]
fn depth_bound_bounds_the_parsed_depth() {
    for sql in [
        "SELECT 1 + 2 * 3 - 4 FROM t WHERE a = 1 AND b = 2 OR NOT c IS NULL",
        "SELECT CASE WHEN a = 1 THEN CASE WHEN b THEN 1 ELSE 2 END ELSE 3 END FROM t",
        "SELECT f(g(h(1 + 1, 2), 3 - - 3), (((4)))) FROM t WHERE x BETWEEN 1 + 1 AND 2 * 3",
        "SELECT a FROM t WHERE a IN (1, 2 + 3 + 4, 5) AND b NOT IN (6) OR c = 1 XOR d = 2",
        "SELECT ((1 + 2) * (3 + (4 - (5 / (6 + 7))))) FROM t",
    ] {
        let tokens = tokenize(sql).unwrap();
        let bound = depth_bound(&tokens);
        let stmts = parse(tokens).unwrap();
        let Statement::Query(q) = &stmts[0] else { panic!() };
        let SetExpr::Select(s) = q.body.as_ref() else {
            panic!()
        };
        let mut deepest = s.selection.as_ref().map(depth).unwrap_or(0);
        for item in &s.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                deepest = deepest.max(depth(e));
            }
        }
        assert!(bound >= deepest, "{sql}: bound {bound} < depth {deepest}");
    }
}

#[test]
fn large_statements_are_refused_before_tokenizing() {
    let small = rules().with_max_statement_size(1024);
    let list = vec!["1"; 1000].join(",");
    let sql = format!("SELECT id FROM post_reply WHERE tid IN ({list})");
    let e = plan(&sql, Some("test"), &small).unwrap_err();
    assert!(e.0.contains("sharding.max_statement_size"), "{e}");
    // Parameters are not written into the statement: they do not count.
    let p = plan_prepared(
        "SELECT id FROM post_reply WHERE tid = 1 AND subject = ?",
        &[ParamValue::Blob(vec![0; 600])],
        &Charset::default(),
        Some("test"),
        &small,
    )
    .unwrap()
    .unwrap();
    assert_eq!(p.parts()[0].params, vec![0]);
    // Too large, but the sharded name is only in a string, a comment or a longer name:
    // untouched, to the server.
    for sql in [
        format!("SELECT 'post_reply', {list}"),
        format!("SELECT {list} -- post_reply"),
        format!("SELECT {list} FROM post_reply_archive /* post_reply */"),
        format!("SELECT \"post_reply\", {list} # post_reply"),
    ] {
        assert_eq!(plan(&sql, Some("test"), &small).unwrap(), None, "{sql}");
    }
    for sql in [
        format!("SELECT {list} FROM test.post_reply"),
        format!("SELECT {list} FROM `post_reply`"),
        format!("SELECT 'a''b\\'', {list} FROM post_reply"),
    ] {
        assert!(plan(&sql, Some("test"), &small).is_err(), "{sql}");
    }
}
