//! Account host patterns, matched the way MariaDB matches them
//! (`compare_hostname` and `get_sort` in sql_acl.cc): `%` and `_`
//! wildcards with `\` as escape, case-insensitive; `ip/netmask` for IPv4;
//! an empty host is `%`. Accounts are tried most specific first, and the
//! first one whose user and host match is the account, even when its
//! password then fails (the server does not fall through to the next).

use std::net::{IpAddr, Ipv4Addr};

/// A parsed `Host` column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `ip/mask`: the client address ANDed with `mask` must equal `ip`.
    Netmask { ip: u32, mask: u32 },
    /// A wildcard pattern (lower case), matched against the client's IP
    /// text and, when known, its host name. `""` is stored as `"%"`.
    Wild(String),
}

impl HostPattern {
    pub fn parse(text: &str) -> HostPattern {
        if let Some((ip, mask)) = text.split_once('/') {
            if let (Ok(ip), Ok(mask)) = (ip.parse::<Ipv4Addr>(), mask.parse::<Ipv4Addr>()) {
                return HostPattern::Netmask {
                    ip: u32::from(ip),
                    mask: u32::from(mask),
                };
            }
        }
        if text.is_empty() {
            return HostPattern::Wild("%".to_owned());
        }
        HostPattern::Wild(text.to_ascii_lowercase())
    }

    /// Does a client at `ip` (known by `hostname`, if resolved) match?
    pub fn matches(&self, ip: IpAddr, hostname: Option<&str>) -> bool {
        let ip = canonical(ip);
        match self {
            HostPattern::Netmask { ip: want, mask } => match ip {
                IpAddr::V4(v4) => u32::from(v4) & mask == *want,
                IpAddr::V6(_) => false,
            },
            HostPattern::Wild(p) => {
                let text = ip.to_string();
                wild_match(p.as_bytes(), text.as_bytes())
                    || hostname.is_some_and(|h| wild_match(p.as_bytes(), h.to_ascii_lowercase().as_bytes()))
            }
        }
    }
}

/// `::ffff:a.b.c.d` is the IPv4 client it carries.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// SQL LIKE-style match: `%` any run, `_` one byte, `\x` a literal `x`.
/// Iterative with one backtrack point, so no input can make it recurse.
pub fn wild_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'%') => {
                star = Some((p, t));
                p += 1;
                continue;
            }
            Some(b'_') => {
                p += 1;
                t += 1;
                continue;
            }
            Some(&c) => {
                let (lit, len) = if c == b'\\' && p + 1 < pattern.len() {
                    (pattern[p + 1], 2)
                } else {
                    (c, 1)
                };
                if lit == text[t] {
                    p += len;
                    t += 1;
                    continue;
                }
            }
            None => {}
        }
        match star {
            Some((sp, st)) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'%')
}

/// The length the server assumes for a host pattern when it weighs `%`
/// (`HOSTNAME_LENGTH`, the width of `mysql.global_priv.Host`).
const MAX_HOST_LEN: u64 = 255;

/// How many strings a host pattern can match, as an order-preserving number
/// (MariaDB 10.5+'s `get_magic_sort` for one `h` pattern: greater = more
/// generic). With N literal characters, M `_` and K runs of `%`, a pattern
/// matches about numchars^L strings where L = MAX-N-M when K > 0 (else
/// numchars^M), so patterns compare by L, K, M (or M, L, K when M >= L),
/// then by the literal prefix before the first wildcard (P). A literal host,
/// an IP and an `ip/netmask` are all 0: the most specific.
fn host_magic(pattern: &str) -> u64 {
    let b = pattern.as_bytes();
    // An empty host is the same as `%` (update_hostname's old convention).
    let b: &[u8] = if b.is_empty() { b"%" } else { b };
    let (mut n, mut m, mut k, mut p) = (0u64, 0u64, 0u64, 0u64);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if k == 0 && m == 0 {
                    p = n;
                }
                k += 1;
                while b.get(i + 1) == Some(&b'%') {
                    i += 1;
                }
            }
            b'_' => {
                if k == 0 && m == 0 {
                    p = n;
                }
                m += 1;
            }
            c => {
                if c == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                n += 1;
            }
        }
        i += 1;
    }
    let (k, m) = (k.min(31), m.min(31));
    let l = if k > 0 {
        MAX_HOST_LEN.saturating_sub(n + m)
    } else {
        0
    };
    let (d, d1) = (MAX_HOST_LEN + 1, 32);
    if l > m {
        (((l * 2 + 1) * d + k) * d1 + m) * d + p
    } else {
        ((m * 2 * d + l) * d1 + k) * d + p
    }
}

