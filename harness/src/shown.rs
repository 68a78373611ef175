//! Values as a failure or a finding shows them: in the terms of the
//! contract's JSON (spec/COMMAND.md), whatever Rust type holds
//! them. A person comparing "expected" with "seen" reads what a subject's
//! `--json` would print, not Rust's Debug forms:
//!
//! - an absent value is `null` (never `None`), a present one is the value
//!   itself (never `Some(..)`);
//! - a time is RFC 3339 in UTC with milliseconds
//!   (`2026-10-06T09:00:00.000Z`), wrapped as a [`Time`] where its type is
//!   a bare `i64` of milliseconds;
//! - a string is a JSON string, a JSON value its JSON text;
//! - bytes are a JSON string when they are UTF-8, else their hex.
//!
//! [`ensure_eq!`](crate::ensure_eq) shows both sides with [`Shown`].

use std::collections::{BTreeMap, BTreeSet};

use time::macros::format_description;
use time::OffsetDateTime;

/// A value in the contract's terms, for a report.
pub trait Shown {
    fn shown(&self) -> String;
}

/// Milliseconds since 1970, shown as the contract shows a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub i64);

/// RFC 3339 in UTC with milliseconds, as the contract's JSON shows times:
/// `2026-10-06T09:00:00.000Z`. A value no such time can hold keeps its
/// number, so nothing is lost.
pub fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|at| {
            at.format(format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
            ))
            .ok()
        })
        .unwrap_or_else(|| format!("{ms} ms (no time RFC 3339 can show)"))
}

