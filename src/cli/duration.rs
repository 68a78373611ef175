//! Durations in Go's syntax (`500ms`, `1.5h`, `1h30m`), as the contract asks.

use std::time::Duration;

/// Parses a Go duration; negative durations are refused.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?} (use Go's syntax, such as 500ms, 30s, 2m, 1h30m)");
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    // `0` needs no unit, with a sign too (Go's `+0`).
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let (number, tail) = rest.split_at(number_len);
        if number.is_empty() || number == "." {
            return Err(bad());
        }
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let nanos_per = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        total += value * nanos_per;
        rest = tail;
    }
    // Go's durations are 64-bit signed nanoseconds: about 292 years at most.
    if !total.is_finite() || total > i64::MAX as f64 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_syntax() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("+0"), Ok(Duration::ZERO));
        assert_eq!(parse("2562047h"), Ok(Duration::from_secs(2_562_047 * 3600)));
        assert_eq!(parse("1m30.5s"), Ok(Duration::from_millis(90_500)));
        assert_eq!(parse("250us"), Ok(Duration::from_micros(250)));
        for bad in ["", "5", "-1s", "1x", "ms", "1h-5m", ".s", "1..5s", "+", "2562048h"] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
