//! Exact decimal arithmetic and number formatting, the way MariaDB prints them.
//!
//! No `f64` anywhere near DECIMAL: values are digit strings, sums are exact, and AVG
//! reproduces the server's `decimal_div` (quotient truncated to whole 9-digit words,
//! then rounded half away from zero to `scale + div_precision_increment`).

use std::cmp::Ordering;

/// Largest number of digits a DECIMAL can hold; sums beyond it saturate like the server.
pub const DECIMAL_MAX_PRECISION: usize = 65;
/// Largest DECIMAL scale (MariaDB).
pub const DECIMAL_MAX_SCALE: usize = 38;
/// `div_precision_increment` (server default; AVG of exact types adds it to the scale).
pub const DIV_PRECISION_INCREMENT: usize = 4;
/// `decimals` value meaning "not fixed" for FLOAT/DOUBLE results (`NOT_FIXED_DEC`).
pub const NOT_FIXED_DEC: u8 = 31;

/// An exact decimal: `(-1)^neg × digits × 10^-scale`.
/// `digits` are 0..=9, most significant first, without leading zeros (empty = 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dec {
    neg: bool,
    digits: Vec<u8>,
    scale: usize,
}

/// Splits decimal text into (negative, integer digits, fraction digits) without
/// allocating: `[+-]digits[.digits]`, leading zeros of the integer part and trailing
/// zeros of the fraction removed. `None` if the text is not a plain decimal number.
pub fn split_decimal(s: &[u8]) -> Option<(bool, &[u8], &[u8])> {
    let (neg, int, frac) = decimal_parts(s)?;
    let int = &int[int.iter().position(|&b| b != b'0').unwrap_or(int.len())..];
    let frac = &frac[..frac.iter().rposition(|&b| b != b'0').map_or(0, |p| p + 1)];
    let neg = neg && !(int.is_empty() && frac.is_empty());
    Some((neg, int, frac))
}