/// Milliseconds since 1970 of `text` when it is a time as `json.times`
/// says: RFC 3339, in UTC (`Z`, or an offset of zero), with a fraction of
/// exactly three digits. A form RFC 3339 allows beside the published
/// command's (`+00:00`, a lower-case `t` or `z`) is taken.
pub fn printed_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let zone = text.get(23..)?;
    let form = b.len() >= 24
        && b[19] == b'.'
        && b[20..23].iter().all(u8::is_ascii_digit)
        && matches!(zone, "Z" | "z" | "+00:00" | "-00:00");
    if !form {
        return None;
    }
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// A string as a JSON string.
pub fn text(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A payload: a JSON string when it is UTF-8 (as the contract's
/// `payload`), else its bytes in hex.
pub fn payload(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => text(s),
        Err(_) => format!("bytes {bytes:02x?}"),
    }
}

/// An optional time: `null`, or the time.
pub fn time_or_null(ms: Option<i64>) -> String {
    ms.map(Time).shown()
}

impl Shown for Time {
    fn shown(&self) -> String {
        rfc3339(self.0)
    }
}

macro_rules! shown_by_display {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
shown_by_display!(i8, i16, i32, i64, u16, u32, u64, usize, isize, bool, serde_json::Value);

impl Shown for str {
    fn shown(&self) -> String {
        text(self)
    }
}

impl Shown for String {
    fn shown(&self) -> String {
        text(self)
    }
}

/// A payload's bytes (u8 is no [`Shown`] of its own, so that a slice of
/// them reads as a payload rather than a list of numbers).
impl Shown for [u8] {
    fn shown(&self) -> String {
        payload(self)
    }
}

impl Shown for Vec<u8> {
    fn shown(&self) -> String {
        payload(self)
    }
}

impl<T: Shown + ?Sized> Shown for &T {
    fn shown(&self) -> String {
        (**self).shown()
    }
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        match self {
            Some(value) => value.shown(),
            None => "null".to_string(),
        }
    }
}

fn list<'a, T: Shown + 'a>(items: impl IntoIterator<Item = &'a T>) -> String {
    let items: Vec<String> = items.into_iter().map(Shown::shown).collect();
    format!("[{}]", items.join(", "))
}

impl<T: Shown> Shown for [T] {
    fn shown(&self) -> String {
        list(self)
    }
}

impl<T: Shown, const N: usize> Shown for [T; N] {
    fn shown(&self) -> String {
        list(self)
    }
}

/// Not for `Vec<u8>`, which is a payload (above).
impl<T: Shown> Shown for Vec<T>
where
    [T]: Shown,
{
    fn shown(&self) -> String {
        self.as_slice().shown()
    }
}

impl<T: Shown> Shown for BTreeSet<T> {
    fn shown(&self) -> String {
        list(self)
    }
}

/// An object of the map's keys, each shown in the contract's terms.
impl<K: Shown, V: Shown> Shown for BTreeMap<K, V> {
    fn shown(&self) -> String {
        let pairs: Vec<String> = self.iter().map(|(k, v)| format!("{}: {}", k.shown(), v.shown())).collect();
        format!("{{{}}}", pairs.join(", "))
    }
}

/// A tuple, as a case names one: `(state, attempts)` is `("ready", 0)`.
macro_rules! shown_tuple {
    ($($name:ident),+) => {
        impl<$($name: Shown),+> Shown for ($($name,)+) {
            #[allow(non_snake_case)]
            fn shown(&self) -> String {
                let ($($name,)+) = self;
                let parts: Vec<String> = vec![$($name.shown()),+];
                format!("({})", parts.join(", "))
            }
        }
    };
}
shown_tuple!(A, B);
shown_tuple!(A, B, C);
shown_tuple!(A, B, C, D);
shown_tuple!(A, B, C, D, E);
shown_tuple!(A, B, C, D, E, F);
shown_tuple!(A, B, C, D, E, F, G);
shown_tuple!(A, B, C, D, E, F, G, H);
shown_tuple!(A, B, C, D, E, F, G, H, I);
shown_tuple!(A, B, C, D, E, F, G, H, I, J);

/// 1234567 as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_times_are_utc_with_three_digits_of_milliseconds() {
        assert_eq!(printed_time("2001-09-09T01:46:40.000Z"), Some(1_000_000_000_000));
        assert_eq!(printed_time("2001-09-09T01:46:40.000+00:00"), Some(1_000_000_000_000));
        for bad in [
            "2001-09-09T01:46:40Z",
            "2001-09-09T01:46:40.0Z",
            "2001-09-09T01:46:40.0000Z",
            "2001-09-09T03:46:40.000+02:00",
            "1000000000000",
        ] {
            assert_eq!(printed_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_791_277_200_000), "2026-10-06T09:00:00.000Z");
        assert_eq!(rfc3339(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(951_782_400_007), "2000-02-29T00:00:00.007Z");
        assert_eq!(rfc3339(i64::MAX), format!("{} ms (no time RFC 3339 can show)", i64::MAX));
    }

    #[test]
    fn absent_is_null_and_present_is_the_value() {
        assert_eq!(None::<i64>.shown(), "null");
        assert_eq!(Some(3_i64).shown(), "3");
        assert_eq!(Some(Time(1_796_197_246_222)).shown(), "2026-12-02T07:40:46.222Z");
        assert_eq!(time_or_null(None), "null");
        assert_eq!(time_or_null(Some(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(Some("tok").shown(), "\"tok\"");
        assert_eq!(Some("ready".to_string()).shown(), "\"ready\"");
        assert_eq!(Some(serde_json::json!({"ok": true})).shown(), r#"{"ok":true}"#);
    }

    #[test]
    fn strings_are_json_strings() {
        assert_eq!("a\"b\\c\n".shown(), r#""a\"b\\c\n""#);
        assert_eq!(text("\u{1b}"), r#""\u001b""#);
        assert_eq!(text("grüße ✓"), "\"grüße ✓\"");
    }

    #[test]
    fn payloads_are_text_when_utf8_else_hex() {
        assert_eq!(b"hello".as_slice().shown(), "\"hello\"");
        assert_eq!(vec![0xff_u8, 0x00].shown(), "bytes [ff, 00]");
        assert_eq!(payload(b""), "\"\"");
    }

    #[test]
    fn collections_show_each_item() {
        assert_eq!(vec![Some(1_i64), None].shown(), "[1, null]");
        assert_eq!(vec!["q", "r"].shown(), r#"["q", "r"]"#);
        assert_eq!(Vec::<i64>::new().shown(), "[]");
        assert_eq!(("ready", 0_i64).shown(), r#"("ready", 0)"#);
        assert_eq!((2_u16, 2_u16).shown(), "(2, 2)");
        let map: BTreeMap<String, Option<i64>> = [("a".to_string(), Some(1)), ("b".to_string(), None)].into();
        assert_eq!(map.shown(), r#"{"a": 1, "b": null}"#);
    }
}
