//! String comparison under a collation, the way the server orders and groups strings.
//!
//! Exact (tables generated from MariaDB 10.11's `WEIGHT_STRING`):
//! - `binary` (63): bytes, no padding;
//! - `*_bin`: bytes (= code point order for UTF-8), PAD SPACE unless `nopad`;
//! - `utf8mb4_general_ci` / `utf8mb3_general_ci` (+ `_nopad_`): one 16-bit weight per
//!   BMP character (uppercase, Latin accents stripped: `'a' = 'A' = 'á'`, `'ß' = 's'`),
//!   every supplementary character weighs U+FFFD;
//! - `latin1_swedish_ci`: the server's 256-byte weight table (`'Ä'` sorts with `'\'`).
//!
//! Approximated (documented in the merge module docs):
//! - `utf8mb4_unicode_ci` and the other UCA collations (`*_unicode_*`, `*_uca1400_*`,
//!   `*_0900_*`): exact UCA primary weights for ASCII (so punctuation sorts before
//!   digits and letters, as on the server), Latin letters with diacritics weigh as
//!   their base letter, `ß`/`æ`/`œ` expand to two letters, every other character sorts
//!   after the Latin letters by its general_ci weight. Real UCA orders those
//!   (other scripts, symbols, ignorables beyond ASCII controls) differently.
//! - any other `_ci` collation: Unicode simple uppercase mapping per character.
//! - other `_cs` / national collations: code point order.
//!
//! Caveat for callers: a result set's column definition carries the collation of the
//! *connection* (`character_set_results`), not the column's own collation (only the
//! BINARY flag reveals a `_bin` column). Whoever builds [`super::ColumnMeta`] should put
//! the column's real collation id in it when it knows it.

use super::collation_tables::{GENERAL_CI_RUNS, LATIN1_HIGH_CONTROL, LATIN1_SWEDISH_CI, UNICODE_CI_ASCII};
use mysql_common::collations::{Collation, CollationId, PadAttribute};
use std::cmp::Ordering;

/// The comparison rule of a collation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollKind {
    /// `binary`: byte strings, no padding.
    Binary,
    /// `*_bin`: bytes / code points.
    Bin,
    /// `utf8mb4_general_ci`, `utf8mb3_general_ci`: exact.
    GeneralCi,
    /// `latin1_swedish_ci`: exact.
    Latin1SwedishCi,
    /// `utf8mb4_unicode_ci` and other UCA collations: approximated.
    UnicodeCiApprox,
    /// Other case-insensitive collations: simple uppercase mapping, approximated.
    CaseFoldApprox,
}

/// A resolved collation: its rule, whether trailing spaces are ignored (PAD SPACE), and
/// how its characters are read from the bytes that arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coll {
    pub kind: CollKind,
    pub pad_space: bool,
    pub chars: Chars,
}

/// How a compared value's characters are read from its bytes: the collation's character
/// set and the one the connection sends them in (`character_set_results`) decide it,
/// never the bytes themselves (latin1 `'Ã\x9F'` is valid UTF-8 for `'ß'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chars {
    /// The bytes as they are: binary strings, UTF-8 collations sent as UTF-8.
    Bytes,
    /// A latin1 collation's characters sent as UTF-8: each back to its latin1 byte.
    Latin1FromUtf8,
    /// A latin1 collation's characters sent as latin1 bytes.
    Latin1,
    /// Sent in another character set than the collation's that the merge does not
    /// convert (a UTF-8 collation to a latin1 client, any other character set):
    /// [`Coll::is_exact`] is false.
    Foreign,
}

/// MariaDB numbers its NO PAD collations `base id + 1024`.
const MARIADB_NOPAD_OFFSET: u16 = 1024;
/// `BINARY_FLAG` of a column definition.
const BINARY_FLAG: u16 = 0x80;

/// The collation's name (`"unknown"` for ids neither MySQL nor MariaDB define).
pub fn collation_name(id: u16) -> String {
    if (MARIADB_NOPAD_OFFSET..2 * MARIADB_NOPAD_OFFSET).contains(&id) {
        let base = Collation::resolve(CollationId::from(id - MARIADB_NOPAD_OFFSET));
        if base.id() != CollationId::UNKNOWN_COLLATION_ID {
            return match base.collation().rsplit_once('_') {
                Some((head, tail)) => format!("{head}_nopad_{tail}"),
                None => base.collation().to_string(),
            };
        }
    }
    Collation::resolve(CollationId::from(id)).collation().to_string()
}

