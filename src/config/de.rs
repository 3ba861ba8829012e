//! Deserialization hooks that validate while serde_yaml_ng still knows where
//! the value is: an error returned from inside a `Visitor` is stamped with the
//! line and column of the scalar, mapping or list being visited. An error
//! returned after `deserialize` has come back would instead be blamed on the
//! enclosing mapping, possibly many lines away.

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A kind of scalar with its own parser, used as `deserialize_with =
/// "de::parse::<Kind, _>"`.
pub(super) trait ScalarKind {
    type Out;
    /// Completes "expected ..." in serde's type errors.
    const EXPECTING: &'static str;
    fn parse(text: &str) -> Result<Self::Out, String>;
}

/// Deserializes a scalar and parses it with `K`, keeping the error's position.
pub(super) fn parse<'de, K: ScalarKind, D: Deserializer<'de>>(d: D) -> Result<K::Out, D::Error> {
    d.deserialize_str(ScalarVisitor::<K>(PhantomData))
}

/// Like [`parse`] for an optional field (`null` or absent gives `None`).
pub(super) fn parse_opt<'de, K: ScalarKind, D: Deserializer<'de>>(d: D) -> Result<Option<K::Out>, D::Error> {
    d.deserialize_option(OptionVisitor::<K>(PhantomData))
}

struct ScalarVisitor<K>(PhantomData<K>);

impl<K: ScalarKind> Visitor<'_> for ScalarVisitor<K> {
    type Value = K::Out;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(K::EXPECTING)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<K::Out, E> {
        K::parse(text).map_err(E::custom)
    }

    // serde_yaml_ng hands plain scalars such as `5` over as strings, but other
    // paths (anchors, merges) may yield numbers: give them the same parser so
    // that `timeout: 5` gets "no unit", not a type error.
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<K::Out, E> {
        self.visit_str(&n.to_string())
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<K::Out, E> {
        self.visit_str(&n.to_string())
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<K::Out, E> {
        self.visit_str(&n.to_string())
    }
}

struct OptionVisitor<K>(PhantomData<K>);

impl<'de, K: ScalarKind> Visitor<'de> for OptionVisitor<K> {
    type Value = Option<K::Out>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(K::EXPECTING)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        parse::<K, D>(d).map(Some)
    }
}

/// A listener address: an IP and a port (names are not resolved for listeners).
pub(super) struct ListenAddr;

impl ScalarKind for ListenAddr {
    type Out = SocketAddr;
    const EXPECTING: &'static str = "an IP:PORT address such as 127.0.0.1:6033";

    fn parse(text: &str) -> Result<SocketAddr, String> {
        text.parse().map_err(|_| {
            format!(
                "invalid listen address `{text}`: \
                 expected IP:PORT, e.g. 127.0.0.1:6033 or [::1]:6033"
            )
        })
    }
}

/// A backend address `host:port`, kept as written and resolved at connect time.
pub(super) struct HostPort;

impl ScalarKind for HostPort {
    type Out = String;
    const EXPECTING: &'static str = "a HOST:PORT address such as 127.0.0.1:3306";

    fn parse(text: &str) -> Result<String, String> {
        let usage = "expected HOST:PORT, e.g. 127.0.0.1:3306, db1.example:3306 or [::1]:3306";
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("address `{text}` has no port: {usage}"))?;
        let port_ok = port.parse::<u16>().is_ok_and(|p| p != 0);
        if !port_ok {
            return Err(format!("address `{text}` has an invalid port `{port}`: {usage}"));
        }
        let bracketed = host.starts_with('[') && host.ends_with(']') && host.len() > 2;
        if host.is_empty() || (host.contains(':') && !bracketed) || host.contains(char::is_whitespace) {
            return Err(format!("address `{text}` has an invalid host: {usage}"));
        }
        Ok(text.to_owned())
    }
}

/// A non-empty name without surrounding whitespace (users, groups, logins).
pub(super) struct Name;

impl ScalarKind for Name {
    type Out = String;
    const EXPECTING: &'static str = "a name";

    fn parse(text: &str) -> Result<String, String> {
        if text.is_empty() {
            return Err("a name cannot be empty".to_owned());
        }
        if text.trim() != text {
            return Err(format!("name `{text}` has leading or trailing whitespace"));
        }
        Ok(text.to_owned())
    }
}

/// A `*HEX40` mysql_native_password hash.
pub(super) struct NativeHash;

impl ScalarKind for NativeHash {
    type Out = [u8; 20];
    const EXPECTING: &'static str = "a `*` followed by 40 hex digits";

    fn parse(text: &str) -> Result<[u8; 20], String> {
        super::parse_native_hash(text)
    }
}

/// A duration that must be greater than zero (a zero timeout would fail every
/// attempt, which is never what was meant).
pub(super) struct Timeout;

impl ScalarKind for Timeout {
    type Out = Duration;
    const EXPECTING: &'static str = "a duration such as \"2s\" or \"500ms\"";

