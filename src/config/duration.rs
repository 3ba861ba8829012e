//! Durations written as `"<integer><unit>"`: `500us`, `20ms`, `5s`, `1m`, `2h`.
//!
//! Bare numbers are rejected on purpose: `timeout: 5` is ambiguous (seconds?
//! milliseconds?), and guessing wrong by a factor of 1000 is a silent outage.

use std::time::Duration;

const UNITS: &str = "us, ms, s, m, h";

/// Parses a duration such as `"20ms"`; the error says what to write instead.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err(format!(
            "empty duration: expected a number and a unit ({UNITS}), e.g. \"2s\""
        ));
    }
    if s.starts_with('-') {
        return Err(format!(
            "duration `{text}` is negative: durations cannot be negative"
        ));
    }
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(digits_end);
    if number.is_empty() {
        return Err(format!(
            "invalid duration `{text}`: expected a number and a unit ({UNITS}), e.g. \"2s\""
        ));
    }
    if unit.is_empty() {
        return Err(format!(
            "duration `{text}` has no unit: \
             write e.g. \"{number}s\" or \"{number}ms\" (units: {UNITS})"
        ));
    }
    let value: u64 = number
        .parse()
        .map_err(|_| format!("duration `{text}` is too large"))?;
    scale(value, unit).ok_or_else(|| unit_error(text, unit))
}

/// `value` in `unit`, or `None` for an unknown unit or an overflow.
fn scale(value: u64, unit: &str) -> Option<Duration> {
    match unit {
        "us" | "µs" => Some(Duration::from_micros(value)),
        "ms" => Some(Duration::from_millis(value)),
        "s" => Some(Duration::from_secs(value)),
        "m" => value.checked_mul(60).map(Duration::from_secs),
        "h" => value.checked_mul(3600).map(Duration::from_secs),
        _ => None,
    }
}

fn unit_error(text: &str, unit: &str) -> String {
    if unit.starts_with('.') {
        format!(
            "duration `{text}`: fractions are not supported, \
             use a smaller unit (e.g. \"1500ms\" for 1.5s)"
        )
    } else if matches!(unit, "us" | "µs" | "ms" | "s" | "m" | "h") {
        format!("duration `{text}` is too large")
    } else {
        format!("duration `{text}` has an unknown unit `{unit}`: use one of {UNITS}")
    }
}