impl Coll {
    /// Resolves a collation id (MySQL's table from `mysql_common`, plus MariaDB's NO PAD
    /// ids) and the column's flags into a comparison rule.
    pub fn resolve(id: u16, flags: u16) -> Coll {
        if id == 63 {
            return Coll {
                kind: CollKind::Binary,
                pad_space: false,
                chars: Chars::Bytes,
            };
        }
        let (base_id, nopad) = if (MARIADB_NOPAD_OFFSET..2 * MARIADB_NOPAD_OFFSET).contains(&id) {
            (id - MARIADB_NOPAD_OFFSET, true)
        } else {
            (id, false)
        };
        let c = Collation::resolve(CollationId::from(base_id));
        let known = c.id() != CollationId::UNKNOWN_COLLATION_ID;
        let pad_space = !nopad && (!known || c.padding() == PadAttribute::PadSpace);
        let name = c.collation();
        let chars = if name.starts_with("latin1") {
            Chars::Latin1FromUtf8
        } else {
            Chars::Bytes
        };
        // A `_bin` column read over a non-binary connection: the definition carries the
        // connection's collation, but the BINARY flag is set.
        if flags & BINARY_FLAG != 0 || name.ends_with("_bin") {
            return Coll {
                kind: CollKind::Bin,
                pad_space,
                chars,
            };
        }
        let kind = if !known {
            CollKind::CaseFoldApprox
        } else {
            match name {
                "utf8mb4_general_ci" | "utf8_general_ci" | "utf8mb3_general_ci" => CollKind::GeneralCi,
                "latin1_swedish_ci" => CollKind::Latin1SwedishCi,
                n if n.ends_with("_ci")
                    && (n.contains("unicode") || n.contains("0900") || n.contains("uca")) =>
                {
                    CollKind::UnicodeCiApprox
                }
                n if n.ends_with("_ci") => CollKind::CaseFoldApprox,
                _ => CollKind::Bin,
            }
        };
        Coll {
            kind,
            pad_space,
            chars,
        }
    }

    /// The collation's values as they arrive in the character set of collation `wire`
    /// (the one a result column's definition announces; [`Coll::resolve`] assumes UTF-8).
    pub fn arriving_in(self, wire: u16) -> Coll {
        if self.kind == CollKind::Binary {
            return self;
        }
        let wire = collation_name(wire);
        let utf8 = wire.starts_with("utf8");
        // Under `character_set_results = binary` the bytes stay in the column's own set.
        let raw = wire == "binary";
        let chars = match self.chars {
            Chars::Latin1FromUtf8 | Chars::Latin1 if utf8 => Chars::Latin1FromUtf8,
            Chars::Latin1FromUtf8 | Chars::Latin1 if raw || wire.starts_with("latin1") => Chars::Latin1,
            Chars::Bytes if utf8 || raw => Chars::Bytes,
            _ => Chars::Foreign,
        };
        Coll { chars, ..self }
    }

    /// Whether comparisons under this collation are exactly the server's.
    pub fn is_exact(&self) -> bool {
        !matches!(self.kind, CollKind::UnicodeCiApprox | CollKind::CaseFoldApprox)
            && self.chars != Chars::Foreign
    }

