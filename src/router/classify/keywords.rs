//! The words the classifier looks at, found by a perfect hash of the packed word.

/// The words the classifier looks at; every other word is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kw {
    None,
    Warnings,
    All,
    Analyze,
    And,
    As,
    Backup,
    Begin,
    Binary,
    Binlog,
    By,
    Chain,
    Character,
    Charset,
    Commit,
    Consistent,
    Count,
    Create,
    Current,
    Default,
    Delete,
    Desc,
    Describe,
    Diagnostics,
    Dual,
    Errors,
    Except,
    Explain,
    Export,
    Fetch,
    Flush,
    For,
    Force,
    From,
    Full,
    Get,
    Global,
    Group,
    Having,
    Help,
    Ignore,
    In,
    Index,
    Insert,
    Instance,
    Intersect,
    Into,
    Join,
    Key,
    Lateral,
    Limit,
    Local,
    Lock,
    Master,
    Mode,
    Names,
    Next,
    No,
    On,
    Only,
    Or,
    Order,
    Password,
    Persist,
    PersistOnly,
    Previous,
    Procedure,
    Processlist,
    Profile,
    Profiles,
    Read,
    Recursive,
    Relaylog,
    Release,
    Replace,
    Replica,
    Replicas,
    Role,
    Rollback,
    Select,
    Session,
    Set,
    Share,
    Show,
    Slave,
    Slaves,
    Snapshot,
    SqlCalcFoundRows,
    Stacked,
    Start,
    Statement,
    StraightJoin,
    SystemTime,
    Table,
    Tables,
    Temporary,
    Transaction,
    Union,
    Unlock,
    Update,
    Use,
    Using,
    Value,
    Values,
    Where,
    Window,
    With,
    Work,
    Write,
    GetLock,
    ReleaseLock,
    IsFreeLock,
    IsUsedLock,
    ReleaseAllLocks,
    LastInsertId,
    FoundRows,
    RowCount,
    Nextval,
    Lastval,
    Setval,
    MasterPosWait,
    MasterGtidWait,
    SourcePosWait,
    WaitForExecutedGtidSet,
    WaitUntilSqlThreadAfterGtids,
}