/// `[+-]digits[.digits]` as (negative, integer digits, fraction digits),
/// as written (no zeros removed). `None` if not a plain decimal number.
fn decimal_parts(s: &[u8]) -> Option<(bool, &[u8], &[u8])> {
    let (neg, rest) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = match rest.iter().position(|&b| b == b'.') {
        Some(p) => (&rest[..p], &rest[p + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let plain = !(int.is_empty() && frac.is_empty())
        && int.iter().all(u8::is_ascii_digit)
        && frac.iter().all(u8::is_ascii_digit);
    plain.then_some((neg, int, frac))
}

/// Compares two decimal numbers given as text, exactly. `None` if either is malformed.
pub fn cmp_decimal_text(a: &[u8], b: &[u8]) -> Option<Ordering> {
    let (an, ai, af) = split_decimal(a)?;
    let (bn, bi, bf) = split_decimal(b)?;
    Some(cmp_split((an, ai, af), (bn, bi, bf)))
}

/// Compares split decimals (digits may be ASCII or 0..=9 values, but the same on both sides).
fn cmp_split(a: (bool, &[u8], &[u8]), b: (bool, &[u8], &[u8])) -> Ordering {
    match (a.0, b.0) {
        (false, true) => return Ordering::Greater,
        (true, false) => return Ordering::Less,
        _ => {}
    }
    let mag =
        a.1.len()
            .cmp(&b.1.len())
            .then_with(|| a.1.cmp(b.1))
            .then_with(|| a.2.cmp(b.2));
    if a.0 {
        mag.reverse()
    } else {
        mag
    }
}

impl Dec {
    /// Parses `[+-]digits[.digits]` (the text protocol form of DECIMAL and integers).
    pub fn parse(s: &[u8]) -> Option<Dec> {
        let (neg, int, frac) = decimal_parts(s)?;
        let digits = int.iter().chain(frac).map(|b| b - b'0').collect();
        Some(Dec::new(neg, digits, frac.len()))
    }

    pub fn from_i128(v: i128) -> Dec {
        let digits = v.unsigned_abs().to_string().bytes().map(|b| b - b'0').collect();
        Dec::new(v < 0, digits, 0)
    }

    fn new(neg: bool, mut digits: Vec<u8>, scale: usize) -> Dec {
        let lead = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
        digits.drain(..lead);
        let neg = neg && !digits.is_empty();
        Dec { neg, digits, scale }
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn scale(&self) -> usize {
        self.scale
    }

    /// Digits (values 0..=9) at scale `s >= self.scale`.
    fn at_scale(&self, s: usize) -> Vec<u8> {
        let mut d = self.digits.clone();
        d.resize(d.len() + (s - self.scale), 0);
        d
    }

    /// Exact comparison.
    pub fn cmp_exact(&self, other: &Dec) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (neg, _) => {
                let s = self.scale.max(other.scale);
                let m = cmp_mag(&self.at_scale(s), &other.at_scale(s));
                if neg {
                    m.reverse()
                } else {
                    m
                }
            }
        }
    }

    /// Exact sum.
    pub fn add(&self, other: &Dec) -> Dec {
        let s = self.scale.max(other.scale);
        let a = self.at_scale(s);
        let b = other.at_scale(s);
        if self.neg == other.neg {
            return Dec::new(self.neg, add_mag(&a, &b), s);
        }
        match cmp_mag(&a, &b) {
            Ordering::Equal => Dec {
                neg: false,
                digits: Vec::new(),
                scale: s,
            },
            Ordering::Greater => Dec::new(self.neg, sub_mag(&a, &b), s),
            Ordering::Less => Dec::new(other.neg, sub_mag(&b, &a), s),
        }
    }

    /// Saturates to the largest value of `DECIMAL(65, scale)` like the server does on
    /// overflow of a SUM.
    pub fn saturate(self) -> Dec {
        if self.digits.len() <= DECIMAL_MAX_PRECISION.max(self.scale) {
            return self;
        }
        let n = DECIMAL_MAX_PRECISION.max(self.scale);
        Dec {
            neg: self.neg,
            digits: vec![9; n],
            scale: self.scale,
        }
    }

    /// `self / count` as MariaDB's AVG computes it for exact types: the quotient is
    /// truncated to whole 9-digit words of fraction (at least `scale + 4` digits), then
    /// rounded half away from zero to `min(scale + 4, 38)` digits.
    pub fn avg_div(&self, count: u64) -> Option<Dec> {
        if count == 0 {
            return None;
        }
        let s = self.scale;
        let out_scale = (s + DIV_PRECISION_INCREMENT).min(DECIMAL_MAX_SCALE);
        let words = (s + DIV_PRECISION_INCREMENT).div_ceil(9);
        let f = (words * 9).max(out_scale);
        let mut num = self.digits.clone();
        num.resize(num.len() + (f - s), 0);
        let c = u128::from(count);
        let mut rem: u128 = 0;
        let mut q = Vec::with_capacity(num.len());
        for d in num {
            rem = rem * 10 + u128::from(d);
            // rem < 10 * count fits easily; the quotient digit is < 10
            q.push(u8::try_from(rem / c).unwrap_or(9));
            rem %= c;
        }
        let truncated = Dec::new(self.neg, q, f);
        Some(truncated.round_to(out_scale))
    }

    /// Rounds half away from zero (the server's `HALF_UP`) to `scale` fraction digits, or
    /// pads with zeros.
    pub fn round_to(&self, scale: usize) -> Dec {
        if scale >= self.scale {
            return Dec::new(self.neg, self.at_scale(scale), scale);
        }
        let drop = self.scale - scale;
        if self.digits.len() < drop {
            // |value| < 10^-(scale+1)·10: the first dropped digit is a leading zero
            // unless the value has exactly `drop` digits.
            return Dec::new(false, Vec::new(), scale);
        }
        let keep = self.digits.len() - drop;
        let round_up = self.digits[keep] >= 5;
        let mut kept = self.digits[..keep].to_vec();
        if round_up {
            kept = add_mag(&kept, &[1]);
        }
        Dec::new(self.neg, kept, scale)
    }

    /// The server's text form with exactly `scale` fraction digits.
    pub fn format(&self, scale: usize) -> String {
        let v = self.round_to(scale);
        let mut out = String::with_capacity(v.digits.len() + 3);
        if v.neg {
            out.push('-');
        }
        let n = v.digits.len();
        if n > scale {
            out.extend(v.digits[..n - scale].iter().map(|&d| char::from(b'0' + d)));
        } else {
            out.push('0');
        }
        if scale > 0 {
            out.push('.');
            for _ in n..scale {
                out.push('0');
            }
            let start = n.saturating_sub(scale);
            out.extend(v.digits[start..].iter().map(|&d| char::from(b'0' + d)));
        }
        out
    }
}

fn cmp_mag(a: &[u8], b: &[u8]) -> Ordering {
    let a = &a[a.iter().position(|&d| d != 0).unwrap_or(a.len())..];
    let b = &b[b.iter().position(|&d| d != 0).unwrap_or(b.len())..];
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn add_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let n = a.len().max(b.len()) + 1;
    let mut out = vec![0u8; n];
    let mut carry = 0u8;
    for i in 0..n {
        let da = if i < a.len() { a[a.len() - 1 - i] } else { 0 };
        let db = if i < b.len() { b[b.len() - 1 - i] } else { 0 };
        let s = da + db + carry;
        out[n - 1 - i] = s % 10;
        carry = s / 10;
    }
    out
}

/// `a - b` for `a >= b` (magnitudes).
fn sub_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let n = a.len();
    let mut out = vec![0u8; n];
    let mut borrow = 0i8;
    for i in 0..n {
        let da = a[n - 1 - i] as i8;
        let db = if i < b.len() { b[b.len() - 1 - i] as i8 } else { 0 };
        let mut d = da - db - borrow;
        borrow = 0;
        if d < 0 {
            d += 10;
            borrow = 1;
        }
        out[n - 1 - i] = d as u8;
    }
    out
}

/// Formats a DOUBLE result the way MariaDB prints it in the text protocol.
/// `decimals < 31`: fixed notation with that many digits (a column or expression with
/// fixed decimals, e.g. `SUM` of a `DOUBLE(10,2)`); otherwise the shortest text that
/// reads back to the same double, in fixed notation unless the decimal exponent is
/// below -14 or the integer is longer than 15 digits (measured against MariaDB 10.11:
/// `1e15`, `0.000000000000001`, `1e-16`, `1.2345678901234568e16`, `123456789012345.6`).
pub fn format_double(x: f64, decimals: u8) -> String {
    if decimals < NOT_FIXED_DEC {
        let s = format!("{:.*}", usize::from(decimals), x);
        // The server never prints a negative zero.
        if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
            return s[1..].to_string();
        }
        return s;
    }
    if x == 0.0 || !x.is_finite() {
        return "0".to_string();
    }
    // Shortest round-trip length, then the nearest decimal of that length with ties to
    // even (the server's dtoa; Rust's shortest form breaks exact ties upwards:
    // 3315417811956.15625 prints as `3315417811956.1562` on the server).
    let shortest = format!("{:e}", x.abs());
    let len = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
    let e = format!("{:.*e}", len.saturating_sub(1), x.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let len = digits.len() as i32;
    let decpt = exp + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if decpt < -14 || (decpt > 15 && decpt >= len) {
        out.push_str(&digits[..1]);
        if len > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push_str(&(decpt - 1).to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(&digits);
    } else if decpt < len {
        let (i, f) = digits.split_at(decpt as usize);
        out.push_str(i);
        out.push('.');
        out.push_str(f);
    } else {
        out.push_str(&digits);
        for _ in len..decpt {
            out.push('0');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        Dec::parse(s.as_bytes()).expect("decimal")
    }

    #[test]
    fn parse_and_format() {
        assert_eq!(d("12").format(0), "12");
        assert_eq!(d("-1.50").format(2), "-1.50");
        assert_eq!(d("0.00").format(2), "0.00");
        assert_eq!(d("-0.00").format(2), "0.00");
        assert_eq!(d(".5").format(1), "0.5");
        assert_eq!(d("007.0100").format(4), "7.0100");
        assert_eq!(d("1.25").format(4), "1.2500");
        assert_eq!(d("0.00001").format(5), "0.00001");
        assert!(Dec::parse(b"1e5").is_none());
        assert!(Dec::parse(b"").is_none());
        assert!(Dec::parse(b"-").is_none());
        assert!(Dec::parse(b"1.2.3").is_none());
    }

    #[test]
    fn rounding_half_away_from_zero() {
        assert_eq!(d("0.03125").format(4), "0.0313");
        assert_eq!(d("-0.03125").format(4), "-0.0313");
        assert_eq!(d("0.03124").format(4), "0.0312");
        assert_eq!(d("9.99995").format(4), "10.0000");
        assert_eq!(d("-0.00004").format(4), "0.0000");
        assert_eq!(d("0.00005").format(4), "0.0001");
        assert_eq!(d("0.000005").format(4), "0.0000");
    }

    #[test]
    fn exact_sums() {
        assert_eq!(d("1.50").add(&d("2.25")).format(2), "3.75");
        assert_eq!(d("-1.50").add(&d("1.25")).format(2), "-0.25");
        assert_eq!(d("1.50").add(&d("-1.50")).format(2), "0.00");
        assert_eq!(d("-5").add(&d("-7")).format(0), "-12");
        assert_eq!(d("0.1").add(&d("0.2")).format(1), "0.3");
        let big = "99999999999999999999999999999999999999999999999999999999999999999";
        assert_eq!(d(big).add(&d("1")).format(0).len(), 66);
        // Overflow past 65 digits saturates (MariaDB: SUM of two 65-digit maxima + 1).
        assert_eq!(d(big).add(&d(big)).add(&d("1")).saturate().format(0), big);
        assert_eq!(
            d("18446744073709551615")
                .add(&d("18446744073709551615"))
                .format(0),
            "36893488147419103230"
        );
    }

    #[test]
    fn comparisons() {
        assert_eq!(d("-1.5").cmp_exact(&d("-1.25")), Ordering::Less);
        assert_eq!(d("1.5").cmp_exact(&d("1.50")), Ordering::Equal);
        assert_eq!(d("0").cmp_exact(&d("-0.0")), Ordering::Equal);
        assert_eq!(d("0.05").cmp_exact(&d("0.5")), Ordering::Less);
        assert_eq!(d("10").cmp_exact(&d("9.99")), Ordering::Greater);
        assert_eq!(cmp_decimal_text(b"-0.001", b"0"), Some(Ordering::Less));
        assert_eq!(cmp_decimal_text(b"-2", b"-10"), Some(Ordering::Greater));
        assert_eq!(cmp_decimal_text(b"0.50", b"0.5"), Some(Ordering::Equal));
        assert_eq!(cmp_decimal_text(b"0012.5", b"12.49"), Some(Ordering::Greater));
        assert_eq!(cmp_decimal_text(b"-0.00", b"0"), Some(Ordering::Equal));
        assert_eq!(cmp_decimal_text(b"x", b"0"), None);
    }

    /// Expected texts measured on MariaDB 10.11.19 (`SELECT AVG(..) ... GROUP BY g`).
    #[test]
    fn avg_like_the_server() {
        let avg = |s: &str, n: u64| d(s).avg_div(n).map(|q| q.format(q.scale()));
        assert_eq!(avg("-2", 3).as_deref(), Some("-0.6667")); // AVG(int) of -1,-1,0
        assert_eq!(avg("1", 8).as_deref(), Some("0.1250"));
        assert_eq!(avg("3", 2).as_deref(), Some("1.5000"));
        assert_eq!(avg("-1", 32).as_deref(), Some("-0.0313"));
        assert_eq!(avg("3.75", 2).as_deref(), Some("1.875000")); // DECIMAL(10,2)
                                                                 // scale 5 + 4 = 9 digits = one whole word: truncated, not rounded.
        assert_eq!(avg("-0.00002", 3).as_deref(), Some("-0.000006666"));
        assert_eq!(avg("0.00003", 3).as_deref(), Some("0.000010000"));
        // scale 6 + 4 = 10 digits: computed to 18 digits, then rounded.
        assert_eq!(avg("0.000002", 3).as_deref(), Some("0.0000006667"));
        assert_eq!(avg("1", 0), None);
    }

    #[test]
    #[allow(clippy::excessive_precision)] // exact binary ties, written out in full
    fn doubles_like_the_server() {
        let cases: &[(f64, &str)] = &[
            (0.1 + 0.2, "0.30000000000000004"),
            (1e15, "1e15"),
            (1e14, "100000000000000"),
            (999999999999999.0, "999999999999999"),
            (1.5e15, "1.5e15"),
            (123456789012345680.0, "1.2345678901234568e17"),
            (1234567890123456.5, "1234567890123456.5"),
            (123456789012345.6, "123456789012345.6"),
            (1234567890123456.0, "1.234567890123456e15"),
            (1.5e-5, "0.000015"),
            (1e-7, "0.0000001"),
            (1e-15, "0.000000000000001"),
            (1.5e-15, "0.0000000000000015"),
            (1e-16, "1e-16"),
            (1.5e-16, "1.5e-16"),
            (1e-300, "1e-300"),
            (1e100, "1e100"),
            (-2.5, "-2.5"),
            (-1e15, "-1e15"),
            (-1.5e-7, "-0.00000015"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.0, "0"),
            (-0.0, "0"),
            (4.0, "4"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (3.3000000715255737, "3.3000000715255737"),
            // Exact ties at 17 digits round to even, as on the server.
            (3315417811956.15625, "3315417811956.1562"),
            (-743066081380341.25, "-743066081380341.2"),
        ];
        for (x, want) in cases {
            assert_eq!(format_double(*x, NOT_FIXED_DEC), *want, "{x:e}");
        }
        assert_eq!(format_double(5.01, 2), "5.01");
        assert_eq!(format_double(1.67, 6), "1.670000");
        assert_eq!(format_double(-0.001, 2), "0.00");
    }
}