    /// Compares two strings (bytes in the connection's character set, UTF-8 or latin1).
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.kind {
            CollKind::Binary => a.cmp(b),
            // latin1_bin orders latin1 bytes: `€` (0x80) before `é` (0xE9), which UTF-8
            // (U+20AC after U+00E9) would reverse.
            CollKind::Bin if self.chars == Chars::Latin1FromUtf8 => cmp_seq(
                Latin1Chars::new(a, self.chars).map(u32::from),
                Latin1Chars::new(b, self.chars).map(u32::from),
                self.pad(0x20),
            ),
            CollKind::Bin => cmp_seq(
                a.iter().map(|&x| u32::from(x)),
                b.iter().map(|&x| u32::from(x)),
                self.pad(0x20),
            ),
            CollKind::Latin1SwedishCi => cmp_seq(
                Latin1Chars::new(a, self.chars).map(|x| u32::from(LATIN1_SWEDISH_CI[usize::from(x)])),
                Latin1Chars::new(b, self.chars).map(|x| u32::from(LATIN1_SWEDISH_CI[usize::from(x)])),
                self.pad(0x20),
            ),
            CollKind::GeneralCi | CollKind::CaseFoldApprox | CollKind::UnicodeCiApprox => {
                match (std::str::from_utf8(a), std::str::from_utf8(b)) {
                    (Ok(a), Ok(b)) => match self.kind {
                        CollKind::GeneralCi => cmp_seq(
                            a.chars().map(general_ci_weight),
                            b.chars().map(general_ci_weight),
                            self.pad(0x20),
                        ),
                        CollKind::CaseFoldApprox => cmp_seq(
                            a.chars().map(simple_upper),
                            b.chars().map(simple_upper),
                            self.pad(0x20),
                        ),
                        _ => cmp_seq(
                            a.chars().flat_map(unicode_ci_weights),
                            b.chars().flat_map(unicode_ci_weights),
                            self.pad(u32::from(UNICODE_CI_ASCII[0x20])),
                        ),
                    },
                    // Not valid UTF-8: the server compares such bytes as bytes too.
                    _ => cmp_seq(
                        a.iter().map(|&x| u32::from(x)),
                        b.iter().map(|&x| u32::from(x)),
                        self.pad(0x20),
                    ),
                }
            }
        }
    }

    fn pad(&self, space: u32) -> Option<u32> {
        self.pad_space.then_some(space)
    }
}

/// Compares weight sequences; with PAD SPACE the shorter one is extended with the
/// space weight (so `'a' = 'a  '` but `'a\t' < 'a'`).
fn cmp_seq(mut a: impl Iterator<Item = u32>, mut b: impl Iterator<Item = u32>, pad: Option<u32>) -> Ordering {
    loop {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) => match x.cmp(&y) {
                Ordering::Equal => continue,
                o => return o,
            },
            (None, None) => return Ordering::Equal,
            (Some(x), None) => {
                return match pad {
                    None => Ordering::Greater,
                    Some(sp) => std::iter::once(x)
                        .chain(a)
                        .map(|w| w.cmp(&sp))
                        .find(|o| *o != Ordering::Equal)
                        .unwrap_or(Ordering::Equal),
                }
            }
            (None, Some(y)) => {
                return match pad {
                    None => Ordering::Less,
                    Some(sp) => std::iter::once(y)
                        .chain(b)
                        .map(|w| sp.cmp(&w))
                        .find(|o| *o != Ordering::Equal)
                        .unwrap_or(Ordering::Equal),
                }
            }
        }
    }
}

/// `utf8mb4_general_ci` weight of one character.
pub(super) fn general_ci_weight(c: char) -> u32 {
    let cp = u32::from(c);
    if cp < 0x80 {
        return if c.is_ascii_lowercase() { cp - 0x20 } else { cp };
    }
    if cp > 0xFFFF {
        return 0xFFFD;
    }
    let i = GENERAL_CI_RUNS.partition_point(|r| u32::from(r.0) <= cp);
    if i == 0 {
        return cp;
    }
    let (start, end, w, increasing) = GENERAL_CI_RUNS[i - 1];
    if cp > u32::from(end) {
        cp
    } else if increasing {
        u32::from(w) + (cp - u32::from(start))
    } else {
        u32::from(w)
    }
}

/// Unicode simple uppercase mapping (one character to one character), else itself.
fn simple_upper(c: char) -> u32 {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u32::from(u),
        _ => u32::from(c),
    }
}

/// Approximate `utf8mb4_unicode_ci` primary weights of one character (0..=2 weights).
fn unicode_ci_weights(c: char) -> UnicodeWeights {
    let ascii = |b: u8| u32::from(UNICODE_CI_ASCII[usize::from(b)]);
    let cp = u32::from(c);
    if cp < 0x80 {
        return UnicodeWeights::one(ascii(cp as u8));
    }
    match c {
        'ß' => return UnicodeWeights::two(ascii(b's'), ascii(b's')),
        'æ' | 'Æ' => return UnicodeWeights::two(ascii(b'a'), ascii(b'e')),
        'œ' | 'Œ' => return UnicodeWeights::two(ascii(b'o'), ascii(b'e')),
        _ => {}
    }
    let g = general_ci_weight(c);
    if g < 0x80 {
        // A Latin letter with diacritics: primary weight of the base letter.
        UnicodeWeights::one(ascii(g as u8))
    } else {
        // Beyond the Latin letters (UCA's highest ASCII weight is 0x106A for 'Z').
        UnicodeWeights::one(0x2000 + g)
    }
}