/// Sorted by bytes (upper case), at most 255 of them.
pub(super) const KEYWORDS: &[(&[u8], Kw)] = &[
    (b"ALL", Kw::All),
    (b"ANALYZE", Kw::Analyze),
    (b"AND", Kw::And),
    (b"AS", Kw::As),
    (b"BACKUP", Kw::Backup),
    (b"BEGIN", Kw::Begin),
    (b"BINARY", Kw::Binary),
    (b"BINLOG", Kw::Binlog),
    (b"BY", Kw::By),
    (b"CHAIN", Kw::Chain),
    (b"CHARACTER", Kw::Character),
    (b"CHARSET", Kw::Charset),
    (b"COMMIT", Kw::Commit),
    (b"CONSISTENT", Kw::Consistent),
    (b"COUNT", Kw::Count),
    (b"CREATE", Kw::Create),
    (b"CURRENT", Kw::Current),
    (b"DEFAULT", Kw::Default),
    (b"DELETE", Kw::Delete),
    (b"DESC", Kw::Desc),
    (b"DESCRIBE", Kw::Describe),
    (b"DIAGNOSTICS", Kw::Diagnostics),
    (b"DUAL", Kw::Dual),
    (b"ERRORS", Kw::Errors),
    (b"EXCEPT", Kw::Except),
    (b"EXPLAIN", Kw::Explain),
    (b"EXPORT", Kw::Export),
    (b"FETCH", Kw::Fetch),
    (b"FLUSH", Kw::Flush),
    (b"FOR", Kw::For),
    (b"FORCE", Kw::Force),
    (b"FOUND_ROWS", Kw::FoundRows),
    (b"FROM", Kw::From),
    (b"FULL", Kw::Full),
    (b"GET", Kw::Get),
    (b"GET_LOCK", Kw::GetLock),
    (b"GLOBAL", Kw::Global),
    (b"GROUP", Kw::Group),
    (b"HAVING", Kw::Having),
    (b"HELP", Kw::Help),
    (b"IGNORE", Kw::Ignore),
    (b"IN", Kw::In),
    (b"INDEX", Kw::Index),
    (b"INSERT", Kw::Insert),
    (b"INSTANCE", Kw::Instance),
    (b"INTERSECT", Kw::Intersect),
    (b"INTO", Kw::Into),
    (b"IS_FREE_LOCK", Kw::IsFreeLock),
    (b"IS_USED_LOCK", Kw::IsUsedLock),
    (b"JOIN", Kw::Join),
    (b"KEY", Kw::Key),
    (b"LASTVAL", Kw::Lastval),
    (b"LAST_INSERT_ID", Kw::LastInsertId),
    (b"LATERAL", Kw::Lateral),
    (b"LIMIT", Kw::Limit),
    (b"LOCAL", Kw::Local),
    (b"LOCK", Kw::Lock),
    (b"MASTER", Kw::Master),
    (b"MASTER_GTID_WAIT", Kw::MasterGtidWait),
    (b"MASTER_POS_WAIT", Kw::MasterPosWait),
    (b"MODE", Kw::Mode),
    (b"NAMES", Kw::Names),
    (b"NEXT", Kw::Next),
    (b"NEXTVAL", Kw::Nextval),
    (b"NO", Kw::No),
    (b"ON", Kw::On),
    (b"ONLY", Kw::Only),
    (b"OR", Kw::Or),
    (b"ORDER", Kw::Order),
    (b"PASSWORD", Kw::Password),
    (b"PERSIST", Kw::Persist),
    (b"PERSIST_ONLY", Kw::PersistOnly),
    (b"PREVIOUS", Kw::Previous),
    (b"PROCEDURE", Kw::Procedure),
    (b"PROCESSLIST", Kw::Processlist),
    (b"PROFILE", Kw::Profile),
    (b"PROFILES", Kw::Profiles),
    (b"READ", Kw::Read),
    (b"RECURSIVE", Kw::Recursive),
    (b"RELAYLOG", Kw::Relaylog),
    (b"RELEASE", Kw::Release),
    (b"RELEASE_ALL_LOCKS", Kw::ReleaseAllLocks),
    (b"RELEASE_LOCK", Kw::ReleaseLock),
    (b"REPLACE", Kw::Replace),
    (b"REPLICA", Kw::Replica),
    (b"REPLICAS", Kw::Replicas),
    (b"ROLE", Kw::Role),
    (b"ROLLBACK", Kw::Rollback),
    (b"ROW_COUNT", Kw::RowCount),
    (b"SELECT", Kw::Select),
    (b"SESSION", Kw::Session),
    (b"SET", Kw::Set),
    (b"SETVAL", Kw::Setval),
    (b"SHARE", Kw::Share),
    (b"SHOW", Kw::Show),
    (b"SLAVE", Kw::Slave),
    (b"SLAVES", Kw::Slaves),
    (b"SNAPSHOT", Kw::Snapshot),
    (b"SOURCE_POS_WAIT", Kw::SourcePosWait),
    (b"SQL_CALC_FOUND_ROWS", Kw::SqlCalcFoundRows),
    (b"STACKED", Kw::Stacked),
    (b"START", Kw::Start),
    (b"STATEMENT", Kw::Statement),
    (b"STRAIGHT_JOIN", Kw::StraightJoin),
    (b"SYSTEM_TIME", Kw::SystemTime),
    (b"TABLE", Kw::Table),
    (b"TABLES", Kw::Tables),
    (b"TEMPORARY", Kw::Temporary),
    (b"TRANSACTION", Kw::Transaction),
    (b"UNION", Kw::Union),
    (b"UNLOCK", Kw::Unlock),
    (b"UPDATE", Kw::Update),
    (b"USE", Kw::Use),
    (b"USING", Kw::Using),
    (b"VALUE", Kw::Value),
    (b"VALUES", Kw::Values),
    (b"WAIT_FOR_EXECUTED_GTID_SET", Kw::WaitForExecutedGtidSet),
    (
        b"WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS",
        Kw::WaitUntilSqlThreadAfterGtids,
    ),
    (b"WARNINGS", Kw::Warnings),
    (b"WHERE", Kw::Where),
    (b"WINDOW", Kw::Window),
    (b"WITH", Kw::With),
    (b"WORK", Kw::Work),
    (b"WRITE", Kw::Write),
];

