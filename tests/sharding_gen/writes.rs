//! The fixed writes of the corpus (`fixed.rs` runs them after the reads): the same
//! statements on the sharded table and on the reference, judged by the oracle (affected
//! rows, insert id, warnings, errors), then the contents compared.

use super::corpus::{insert_sql, reply, Reply, Rng, COLUMNS, N_ROWS, SEED_TIDS};

pub enum Write {
    One(String),
    /// Refused (1235) or applied like on the reference: a shape beyond the list.
    MayRefuse(String),
    /// Statements in one explicit transaction, committed or rolled back.
    Tx {
        stmts: Vec<String>,
        commit: bool,
    },
}

/// The same writes for both tables (`post_reply` is replaced by `ref` for the reference).
/// Rows that already exist are always given their own tid (a row's placement is its tid;
/// a "duplicate" with another tid is another row of another sub-table by design).
pub fn write_statements(data: &[Reply]) -> Vec<Write> {
    let mut rng = Rng(0x3217e5);
    let r = &mut rng;
    let next_id = N_ROWS + 1;
    let new_rows: Vec<Reply> = (next_id..next_id + 300).map(|id| reply(r, id)).collect();
    let existing = |r: &mut Rng| data[r.below(data.len() as u64) as usize].clone();
    let mut w = vec![Write::One(insert_sql("post_reply", &new_rows))];
    // A key given as a string, and the INSERT … SET form.
    w.push(Write::One(format!(
        "INSERT INTO post_reply ({COLUMNS}) VALUES ({}, '228596', 5, 'string key', '2021-02-01 10:00:00', 'm', 1, 'alpha', 1.50), ({}, '8', 6, 'string key 2', '2021-02-01 10:00:00', 'm', NULL, NULL, -1.50)",
        next_id + 300,
        next_id + 301
    )));
    // The server reads ' 12 ' as 12 (and 12.0 too); sluice may refuse such keys.
    w.push(Write::MayRefuse(format!(
        "INSERT INTO post_reply ({COLUMNS}) VALUES ({}, ' 12 ', 6, 'spaced string key', '2021-02-01 10:00:00', 'm', NULL, NULL, 2.00)",
        next_id + 303
    )));
    w.push(Write::MayRefuse(format!(
        "INSERT INTO post_reply ({COLUMNS}) VALUES ({}, 12.0, 6, 'decimal key', '2021-02-01 10:00:00', 'm', NULL, NULL, 2.00)",
        next_id + 304
    )));
    w.push(Write::One(format!(
        "INSERT INTO post_reply SET id = {}, tid = 1001, user_id = 7, subject = 'set form', create_time = '2021-02-02 00:00:00', message = 'it''s \\\\ set', amount = 3.25",
        next_id + 302
    )));
    // UPDATE by key, by IN + condition, broadcast, no match, unchanged values.
    w.push(Write::One(
        "UPDATE post_reply SET score = score + 1 WHERE tid = 228596".into(),
    ));
    w.push(Write::One("UPDATE post_reply SET subject = CONCAT(subject, ' (edited)'), amount = amount * 2 WHERE tid IN (228689, 4, 8) AND user_id < 100".into()));
    w.push(Write::One(
        "UPDATE post_reply SET tag = 'UPDATED', message = 'it''s \\\\ edited 🙂' WHERE score = 42".into(),
    ));
    w.push(Write::One(
        "UPDATE post_reply SET score = 0 WHERE user_id = 999999".into(),
    ));
    w.push(Write::One(
        "UPDATE post_reply SET score = score WHERE tid = 4".into(),
    ));
    w.push(Write::One(
        "UPDATE post_reply SET amount = -amount WHERE tid = 228601 OR tid = 12 OR (tid = 228839 AND score > 50)".into(),
    ));
    w.push(Write::One(
        "UPDATE post_reply SET score = -1 WHERE tid = 8 ORDER BY id LIMIT 5".into(),
    ));
    w.push(Write::One(
        "UPDATE post_reply SET score = NULL, tag = NULL WHERE user_id = 3 AND amount > 0".into(),
    ));
    // DELETE by key, broadcast, with OR, single-shard with LIMIT.
    w.push(Write::One(
        "DELETE FROM post_reply WHERE tid = 209218 AND score IS NULL".into(),
    ));
    w.push(Write::One("DELETE FROM post_reply WHERE user_id = 77".into()));
    w.push(Write::One(
        "DELETE FROM post_reply WHERE amount BETWEEN -5.00 AND 5.00".into(),
    ));
    w.push(Write::One(
        "DELETE FROM post_reply WHERE tid = 224795 OR tid = 228839 AND score > 90".into(),
    ));
    w.push(Write::One(
        "DELETE FROM post_reply WHERE tid = 4 ORDER BY id DESC LIMIT 3".into(),
    ));
    w.push(Write::One("DELETE FROM post_reply WHERE tid IN (1, 2, 3)".into()));
    // INSERT … ON DUPLICATE KEY UPDATE: existing rows (own tid) and new ones, changed and
    // unchanged.
    let mut rows: Vec<Reply> = (0..20).map(|_| existing(r)).collect();
    for (k, row) in rows.iter_mut().enumerate() {
        if k % 3 == 0 {
            row.score = Some(1000 + k as i32);
        }
    }
    rows.extend((0..10).map(|k| reply(r, next_id + 400 + k)));
    w.push(Write::One(format!(
        "{} ON DUPLICATE KEY UPDATE score = VALUES(score), subject = CONCAT(post_reply.subject, '+')",
        insert_sql("post_reply", &rows)
    )));
    let rows: Vec<Reply> = (0..10).map(|_| existing(r)).collect();
    w.push(Write::One(format!(
        "{} ON DUPLICATE KEY UPDATE score = score",
        insert_sql("post_reply", &rows)
    )));
    // REPLACE: existing rows with new values, and new rows.
    let mut rows: Vec<Reply> = (0..15).map(|_| existing(r)).collect();
    for row in rows.iter_mut() {
        row.subject = format!("replaced {}", row.id);
        row.amount = "9.99".into();
    }
    rows.extend((0..5).map(|k| reply(r, next_id + 500 + k)));
    w.push(Write::One(insert_sql("post_reply", &rows).replacen(
        "INSERT INTO",
        "REPLACE INTO",
        1,
    )));
    // INSERT IGNORE with a duplicate.
    let mut rows = vec![existing(r)];
    rows.push(reply(r, next_id + 600));
    w.push(Write::One(insert_sql("post_reply", &rows).replacen(
        "INSERT INTO",
        "INSERT IGNORE INTO",
        1,
    )));
    // A multi-row INSERT over all shards whose last row is a duplicate: error 1062 on both
    // sides, and no row of it written anywhere (the reference rolls back the statement;
    // sluice must roll back the other sub-tables too).
    let mut rows: Vec<Reply> = (0..8).map(|k| reply(r, next_id + 700 + k)).collect();
    for (k, row) in rows.iter_mut().enumerate() {
        row.tid = SEED_TIDS[k];
    }
    rows.push(data[10].clone());
    w.push(Write::One(insert_sql("post_reply", &rows)));
    // Explicit transactions: rolled back, then committed.
    let rows: Vec<Reply> = (0..12).map(|k| reply(r, next_id + 800 + k)).collect();
    w.push(Write::Tx {
        stmts: vec![
            insert_sql("post_reply", &rows),
            "UPDATE post_reply SET score = 7 WHERE user_id = 5".into(),
            "DELETE FROM post_reply WHERE tid = 1001 AND score < 0".into(),
        ],
        commit: false,
    });
    w.push(Write::Tx {
        stmts: vec![
            insert_sql("post_reply", &rows),
            "UPDATE post_reply SET score = 7 WHERE user_id = 5".into(),
            "DELETE FROM post_reply WHERE tid = 1001 AND score < 0".into(),
        ],
        commit: true,
    });
    w
}