/// Up to two weights; a weight of 0 is ignorable and skipped.
struct UnicodeWeights {
    w: [u32; 2],
    i: usize,
}

impl UnicodeWeights {
    fn one(a: u32) -> Self {
        UnicodeWeights { w: [a, 0], i: 0 }
    }
    fn two(a: u32, b: u32) -> Self {
        UnicodeWeights { w: [a, b], i: 0 }
    }
}

impl Iterator for UnicodeWeights {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        while self.i < 2 {
            let w = self.w[self.i];
            self.i += 1;
            if w != 0 {
                return Some(w);
            }
        }
        None
    }
}

/// The latin1 bytes of a string: decoded from UTF-8 when it arrives as UTF-8 (the
/// server's conversion of latin1 always is valid UTF-8), else the bytes themselves.
/// Characters latin1 cannot represent become `?`, as the server's conversion does.
enum Latin1Chars<'a> {
    Utf8(std::str::Chars<'a>),
    Raw(std::slice::Iter<'a, u8>),
}

impl<'a> Latin1Chars<'a> {
    fn new(s: &'a [u8], chars: Chars) -> Self {
        match (chars, std::str::from_utf8(s)) {
            (Chars::Latin1FromUtf8, Ok(t)) => Latin1Chars::Utf8(t.chars()),
            _ => Latin1Chars::Raw(s.iter()),
        }
    }
}

impl Iterator for Latin1Chars<'_> {
    type Item = u8;
    fn next(&mut self) -> Option<u8> {
        match self {
            Latin1Chars::Raw(it) => it.next().copied(),
            Latin1Chars::Utf8(it) => it.next().map(latin1_byte),
        }
    }
}

/// UTF-8 text of latin1 characters as latin1 bytes (see [`latin1_byte`]).
pub(super) fn to_latin1(utf8: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(utf8).chars().map(latin1_byte).collect()
}

/// Latin1 bytes as UTF-8, as the server converts them (0x80–0x9F are cp1252's).
pub(super) fn latin1_to_utf8(latin1: &[u8]) -> Vec<u8> {
    latin1
        .iter()
        .map(|&b| match b {
            0x80..=0x9F => {
                char::from_u32(u32::from(LATIN1_HIGH_CONTROL[usize::from(b - 0x80)])).unwrap_or('?')
            }
            _ => char::from(b),
        })
        .collect::<String>()
        .into_bytes()
}

