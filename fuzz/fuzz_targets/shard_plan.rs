//! The shard planner on arbitrary SQL text, with a fixed rule set: an
//! integer-keyed `test.post_reply` (4 sub-tables in one group) and a
//! string-keyed `shop.users` (3 sub-tables over two groups), as text
//! statements and as prepared statements with parameter values.
//!
//! Input: one config byte (current database, parameter shapes), then the SQL
//! (lossily decoded, as the session does). Properties checked: nothing
//! panics; refusals carry a sentence; every part names a real shard of a
//! rule and the group its placement says; a select plan's merge spec binds.
//!
//! Deep and flat expressions (issue 15): when the config byte's top bit is
//! set, the input is also repeated into a long operator chain and a deep
//! parenthesis nest around a statement on `post_reply` (up to ~6,000 levels),
//! which must be refused or planned, never overflow the stack. Parameters are
//! bound under UTF-8, GBK and an unknown character set.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

use sluice::shard::{
    bind_merge, count_placeholders, plan, plan_prepared, Charset, KeyCollation, ParamValue, ShardFn,
    ShardPlan, ShardRule, ShardRules, Temporal,
};

fn rules() -> &'static ShardRules {
    static RULES: OnceLock<ShardRules> = OnceLock::new();
    RULES.get_or_init(|| {
        let ints = ShardRule::new("test", "post_reply", "tid", 4, ShardFn::Mod);
        let mut strs = ShardRule::new("shop", "users", "name", 3, ShardFn::Hash);
        strs.placement = vec![0, 1, 1];
        strs.collation = KeyCollation::Ci;
        ShardRules::new(vec![ints, strs]).expect("fuzz shard rules")
    })
}

fn check(result: Result<Option<ShardPlan>, sluice::shard::Refusal>) {
    let plan = match result {
        Ok(Some(p)) => p,
        Ok(None) => return,
        Err(refusal) => {
            assert!(!refusal.to_string().is_empty(), "a refusal without a sentence");
            return;
        }
    };
    let max_shards = rules().rules().iter().map(|r| r.shards).max().unwrap_or(0);
    for part in plan.parts() {
        assert!(part.shard < max_shards, "a part for a shard no rule has");
        assert!(part.group <= 1, "a part in a group no rule places");
        assert!(!part.sql.as_bytes().is_empty());
    }
    if let ShardPlan::Select {
        merge,
        wildcard_helpers,
        ..
    } = &plan
    {
        let columns = merge.visible + merge.order_by.len() + 8 + wildcard_helpers.unwrap_or(0);
        let _ = bind_merge(merge, *wildcard_helpers, columns);
    }
}

/// Parameter values for `n` placeholders, shaped by `seed` and the text.
fn params(n: usize, seed: u8, text: &[u8]) -> Vec<ParamValue> {
    (0..n)
        .map(|i| {
            let b = text.get(i).copied().unwrap_or(0);
            match (seed.wrapping_add(i as u8)) % 6 {
                0 => ParamValue::Null,
                1 => ParamValue::Int(i64::from(b as i8) * 1_000_003),
                2 => ParamValue::UInt(u64::MAX - u64::from(b)),
                3 => ParamValue::Float(f64::from(b) / 3.0),
                4 => ParamValue::Bytes(text.get(i..i + 8).unwrap_or_default().to_vec()),
                5 if b % 3 == 0 => ParamValue::Blob(text.get(i..i + 4).unwrap_or_default().to_vec()),
                5 if b % 3 == 1 => ParamValue::Decimal(text.get(i..i + 6).unwrap_or_default().to_vec()),
                5 => ParamValue::Temporal(Temporal::DateTime {
                    year: u16::from(b) * 40,
                    month: b % 14,
                    day: b % 33,
                    hour: b % 25,
                    minute: b % 61,
                    second: b % 61,
                    micro: u32::from(b) * 4000,
                }),
                _ => ParamValue::Bytes(format!("{b}").into_bytes()),
            }
        })
        .collect()
}

fn charsets() -> [Charset; 3] {
    [
        Charset::from_session("utf8mb4", "", 4),
        Charset::from_session("gbk", "NO_BACKSLASH_ESCAPES", 2),
        Charset::default(),
    ]
}

/// A statement on `post_reply` whose WHERE is `text` chained `n` times with an operator
/// (flat), or nested in `n` parentheses (deep).
fn deep(text: &str, n: usize, flat: bool) -> String {
    let piece: String = text.chars().filter(|c| !c.is_control()).take(12).collect();
    let piece = if piece.trim().is_empty() { "0".to_string() } else { piece };
    if flat {
        let ops = [" + ", " AND ", " OR ", " * ", " = ", " - "];
        let op = ops[n % ops.len()];
        format!("SELECT id FROM post_reply WHERE {}", vec![piece.as_str(); n].join(op))
    } else {
        format!("SELECT id FROM post_reply WHERE {}{piece}{}", "(".repeat(n), ")".repeat(n))
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&config, text)) = data.split_first() else {
        return;
    };
    let db = [Some("test"), Some("shop"), None, Some("other")][usize::from(config & 3)];
    let sql = String::from_utf8_lossy(text);
    check(plan(&sql, db, rules()));
    let n = count_placeholders(&sql).unwrap_or(0).min(64);
    let cs = &charsets()[usize::from(config >> 2) % 3];
    check(plan_prepared(&sql, &params(n, config >> 2, text), cs, db, rules()));
    if config & 0x80 != 0 {
        let len = 1 + usize::from(text.first().copied().unwrap_or(0)) * 24;
        for flat in [true, false] {
            let s = deep(&sql, len, flat);
            check(plan(&s, Some("test"), rules()));
        }
    }
});
