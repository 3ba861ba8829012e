//! Text read under both sql_mode readings.

use super::*;

#[test]
fn backslash_ambiguity_goes_to_the_master() {
    // One string under the default sql_mode, but a multi-statement with a
    // DELETE under NO_BACKSLASH_ESCAPES: never a replica read.
    let c = classify_any_mode(b"SELECT 'a\\' ; DELETE FROM t; -- '");
    assert_eq!(c.kind, Kind::Write);
    // Unambiguous backslashes keep their reading.
    let c = classify_any_mode(b"SELECT 'a\\\\b' FROM t");
    assert_eq!(c.kind, Kind::Read);
    assert_eq!(c.force_master, None);
    assert_eq!(classify_any_mode(b"SELECT 1").kind, Kind::Read);
}

/// Found by the `classify` fuzz target: a disagreement kept the default
/// reading's table list (tables are only for reads) and lost the other
/// reading's effects.
#[test]
fn backslash_ambiguity_keeps_both_readings_effects() {
    let c = classify_any_mode(b"SELECT \"a\\\" ; DELETE FROM t; -- \"");
    assert_eq!(c.kind, Kind::Write);
    assert_eq!(c.tables, None);
    assert!(c.multi_statement);
    assert_eq!(c.force_master, Some(RouteReason::MultiStatement));

    // Under NO_BACKSLASH_ESCAPES this creates a temporary table, sets a
    // user variable, takes a named lock: the session must be pinned.
    let c = classify_any_mode(b"SELECT 'a\\' ; CREATE TEMPORARY TABLE tt (a INT); -- '");
    assert!(c.creates_temp_table);
    let c = classify_any_mode(b"SELECT 'a\\' ; SET @x = 1; -- '");
    assert!(c.sets_user_variable);
    let c = classify_any_mode(b"SELECT 'a\\', GET_LOCK('n', 1) -- '");
    assert!(c.takes_named_lock);
    assert_eq!(c.kind, Kind::Write);

    // A statement about the previous one under one reading only is not
    // sent to the previous statement's connection: it may be a write.
    let c = classify_any_mode(b"SELECT @@warning_count, 'a\\' ; DELETE FROM t; -- '");
    assert!(classify(b"SELECT @@warning_count, 'a\\' ; DELETE FROM t; -- '").refers_to_previous);
    assert!(!c.refers_to_previous);
    assert_eq!(c.kind, Kind::Write);

    // autocommit only when both readings agree.
    let c = classify_any_mode(b"SET autocommit = 0, @v = 'a\\' ; SET autocommit = 1; -- '");
    assert_eq!(c.autocommit, None);
}