/// A character's latin1 byte (`?` where latin1 has none).
fn latin1_byte(c: char) -> u8 {
    let cp = u32::from(c);
    if cp < 0x80 || (0xA0..=0xFF).contains(&cp) {
        return cp as u8;
    }
    LATIN1_HIGH_CONTROL
        .iter()
        .position(|&u| u32::from(u) == cp)
        .map_or(b'?', |i| 0x80 + i as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    const UTF8MB4_GENERAL_CI: u16 = 45;
    const UTF8MB4_BIN: u16 = 46;
    const UTF8MB4_UNICODE_CI: u16 = 224;
    const LATIN1_SWEDISH: u16 = 8;

    fn cmp(id: u16, a: &str, b: &str) -> Ordering {
        Coll::resolve(id, 0).compare(a.as_bytes(), b.as_bytes())
    }

    #[test]
    fn resolves_ids() {
        assert_eq!(Coll::resolve(63, 0x80).kind, CollKind::Binary);
        assert!(!Coll::resolve(63, 0).pad_space);
        assert_eq!(Coll::resolve(UTF8MB4_BIN, 0).kind, CollKind::Bin);
        assert!(Coll::resolve(UTF8MB4_BIN, 0).pad_space);
        assert_eq!(Coll::resolve(UTF8MB4_GENERAL_CI, 0).kind, CollKind::GeneralCi);
        assert_eq!(Coll::resolve(33, 0).kind, CollKind::GeneralCi);
        assert_eq!(Coll::resolve(LATIN1_SWEDISH, 0).kind, CollKind::Latin1SwedishCi);
        assert_eq!(
            Coll::resolve(UTF8MB4_UNICODE_CI, 0).kind,
            CollKind::UnicodeCiApprox
        );
        // A utf8mb4_bin column over a utf8mb4_general_ci connection.
        assert_eq!(Coll::resolve(UTF8MB4_GENERAL_CI, 0x80).kind, CollKind::Bin);
        // MariaDB NO PAD ids.
        let nopad = Coll::resolve(1069, 0);
        assert_eq!(nopad.kind, CollKind::GeneralCi);
        assert!(!nopad.pad_space);
        assert_eq!(collation_name(1069), "utf8mb4_general_nopad_ci");
        assert_eq!(collation_name(1070), "utf8mb4_nopad_bin");
        assert_eq!(collation_name(45), "utf8mb4_general_ci");
        assert_eq!(Coll::resolve(1070, 0).kind, CollKind::Bin);
        assert!(!Coll::resolve(1070, 0).pad_space);
        // Unknown ids: case-insensitive approximation with PAD SPACE.
        assert_eq!(Coll::resolve(4000, 0).kind, CollKind::CaseFoldApprox);
        assert!(Coll::resolve(45, 0).is_exact());
        assert!(!Coll::resolve(224, 0).is_exact());
    }

    /// Each expectation checked with `SELECT 'x' COLLATE c = 'y'`, `< ` on MariaDB 10.11.
    #[test]
    fn general_ci() {
        let g = UTF8MB4_GENERAL_CI;
        assert_eq!(cmp(g, "a", "A"), Equal);
        assert_eq!(cmp(g, "a ", "a"), Equal); // PAD SPACE
        assert_eq!(cmp(g, "a", "a   "), Equal);
        assert_eq!(cmp(g, "a\t", "a"), Less); // tab weighs less than the pad space
        assert_eq!(cmp(g, "abc", "ABD"), Less);
        assert_eq!(cmp(g, "é", "E"), Equal);
        assert_eq!(cmp(g, "ß", "s"), Equal);
        assert_eq!(cmp(g, "Straße", "STRASE"), Equal);
        assert_eq!(cmp(g, "a", "_"), Less); // 'A' (0x41) < '_' (0x5F)
        assert_eq!(cmp(g, "z", "ä"), Greater);
        assert_eq!(cmp(g, "ǅ", "ǆ"), Equal);
        assert_eq!(cmp(g, "😀", "😃"), Equal); // supplementary: all U+FFFD
        assert_eq!(cmp(g, "😀", "\u{FFFD}"), Equal);
        assert_eq!(cmp(g, "ω", "Ω"), Equal);
        assert_eq!(cmp(g, "б", "Б"), Equal);
        assert_eq!(cmp(g, "", " "), Equal);
        assert_eq!(cmp(g, "", "a"), Less);
        // NO PAD variant.
        assert_eq!(cmp(1069, "a ", "a"), Greater);
        assert_eq!(cmp(1069, "a", "A"), Equal);
    }

    #[test]
    fn ascii_fast_path_matches_table() {
        for cp in 0u32..0x80 {
            let c = char::from_u32(cp).unwrap_or('?');
            let i = GENERAL_CI_RUNS.partition_point(|r| u32::from(r.0) <= cp);
            let table = if i == 0 || cp > u32::from(GENERAL_CI_RUNS[i - 1].1) {
                cp
            } else {
                let (s, _, w, inc) = GENERAL_CI_RUNS[i - 1];
                if inc {
                    u32::from(w) + cp - u32::from(s)
                } else {
                    u32::from(w)
                }
            };
            assert_eq!(general_ci_weight(c), table, "{cp:#x}");
        }
    }

    #[test]
    fn bin_and_binary() {
        assert_eq!(cmp(UTF8MB4_BIN, "a", "A"), Greater);
        assert_eq!(cmp(UTF8MB4_BIN, "a ", "a"), Equal); // _bin is PAD SPACE
        assert_eq!(cmp(63, "a ", "a"), Greater); // binary is not
        assert_eq!(cmp(UTF8MB4_BIN, "é", "z"), Greater); // code point order
        let bin = Coll::resolve(63, 0);
        assert_eq!(bin.compare(&[0xFF], &[0x00, 0x01]), Greater);
    }

    #[test]
    fn latin1_swedish() {
        let l = LATIN1_SWEDISH;
        assert_eq!(cmp(l, "a", "A"), Equal);
        assert_eq!(cmp(l, "å", "Å"), Equal);
        assert_eq!(cmp(l, "ä", "z"), Greater); // Swedish: å ä ö after z
        assert_eq!(cmp(l, "ö", "ä"), Greater);
        assert_eq!(cmp(l, "ü", "y"), Equal);
        assert_eq!(cmp(l, "é", "e"), Equal);
        assert_eq!(cmp(l, "b ", "B"), Equal);
        // Raw latin1 bytes (a latin1 connection) compare the same way, and are never
        // read as UTF-8: latin1 'Ã\x9F' is valid UTF-8 for 'ß' (after 'z' here).
        let c = Coll::resolve(l, 0).arriving_in(l);
        assert_eq!(c.chars, Chars::Latin1);
        assert_eq!(c.compare(&[0xE4], b"z"), Greater);
        assert_eq!(c.compare(&[0xE4], &[0xC4]), Equal);
        assert_eq!(c.compare("ß".as_bytes(), b"zz"), Less);
        assert_eq!(
            Coll::resolve(l, 0)
                .arriving_in(UTF8MB4_GENERAL_CI)
                .compare("ß".as_bytes(), b"zz"),
            Greater
        );
    }

    #[test]
    fn latin1_bin_orders_latin1_bytes() {
        const LATIN1_BIN: u16 = 47;
        let utf8 = Coll::resolve(LATIN1_BIN, 0).arriving_in(UTF8MB4_GENERAL_CI);
        assert_eq!(utf8.compare("€".as_bytes(), "é".as_bytes()), Less); // 0x80 < 0xE9
        let raw = Coll::resolve(LATIN1_BIN, 0).arriving_in(LATIN1_BIN);
        assert_eq!(raw.compare(&[0x80], &[0xE9]), Less);
        assert_eq!(to_latin1("€é".as_bytes()), vec![0x80, 0xE9]);
        assert_eq!(latin1_to_utf8(&[0x80, 0xE9, b'a']), "€éa".as_bytes());
    }

    #[test]
    fn strings_sent_in_another_character_set_are_not_exact() {
        // A utf8mb4 column to a latin1 client; anything to a cp1251 one (id 51).
        assert!(!Coll::resolve(UTF8MB4_GENERAL_CI, 0)
            .arriving_in(LATIN1_SWEDISH)
            .is_exact());
        assert!(!Coll::resolve(LATIN1_SWEDISH, 0).arriving_in(51).is_exact());
        assert!(Coll::resolve(UTF8MB4_GENERAL_CI, 0)
            .arriving_in(UTF8MB4_BIN)
            .is_exact());
        assert!(Coll::resolve(63, 0).arriving_in(LATIN1_SWEDISH).is_exact());
    }

    #[test]
    fn unicode_ci_approximation() {
        let u = UTF8MB4_UNICODE_CI;
        assert_eq!(cmp(u, "a", "A"), Equal);
        assert_eq!(cmp(u, "a ", "a"), Equal);
        assert_eq!(cmp(u, "_", "a"), Less); // punctuation before letters (unlike general_ci)
        assert_eq!(cmp(u, "9", "a"), Less);
        assert_eq!(cmp(u, "ß", "ss"), Equal);
        assert_eq!(cmp(u, "Ä", "a"), Equal);
        assert_eq!(cmp(u, "æ", "AE"), Equal);
        assert_eq!(cmp(u, "b", "Á"), Greater);
        assert_eq!(cmp(u, "a\u{1}", "a"), Equal); // ASCII controls are ignorable
    }

    #[test]
    fn invalid_utf8_falls_back_to_bytes() {
        let c = Coll::resolve(UTF8MB4_GENERAL_CI, 0);
        assert_eq!(c.compare(&[0xFF, b'a'], &[0xFF, b'b']), Less);
        assert_eq!(c.compare(&[0xFF], &[0xFF, b' ']), Equal);
    }
}
