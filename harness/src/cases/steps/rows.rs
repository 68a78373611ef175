//! Rows: the file as any program sees it (crate::subjects::observe::file),
//! and how the cases compare and show them.

use std::path::Path;

use crate::cases::CaseResult;
use crate::ensure;
use crate::shown::{rfc3339, time_or_null, Shown, Time};
use crate::subjects::observe::file::{row, Row};
use crate::subjects::Failure;

/// One job that must be in the file.
pub(crate) fn row_present(file: &Path, id: i64) -> Result<Row, Failure> {
    row(file, id)?.ok_or_else(|| Failure::fail(format!("job {id} in the file"), "it is gone"))
}

/// A row on one line, for reports, in the contract's terms.
pub(crate) fn brief(r: &Row) -> String {
    format!(
        "job {} (queue {}, {}, priority {}, attempts {}/{}, run_at {}, lease_until {}, token {}, \
         last_error {}, payload {})",
        r.id,
        r.queue.shown(),
        r.state,
        r.priority,
        r.attempts,
        r.max_attempts,
        Time(r.run_at).shown(),
        time_or_null(r.lease_until),
        r.token.shown(),
        r.last_error.shown(),
        r.payload.shown()
    )
}

pub(crate) fn brief_all(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "no jobs".into();
    }
    rows.iter().map(brief).collect::<Vec<_>>().join("; ")
}

/// The columns in which `after` differs from `before`.
fn diff(before: &Row, after: &Row) -> String {
    let mut out = Vec::new();
    macro_rules! field {
        ($name:ident $(, $as:expr)?) => {
            if before.$name != after.$name {
                let (was, now) = (&before.$name, &after.$name);
                $(let (was, now) = ($as(*was), $as(*now));)?
                out.push(format!("{} {} → {}", stringify!($name), was.shown(), now.shown()));
            }
        };
    }
    field!(queue);
    field!(state);
    field!(priority);
    field!(attempts);
    field!(max_attempts);
    field!(run_at, Time);
    field!(lease_until, |ms: Option<i64>| ms.map(Time));
    field!(token);
    field!(last_error);
    field!(created_at, Time);
    field!(updated_at, Time);
    field!(payload);
    out.join(", ")
}

/// Fails unless `after` is `before` but for the rows in `gone` (which must
/// be deleted) and in `changed` (which the caller checks itself).
pub(crate) fn only_changed(
    what: &str,
    before: &[Row],
    after: &[Row],
    changed: &[i64],
    gone: &[i64],
) -> CaseResult {
    let mut problems = Vec::new();
    for b in before {
        match after.iter().find(|a| a.id == b.id) {
            None if gone.contains(&b.id) => {}
            None => problems.push(format!("job {} ({}) was deleted", b.id, b.state)),
            Some(a) if gone.contains(&b.id) => problems.push(format!("{} is still there", brief(a))),
            Some(_) if changed.contains(&b.id) => {}
            Some(a) if a != b => problems.push(format!("job {} ({}) changed: {}", b.id, b.state, diff(b, a))),
            Some(_) => {}
        }
    }
    for a in after.iter().filter(|a| !before.iter().any(|b| b.id == a.id)) {
        problems.push(format!("{} appeared", brief(a)));
    }
    ensure!(problems.is_empty(), what.to_string(), problems.join("; "));
    Ok(())
}

/// Fails unless the span `value` (in ms) lies in `[low, high]`.
pub(crate) fn within(what: &str, value: i64, low: i64, high: i64) -> CaseResult {
    ensure!(
        (low..=high).contains(&value),
        format!("{what} in [{low}, {high}] ms"),
        format!(
            "{what} {value} ms ({} ms below the low end, {} ms above the high end)",
            low - value,
            value - high
        )
    );
    Ok(())
}

/// Fails unless the time `value` lies in `[low, high]`: the times in
/// RFC 3339, how far off in ms.
pub(crate) fn within_time(what: &str, value: i64, low: i64, high: i64) -> CaseResult {
    ensure!(
        (low..=high).contains(&value),
        format!("{what} in [{}, {}]", rfc3339(low), rfc3339(high)),
        format!(
            "{what} {} ({} ms below the low end, {} ms above the high end)",
            rfc3339(value),
            low - value,
            value - high
        )
    );
    Ok(())
}

pub(crate) fn not_running(r: &Row) -> CaseResult {
    ensure!(
        r.token.is_none() && r.lease_until.is_none(),
        format!("job {} ({}) with token and lease_until NULL", r.id, r.state),
        brief(r)
    );
    Ok(())
}

pub(crate) fn has_error(r: &Row) -> CaseResult {
    ensure!(
        r.last_error.as_deref().is_some_and(|e| !e.trim().is_empty()),
        format!("job {} with last_error set", r.id),
        brief(r)
    );
    Ok(())
}

/// A row in a case's expected and seen, as [`brief`] shows it.
impl crate::shown::Shown for Row {
    fn shown(&self) -> String {
        brief(self)
    }
}
