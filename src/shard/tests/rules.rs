//! Shard rules, Atlas shorthand, placement functions.

use super::*;

fn hash_rule(collation: KeyCollation) -> ShardRule {
    let mut r = ShardRule::new("test", "users", "name", 4, ShardFn::Hash);
    r.collation = collation;
    r
}

#[test]
fn atlas_shorthand() {
    let r = parse_atlas("test.post_reply.tid.4").unwrap();
    assert_eq!(r.db, "test");
    assert_eq!(r.table, "post_reply");
    assert_eq!(r.key, "tid");
    assert_eq!(r.shards, 4);
    assert_eq!(r.function, ShardFn::Mod);
    assert_eq!(r.placement, vec![0, 0, 0, 0]);
    assert_eq!(r.collation, KeyCollation::Ci);
    assert_eq!(r.sub_table(3), "post_reply_3");
    assert_eq!(parse_atlas("  db.t.k.1 ").unwrap().shards, 1);
}

#[test]
fn atlas_shorthand_errors() {
    for bad in [
        "test.post_reply.tid",
        "a.b.c.d.4",
        "test.post_reply.tid.0",
        "test.post_reply.tid.x",
        "test..tid.4",
        ".t.k.4",
        "test.t..4",
        "test.t.k.-1",
        "",
    ] {
        assert!(parse_atlas(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn rules_lookup_and_validation() {
    let rules = ShardRules::from_atlas(["test.post_reply.tid.4", "shop.orders.id.8"]).unwrap();
    assert_eq!(rules.get("test", "post_reply").unwrap().shards, 4);
    assert_eq!(rules.get("shop", "orders").unwrap().shards, 8);
    // Table names are case-sensitive (MariaDB on Linux), unless the server folds them.
    assert!(rules.get("test", "POST_REPLY").is_none());
    assert!(rules.get("TEST", "post_reply").is_none());
    let folded = rules.clone().with_lower_case_table_names(true);
    assert!(folded.get("TEST", "Post_Reply").is_some());
    assert!(ShardRules::from_atlas(["test.t.k.4", "test.t.j.2"]).is_err());
    let mut r = ShardRule::new("d", "t", "k", 3, ShardFn::Mod);
    r.placement = vec![0, 1];
    assert!(ShardRules::new(vec![r.clone()]).is_err());
    r.placement = vec![];
    let rules = ShardRules::new(vec![r]).unwrap();
    assert_eq!(rules.get("d", "t").unwrap().placement, vec![0, 0, 0]);
}

#[test]
fn placement_groups() {
    let mut r = ShardRule::new("d", "t", "k", 4, ShardFn::Mod);
    assert!(!r.spans_groups());
    r.placement = vec![0, 0, 1, 1];
    assert_eq!(r.group_of(2), 1);
    assert!(r.spans_groups());
}

#[test]
fn pre_check_is_a_case_insensitive_substring() {
    let rules = rules();
    assert!(rules.mentioned_in("select * from POST_REPLY"));
    assert!(rules.mentioned_in("select * from post_reply_archive"));
    assert!(!rules.mentioned_in("select * from posts"));
}

#[test]
fn mod_placement_is_atlas_for_non_negative_keys() {
    let r = parse_atlas("test.post_reply.tid.4").unwrap();
    for v in [
        0i128,
        1,
        2,
        3,
        4,
        228596,
        228689,
        228638,
        224795,
        u64::MAX as i128,
    ] {
        assert_eq!(i128::from(r.shard_of_int(v)), v % 4);
    }
    // Negative keys: Euclidean remainder, never a negative index.
    assert_eq!(r.shard_of_int(-1), 3);
    assert_eq!(r.shard_of_int(-4), 0);
    assert_eq!(r.shard_of_int(-5), 3);
}

#[test]
fn mod_lookup_values() {
    let r = parse_atlas("test.post_reply.tid.4").unwrap();
    let l = |v: KeyValue<'_>| r.shard_for_lookup(&v);
    assert_eq!(l(KeyValue::Int(42)), Some(2));
    assert_eq!(l(KeyValue::Decimal("42.000")), Some(2));
    assert_eq!(l(KeyValue::Decimal("42.5")), None);
    assert_eq!(l(KeyValue::Decimal("-1.0")), Some(3));
    // A string compares with an INT column as DOUBLE: digits only, below 2^53.
    assert_eq!(l(KeyValue::Str(b"42")), Some(2));
    assert_eq!(l(KeyValue::Str(b" 42 ")), Some(2));
    assert_eq!(l(KeyValue::Str(b"+42")), Some(2));
    assert_eq!(l(KeyValue::Str(b"-1")), Some(3));
    assert_eq!(l(KeyValue::Str(b"42abc")), None);
    assert_eq!(l(KeyValue::Str(b"4.2e1")), None);
    assert_eq!(l(KeyValue::Str(b"")), None);
    assert_eq!(l(KeyValue::Str(b"9007199254740993")), None);
    assert_eq!(
        l(KeyValue::Str(b"9007199254740991")),
        Some((9007199254740991u64 % 4) as u32)
    );
    assert_eq!(l(KeyValue::Float("4.2e1")), None);
    assert_eq!(l(KeyValue::Null), None);
}

#[test]
fn mod_insert_values() {
    let r = parse_atlas("test.post_reply.tid.4").unwrap();
    let i = |v: KeyValue<'_>| r.shard_for_insert(&v);
    assert_eq!(i(KeyValue::Int(7)), Ok(3));
    assert_eq!(i(KeyValue::Str(b"7")), Ok(3));
    assert_eq!(i(KeyValue::Decimal("8.0")), Ok(0));
    assert!(i(KeyValue::Decimal("8.5")).is_err());
    assert!(i(KeyValue::Str(b" 7")).is_err());
    assert!(i(KeyValue::Str(b"7x")).is_err());
    assert!(i(KeyValue::Float("7e0")).is_err());
    assert!(i(KeyValue::Null).unwrap_err().contains("must not be NULL"));
}

#[test]
fn crc32_is_the_ieee_one() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
    // Same values as MySQL's CRC32('ABC') and zlib: fixed forever.
    assert_eq!(crc32(b"ABC"), 2_743_272_264);
    assert_eq!(crc32(b"abc"), 891_568_578);
}

/// `crc32` (crc32fast since issue 41) gives the values of the hand-written
/// table it replaced: fixed inputs with their zlib values, and every length
/// up to 1,100 bytes (crc32fast's SIMD and 16-byte paths and their tails)
/// against the bit-by-bit definition the table was built from.
#[test]
fn crc32_keeps_the_values_of_the_hand_written_table() {
    for (input, want) in [
        (&b"a"[..], 0xE8B7_BE43),
        (b"alice@example.com", 0x99FD_EA29),
        ("Ünïcödé ключ".as_bytes(), 0x5F41_E9C8),
    ] {
        assert_eq!(crc32(input), want, "{input:?}");
    }
    let all: Vec<u8> = (0..=255).collect();
    assert_eq!(crc32(&all), 0x2905_8C73);
    let long: Vec<u8> = (0..4099u32).map(|i| ((i * 7 + 3) % 256) as u8).collect();
    assert_eq!(crc32(&long), 0x9CE4_10F9);
    fn bitwise(bytes: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
    for n in 0..1100 {
        assert_eq!(crc32(&long[..n]), bitwise(&long[..n]), "length {n}");
    }
}

#[test]
fn hash_placement_is_stable() {
    let r = hash_rule(KeyCollation::Ci);
    // CRC32 of the upper-cased key mod 4: golden values, so a release never moves rows.
    assert_eq!(r.shard_of_str(b"abc"), Some(0));
    assert_eq!(r.shard_of_str(b"alice"), Some(3));
    assert_eq!(r.shard_of_str(b"bob"), Some(2));
    assert_eq!(r.shard_of_str(b"dave"), Some(0));
    assert_eq!(r.shard_of_str("中文".as_bytes()), Some(3));
    let b = hash_rule(KeyCollation::Bin);
    assert_eq!(b.shard_of_str(b"abc"), Some(2));
    assert_eq!(b.shard_of_str(b"ABC"), Some(0));
}

#[test]
fn collation_equal_strings_share_a_shard() {
    let r = hash_rule(KeyCollation::Ci);
    let s = r.shard_of_str(b"ABC");
    for v in ["abc", "Abc", "abc ", "ABC   ", "aBc"] {
        assert_eq!(r.shard_of_str(v.as_bytes()), s, "{v:?}");
        assert_eq!(r.shard_for_lookup(&KeyValue::Str(v.as_bytes())), s);
        assert_eq!(r.shard_for_insert(&KeyValue::Str(v.as_bytes())).ok(), s);
    }
    // PAD SPACE: trailing spaces never matter, under bin either.
    let b = hash_rule(KeyCollation::Bin);
    assert_eq!(b.shard_of_str(b"abc  "), b.shard_of_str(b"abc"));
    assert_eq!(normalize_key(KeyCollation::Ci, b"a b ").unwrap().as_ref(), b"A B");
    assert_eq!(
        normalize_key(KeyCollation::Bin, b"a b ").unwrap().as_ref(),
        b"a b"
    );
}

#[test]
fn string_keys_are_spread_not_all_in_table_zero() {
    let r = hash_rule(KeyCollation::Ci);
    let shards: std::collections::BTreeSet<u32> = (0..100)
        .map(|i| r.shard_of_str(format!("user{i}").as_bytes()).unwrap())
        .collect();
    assert_eq!(shards.len(), 4);
}

#[test]
fn unknown_ci_equivalents_are_not_placed() {
    let r = hash_rule(KeyCollation::Ci);
    // 'é' = 'E' under utf8mb4_general_ci, emoji all equal each other: no shard is exact.
    for v in ["café", "😀", "ÀB", "a\tb", "\u{1}"] {
        assert_eq!(r.shard_for_lookup(&KeyValue::Str(v.as_bytes())), None, "{v:?}");
        assert!(r.shard_for_insert(&KeyValue::Str(v.as_bytes())).is_err(), "{v:?}");
    }
    assert_eq!(r.shard_for_lookup(&KeyValue::Str(b"\xff")), None);
    // Under a binary collation every byte string has its place.
    let b = hash_rule(KeyCollation::Bin);
    assert!(b.shard_for_lookup(&KeyValue::Str("café".as_bytes())).is_some());
    assert!(b.shard_for_insert(&KeyValue::Str(b"\xff\x00")).is_ok());
}

#[test]
fn hash_rule_and_numbers() {
    let r = hash_rule(KeyCollation::Ci);
    // `name = 42` matches '42', '042', '42.0': every shard.
    assert_eq!(r.shard_for_lookup(&KeyValue::Int(42)), None);
    // INSERT of 42 into a string column stores '42'.
    assert_eq!(
        r.shard_for_insert(&KeyValue::Int(42)),
        Ok(r.shard_of_str(b"42").unwrap())
    );
    assert!(r.shard_for_insert(&KeyValue::Decimal("4.2")).is_err());
}