/// The longest keyword.
pub(super) const MAX_KEYWORD: usize = 33;

/// The first 16 bytes of a word, upper-cased, big-endian and zero-padded: the
/// keys sort as the words do, and words of up to 16 bytes map one-to-one.
pub(super) const fn pack(w: &[u8]) -> u128 {
    let mut key = 0u128;
    let mut i = 0;
    while i < 16 {
        let b = if i < w.len() { w[i].to_ascii_uppercase() } else { 0 };
        key = (key << 8) | b as u128;
        i += 1;
    }
    key
}

pub(super) const ONES: u128 = u128::MAX / 255;

/// [`pack`], branch-free: load, then upper-case the ASCII letters of all 16
/// bytes at once (bytes >= 0x80 are left alone; no keyword has them).
pub(super) fn pack_fast(w: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    let n = w.len().min(16);
    buf[..n].copy_from_slice(&w[..n]);
    let x = u128::from_be_bytes(buf);
    let low7 = x & (ONES * 0x7f);
    let ge_a = low7 + ONES * (0x80 - b'a' as u128);
    let gt_z = low7 + ONES * (0x80 - b'z' as u128 - 1);
    let lower = ge_a & !gt_z & !x & (ONES * 0x80);
    x ^ (lower >> 2)
}

/// [`KEYWORDS`] packed.
pub(super) const KEYS: [u128; KEYWORDS.len()] = {
    let mut keys = [0u128; KEYWORDS.len()];
    let mut i = 0;
    while i < KEYWORDS.len() {
        keys[i] = pack(KEYWORDS[i].0);
        i += 1;
    }
    keys
};

/// Keyword lookup: a perfect hash of the packed word into [`SLOTS`]. If a
/// new keyword makes two collide, the build fails: run the ignored test
/// `find_keyword_hash` for a new multiplier.
pub(super) const HASH_MUL: u64 = 0x0af9_b4c9_b980_a54b;
pub(super) const SLOT_BITS: u32 = 10;

pub(super) const fn slot(key: u128) -> usize {
    slot_with(key, HASH_MUL)
}

pub(super) const fn slot_with(key: u128, mul: u64) -> usize {
    let mixed = (key >> 64) as u64 ^ key as u64;
    (mixed.wrapping_mul(mul) >> (64 - SLOT_BITS)) as usize
}

/// [`KEYS`] in memory, for lookups at run time.
pub(super) static PACKED: [u128; KEYWORDS.len()] = KEYS;

/// Index + 1 into [`KEYWORDS`] per slot; 0 for none.
pub(super) static SLOTS: [u8; 1 << SLOT_BITS] = {
    let mut slots = [0u8; 1 << SLOT_BITS];
    let mut i = 0;
    while i < KEYWORDS.len() {
        let s = slot(KEYS[i]);
        assert!(slots[s] == 0, "keyword hash collision: change HASH_MUL");
        slots[s] = (i + 1) as u8;
        i += 1;
    }
    slots
};

pub(super) fn keyword(w: &[u8]) -> Kw {
    if w.is_empty() || w.len() > MAX_KEYWORD {
        return Kw::None;
    }
    let key = pack_fast(w);
    let i = usize::from(SLOTS[slot(key)]);
    if i == 0 {
        return Kw::None;
    }
    match (PACKED.get(i - 1), KEYWORDS.get(i - 1)) {
        (Some(&k), Some((word, kw)))
            if k == key && word.len() == w.len() && (w.len() <= 16 || word.eq_ignore_ascii_case(w)) =>
        {
            *kw
        }
        _ => Kw::None,
    }
}