    fn parse(text: &str) -> Result<Duration, String> {
        let duration = super::parse_duration(text)?;
        if duration.is_zero() {
            return Err(format!("timeout `{text}` must be greater than zero"));
        }
        Ok(duration)
    }
}

/// A period that must be greater than zero (a zero interval would spin).
pub(super) struct Interval;

impl ScalarKind for Interval {
    type Out = Duration;
    const EXPECTING: &'static str = "a duration such as \"50ms\"";

    fn parse(text: &str) -> Result<Duration, String> {
        let duration = super::parse_duration(text)?;
        if duration.is_zero() {
            return Err(format!("interval `{text}` must be greater than zero"));
        }
        Ok(duration)
    }
}

/// Any duration, zero included.
pub(super) struct AnyDuration;

impl ScalarKind for AnyDuration {
    type Out = Duration;
    const EXPECTING: &'static str = "a duration such as \"0ms\" or \"100ms\"";

    fn parse(text: &str) -> Result<Duration, String> {
        super::parse_duration(text)
    }
}

/// A schema name sluice creates tables in: a valid MySQL identifier that is
/// not a system schema.
pub(super) struct SchemaName;

impl ScalarKind for SchemaName {
    type Out = String;
    const EXPECTING: &'static str = "a schema name such as sluice";

    fn parse(text: &str) -> Result<String, String> {
        if text.is_empty() {
            return Err("a schema name cannot be empty".to_owned());
        }
        if text.chars().count() > 64 {
            return Err(format!("schema name `{text}` is longer than 64 characters"));
        }
        if text.ends_with(' ') || text.contains('\0') {
            return Err(format!(
                "schema name `{text}` cannot end with a space or contain a NUL character"
            ));
        }
        let system = ["mysql", "information_schema", "performance_schema", "sys"];
        if system.iter().any(|s| s.eq_ignore_ascii_case(text)) {
            return Err(format!(
                "`{text}` is a system schema: choose another, e.g. sluice"
            ));
        }
        Ok(text.to_owned())
    }
}

/// An `EnvFilter` directive, checked now so that a typo fails `check-config`
/// instead of the start of `serve`.
pub(super) struct LogLevel;

impl ScalarKind for LogLevel {
    type Out = String;
    const EXPECTING: &'static str = "a log level such as info or sluice=debug";

    fn parse(text: &str) -> Result<String, String> {
        tracing_subscriber::EnvFilter::try_new(text)
            .map(|_| text.to_owned())
            .map_err(|e| format!("invalid log level `{text}`: {e} (e.g. info, debug, sluice=debug)"))
    }
}

/// A secret such as the admin token: long enough not to be guessed, and
/// free of blanks (it travels in an HTTP header).
pub(super) struct Secret;

impl ScalarKind for Secret {
    type Out = String;
    const EXPECTING: &'static str = "a token of at least 16 characters";

    fn parse(text: &str) -> Result<String, String> {
        if text.len() < 16 {
            return Err("the admin token must have at least 16 characters".to_owned());
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the admin token must be printable ASCII without blanks".to_owned());
        }
        Ok(text.to_owned())
    }
}

/// A file path that is not empty.
pub(super) struct FilePath;

impl ScalarKind for FilePath {
    type Out = PathBuf;
    const EXPECTING: &'static str = "a file path";

    fn parse(text: &str) -> Result<PathBuf, String> {
        if text.trim().is_empty() {
            return Err("a file path cannot be empty".to_owned());
        }
        Ok(PathBuf::from(text))
    }
}

/// A packet size in bytes, with an optional binary unit as MariaDB writes
/// `max_allowed_packet`: `65536`, `64K`, `64M`, `1G`. 1K..=1G.
pub(super) struct PacketSize;

impl ScalarKind for PacketSize {
    type Out = usize;
    const EXPECTING: &'static str = "a size such as 64M";

    fn parse(text: &str) -> Result<usize, String> {
        let usage = "write bytes or a number with K, M or G (1024-based), e.g. 16M; from 1K to 1G";
        let s = text.trim();
        let (number, shift) = match s.char_indices().last() {
            Some((i, 'k' | 'K')) => (&s[..i], 10),
            Some((i, 'm' | 'M')) => (&s[..i], 20),
            Some((i, 'g' | 'G')) => (&s[..i], 30),
            _ => (s, 0),
        };
        let n: u64 = number
            .parse()
            .map_err(|_| format!("invalid size `{text}`: {usage}"))?;
        let bytes = n.checked_shl(shift).filter(|b| b >> shift == n);
        match bytes {
            Some(b) if (1 << 10..=1 << 30).contains(&b) => {
                usize::try_from(b).map_err(|_| format!("size `{text}` is too large: {usage}"))
            }
            _ => Err(format!("size `{text}` is out of range: {usage}")),
        }
    }
}

