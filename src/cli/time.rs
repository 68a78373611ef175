//! RFC 3339 times in UTC with milliseconds, as the JSON output uses.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

pub fn format(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    match OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => t
            .format(format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
            ))
            .unwrap_or_else(|_| ms.to_string()),
        Err(_) => ms.to_string(),
    }
}

/// Parses an RFC 3339 time (any offset) into milliseconds since 1970.
///
/// As the published command's `time.Parse(time.RFC3339, …)` does, the date
/// and the time are joined by an upper-case `T` and a UTC time ends in an
/// upper-case `Z`: the `time` crate also takes a space, `t` and `z` (which
/// RFC 3339 allows "for readability"), and a time the published command
/// refuses must not be a job here.
pub fn parse(text: &str) -> Result<i64, String> {
    let bad =
        |why: &str| format!("invalid time {text:?}: {why} (use RFC 3339, such as 2026-10-06T09:00:00Z)");
    if text.as_bytes().get(10) != Some(&b'T') {
        return Err(bad("the date and the time are joined by an upper-case T"));
    }
    if text.contains(['t', 'z']) {
        return Err(bad("T and Z are upper-case"));
    }
    let t = OffsetDateTime::parse(text, &Rfc3339).map_err(|e| bad(&e.to_string()))?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).map_err(|_| format!("time {text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let ms = super::parse("2026-10-06T09:00:00.250Z").unwrap();
        assert_eq!(super::format(ms), "2026-10-06T09:00:00.250Z");
        assert_eq!(
            super::parse("2026-10-06T11:00:00+02:00").unwrap(),
            super::parse("2026-10-06T09:00:00Z").unwrap()
        );
        assert!(super::parse("yesterday").is_err());
        for go_refuses in ["2026-10-06 09:00:00Z", "2026-10-06t09:00:00Z", "2026-10-06T09:00:00z"] {
            assert!(super::parse(go_refuses).is_err(), "{go_refuses}");
        }
    }
}