/// The order key of an account (greater = more specific = tried first):
/// the host's weight, then one bit for the anonymous user `''`, negated as
/// the server stores it (`get_magic_sort("hu", host, user)`).
pub fn account_sort(host: &str, user: &str) -> u64 {
    !((host_magic(host) << 1) | u64::from(user.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }

    #[test]
    fn wildcards() {
        assert!(wild_match(b"%", b""));
        assert!(wild_match(b"%", b"10.0.0.1"));
        assert!(wild_match(b"10.0.0.%", b"10.0.0.17"));
        assert!(!wild_match(b"10.0.0.%", b"10.0.1.17"));
        assert!(wild_match(b"10.0.0._", b"10.0.0.7"));
        assert!(!wild_match(b"10.0.0._", b"10.0.0.17"));
        assert!(wild_match(b"%.example.com", b"db.example.com"));
        assert!(!wild_match(b"%.example.com", b"example.com"));
        assert!(wild_match(b"a\\_b", b"a_b"));
        assert!(!wild_match(b"a\\_b", b"axb"));
        assert!(wild_match(b"%a%b%", b"xxaxxbxx"));
        assert!(!wild_match(b"%a%b%", b"xxbxxaxx"));
        // No blow-up on many wildcards.
        let p = "%a".repeat(40);
        assert!(!wild_match(p.as_bytes(), "a".repeat(39).as_bytes()));
    }

    #[test]
    fn patterns() {
        let any = HostPattern::parse("");
        assert!(any.matches(ip("192.168.1.1"), None));
        let net = HostPattern::parse("10.1.0.0/255.255.0.0");
        assert!(net.matches(ip("10.1.200.3"), None));
        assert!(!net.matches(ip("10.2.0.3"), None));
        assert!(net.matches(ip("::ffff:10.1.2.3"), None));
        // The pattern's IP is not masked first, as in MariaDB.
        let odd = HostPattern::parse("10.1.0.5/255.255.0.0");
        assert!(!odd.matches(ip("10.1.0.5"), None));
        let exact = HostPattern::parse("127.0.0.1");
        assert!(exact.matches(ip("127.0.0.1"), None));
        assert!(!exact.matches(ip("127.0.0.2"), None));
        let local = HostPattern::parse("LOCALHOST");
        assert!(local.matches(ip("127.0.0.1"), Some("localhost")));
        assert!(!local.matches(ip("127.0.0.1"), None));
    }

    #[test]
    fn most_specific_first() {
        let exact = account_sort("127.0.0.1", "u");
        let prefix = account_sort("127.0.%", "u");
        let shorter = account_sort("127.%", "u");
        let any = account_sort("%", "u");
        let empty = account_sort("", "u");
        assert!(exact > prefix && prefix > shorter && shorter > any);
        // An empty host is read as NULL, which the server takes for `%`.
        assert_eq!(any, empty);
        // A named user before the anonymous one on the same host, but host
        // specificity first: ''@'localhost' precedes 'u'@'%' (as in MariaDB).
        assert!(account_sort("%", "u") > account_sort("%", ""));
        assert!(account_sort("localhost", "") > account_sort("%", "u"));
        assert_eq!(account_sort("10.0.0.0/255.0.0.0", "u"), exact);
        // One `_` matches fewer hosts than a trailing `%` (measured on
        // MariaDB 10.11: 'hm'@'127.0.0._' is chosen over 'hm'@'127.0.0.1%').
        assert!(account_sort("127.0.0._", "u") > account_sort("127.0.0.1%", "u"));
        assert!(account_sort("127.0.0.1%", "u") > account_sort("127.0.%", "u"));
        assert!(account_sort("a%b%", "u") < account_sort("a%b", "u"));
        assert_eq!(account_sort("", "u"), account_sort("%", "u"));
    }
}