/// Deserializes a mapping as `T` (unknown keys and value errors keep their
/// own positions), then checks it as a whole with `finish`; an error from
/// `finish` names the mapping's line.
pub(super) fn checked_map<'de, T, O, D>(d: D, finish: fn(T) -> Result<O, String>) -> Result<O, D::Error>
where
    T: DeserializeOwned,
    D: Deserializer<'de>,
{
    d.deserialize_map(CheckedMapVisitor(finish, PhantomData))
}

struct CheckedMapVisitor<T, O>(fn(T) -> Result<O, String>, PhantomData<T>);

impl<'de, T: DeserializeOwned, O> Visitor<'de> for CheckedMapVisitor<T, O> {
    type Value = O;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<O, A::Error> {
        let item = T::deserialize(MapAccessDeserializer::new(map))?;
        (self.0)(item).map_err(de::Error::custom)
    }
}

/// Deserializes a positive integer (`pool_max`, `weight`): zero is rejected
/// where the zero is written.
pub(super) fn positive<'de, T, D>(d: D) -> Result<T, D::Error>
where
    T: TryFrom<u64>,
    D: Deserializer<'de>,
{
    d.deserialize_u64(PositiveVisitor::<T>(PhantomData))
}

struct PositiveVisitor<T>(PhantomData<T>);

impl<T: TryFrom<u64>> Visitor<'_> for PositiveVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a positive integer")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        if n == 0 {
            return Err(E::custom("must be at least 1"));
        }
        T::try_from(n).map_err(|_| E::custom(format!("{n} is too large")))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::custom(format!("{n} is negative: must be at least 1"))),
        }
    }
}

/// Deserializes an integer in `MIN..=MAX` (e.g. `slots`), rejected where it
/// is written.
pub(super) fn bounded<'de, T, const MIN: u64, const MAX: u64, D>(d: D) -> Result<T, D::Error>
where
    T: TryFrom<u64>,
    D: Deserializer<'de>,
{
    d.deserialize_u64(BoundedVisitor::<T, MIN, MAX>(PhantomData))
}

struct BoundedVisitor<T, const MIN: u64, const MAX: u64>(PhantomData<T>);

impl<T: TryFrom<u64>, const MIN: u64, const MAX: u64> Visitor<'_> for BoundedVisitor<T, MIN, MAX> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer from {MIN} to {MAX}")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        if !(MIN..=MAX).contains(&n) {
            return Err(E::custom(format!(
                "{n} is out of range: must be from {MIN} to {MAX}"
            )));
        }
        T::try_from(n).map_err(|_| E::custom(format!("{n} is too large")))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::custom(format!(
                "{n} is out of range: must be from {MIN} to {MAX}"
            ))),
        }
    }
}

/// An element of a list whose elements have unique names (users, groups).
pub(super) trait ListItem: DeserializeOwned {
    type Output;
    /// Singular noun used in messages: "user", "group".
    const WHAT: &'static str;
    fn name(&self) -> &str;
    /// Checks the element as a whole and converts it.
    fn finish(self) -> Result<Self::Output, String>;
}

/// Deserializes a non-empty list of uniquely named elements. Each element is
/// checked inside its own mapping so that an error names the element's line.
pub(super) fn unique_list<'de, T: ListItem, D: Deserializer<'de>>(d: D) -> Result<Vec<T::Output>, D::Error> {
    d.deserialize_seq(ListVisitor::<T>(PhantomData))
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: ListItem> Visitor<'de> for ListVisitor<T> {
    type Value = Vec<T::Output>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of {}s", T::WHAT)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashMap::new();
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ItemSeed::<T> {
            seen: &mut seen,
            index: items.len(),
            item: PhantomData,
        })? {
            items.push(item);
        }
        if items.is_empty() {
            return Err(de::Error::custom(format!("at least one {} is required", T::WHAT)));
        }
        Ok(items)
    }
}

/// Deserializes one element, remembering names seen so far (name → index).
struct ItemSeed<'a, T> {
    seen: &'a mut HashMap<String, usize>,
    index: usize,
    item: PhantomData<T>,
}

impl<'de, T: ListItem> DeserializeSeed<'de> for ItemSeed<'_, T> {
    type Value = T::Output;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T::Output, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: ListItem> Visitor<'de> for ItemSeed<'_, T> {
    type Value = T::Output;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} (a mapping)", T::WHAT)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T::Output, A::Error> {
        // The derived (deny_unknown_fields) impl reads the entries; errors in
        // them keep their own positions.
        let item = T::deserialize(MapAccessDeserializer::new(map))?;
        if let Some(first) = self.seen.insert(item.name().to_owned(), self.index) {
            return Err(de::Error::custom(format!(
                "duplicate {what} name `{name}`: already used by the {what} at index {first}",
                what = T::WHAT,
                name = item.name(),
            )));
        }
        item.finish().map_err(de::Error::custom)
    }
}
