//! spec/COMMAND.md §7–9 and §12, the text (not JSON) output: a table, or
//! `no jobs`; the fields of `show`; no control character raw (every one
//! of U+0000–U+001F but newline and tab, U+007F and U+0080–U+009F), and
//! each written as `\xNN`, as the published `printable` writes it.

use crate::cases::steps::setup::{insert, Put};
use crate::cases::{common, CaseResult};
use crate::ensure;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::{run, shown, succeeded, text};

/// A control character a terminal may act on.
fn control(c: char) -> bool {
    c != '\n' && c != '\t' && c.is_control()
}

/// A queue name, a payload and a last error full of them: escape
/// sequences (ESC, CSI U+009B, OSC), BEL, CR, BS, NUL, DEL, NEL. Each is
/// followed by text found nowhere else (its *tail*), so that wherever an
/// output shows that text, what stands before it must be the escape.
const QUEUE: &str = "q\x1b[31mred-q1\x07bel-q2";
const PAYLOAD: &str = "p\x1b]0;title-p1\x07ring-p2\rcr-p3\x00nul-p4\x7fdel-p5\u{85}nel-p6\u{9b}csi-p7";
const ERROR: &str = "e\x1b[2Jclear-e1\x08bs-e2\u{9b}csi-e3";

/// Each control character of `field` with the text after it, up to the
/// next one.
fn tails(field: &str) -> Vec<(char, &str)> {
    field
        .char_indices()
        .filter(|(_, c)| control(*c))
        .map(|(i, c)| {
            let rest = &field[i + c.len_utf8()..];
            (c, rest.find(control).map_or(rest, |end| &rest[..end]))
        })
        .collect()
}

/// The tails of `fields` that `printed` shows without the escape of their
/// control character right before them: `\xNN`, NN in either case.
fn unescaped(printed: &str, fields: &[&str]) -> Vec<String> {
    let mut missing = Vec::new();
    for (c, tail) in fields.iter().flat_map(|f| tails(f)) {
        let escape = format!("\\x{:02x}", c as u32);
        let bad = printed.match_indices(tail).any(|(at, _)| {
            let before = &printed[..at];
            before.len() < escape.len()
                || !before.is_char_boundary(before.len() - escape.len())
                || !before[before.len() - escape.len()..].eq_ignore_ascii_case(&escape)
        });
        if bad {
            missing.push(format!("{escape} before {tail:?}"));
        }
    }
    missing
}

/// `who args`, which must succeed; its stdout as text.
fn output(ctx: &Ctx, who: &Subject, args: &[String]) -> Result<String, Failure> {
    let out = run(ctx, who, args, None)?;
    succeeded(ctx, who, args, &out, "to print the file's jobs")
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// A file with a dead job whose queue, payload and last error hold
/// control characters, and another job; the text outputs of `stats`,
/// `list` and `show` of it, each with its command line for a report.
fn printed_with_controls(ctx: &mut Ctx) -> Result<Vec<(String, String)>, Failure> {
    let who = ctx.subject().clone();
    let file = ctx.init("escape.ukue")?;
    let now = now_ms();
    let ids = insert(
        &file,
        &[
            Put::new(QUEUE, "dead", now).blob(PAYLOAD.as_bytes()).error(ERROR),
            Put::new("plain", "ready", now).text("fine"),
        ],
    )?;
    let f = path_str(&file);
    let id = ids[0].to_string();
    let mut printed = Vec::new();
    for args in [args(&["stats", f]), args(&["list", f]), args(&["show", f, &id])] {
        let text = output(ctx, &who, &args)?;
        printed.push((shown(ctx, &who, &args), text));
    }
    Ok(printed)
}

/// text.escape (must): no control character raw, whatever a table shows
/// of the fields (which fields is `stats.text`, `list.text` and
/// `show.text`, all `should`) and however it writes them.
pub(super) fn escape(ctx: &mut Ctx) -> CaseResult {
    let mut problems = Vec::new();
    for (command, printed) in printed_with_controls(ctx)? {
        let raw: Vec<String> =
            printed.chars().filter(|c| control(*c)).map(|c| format!("U+{:04X}", c as u32)).collect();
        if !raw.is_empty() {
            problems.push(format!("{command}: raw {raw:?}, in {:?}", clip(&printed)));
        }
    }
    ensure!(
        problems.is_empty(),
        format!(
            "stats, list and show (text) to write no control character raw (newline and tab aside) of the \
             queue {QUEUE:?}, the payload {PAYLOAD:?} and the last error {ERROR:?}"
        ),
        problems.join("\n")
    );
    Ok(())
}

/// text.escape-form (should): each control character that an output
/// shows written as `\xNN`, as the published command writes it.
pub(super) fn escape_form(ctx: &mut Ctx) -> CaseResult {
    let mut problems = Vec::new();
    for (command, printed) in printed_with_controls(ctx)? {
        let unescaped = unescaped(&printed, &[QUEUE, ERROR, PAYLOAD]);
        if !unescaped.is_empty() {
            problems.push(format!("{command}: no {unescaped:?}, in {:?}", clip(&printed)));
        }
    }
    ensure!(
        problems.is_empty(),
        format!(
            "stats, list and show (text) to write each control character they show of the queue {QUEUE:?}, \
             the payload {PAYLOAD:?} and the last error {ERROR:?} as \\xNN"
        ),
        problems.join("\n")
    );
    Ok(())
}

/// The lines of `printed` whose first word is `word`.
fn rows_of(printed: &str, word: &str) -> usize {
    printed.lines().filter(|l| l.split_whitespace().next() == Some(word)).count()
}

/// Fails unless `printed` is the line `no jobs`.
fn no_jobs(what: &str, printed: &str) -> CaseResult {
    ensure!(printed.trim() == "no jobs", format!("{what} to print `no jobs`"), format!("{printed:?}"));
    Ok(())
}

pub(super) fn stats_text(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let empty = ctx.init("empty.ukue")?;
    no_jobs("`stats` of a file without jobs", &output(ctx, &who, &args(&["stats", path_str(&empty)]))?)?;
    let file = ctx.init("stats.ukue")?;
    let now = now_ms();
    insert(
        &file,
        &[Put::new("alpha", "ready", now), Put::new("alpha", "ready", now), Put::new("beta", "dead", now)],
    )?;
    let printed = output(ctx, &who, &args(&["stats", path_str(&file)]))?;
    ensure!(
        rows_of(&printed, "alpha") == 1 && rows_of(&printed, "beta") == 1,
        "`stats` of the queues alpha and beta to print a row for each (the queue first)",
        format!("{printed:?}")
    );
    Ok(())
}

pub(super) fn list_text(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let empty = ctx.init("empty.ukue")?;
    no_jobs("`list` of a file without jobs", &output(ctx, &who, &args(&["list", path_str(&empty)]))?)?;
    let file = ctx.init("list.ukue")?;
    let now = now_ms();
    let ids = insert(
        &file,
        &[Put::new("a", "ready", now), Put::new("a", "dead", now), Put::new("b", "done", now)],
    )?;
    let printed = output(ctx, &who, &args(&["list", path_str(&file)]))?;
    let missing: Vec<i64> =
        ids.iter().copied().filter(|id| rows_of(&printed, &id.to_string()) != 1).collect();
    ensure!(
        missing.is_empty(),
        format!("`list` of jobs {ids:?} to print a row for each (the id first)"),
        format!("no row (or more than one) for {missing:?}: {printed:?}")
    );
    let none = output(ctx, &who, &args(&["list", path_str(&file), "--queue", "nope"]))?;
    no_jobs("`list --queue nope` (no such queue)", &none)
}

pub(super) fn show_text(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("show.ukue")?;
    let now = now_ms();
    let binary: &[u8] = &[0xff, 0x00, 0x1b, 0xfe];
    let ids = insert(
        &file,
        &[Put::new("alpha", "ready", now).text("hello, world"), Put::new("alpha", "dead", now).blob(binary)],
    )?;
    let f = path_str(&file);
    let printed = output(ctx, &who, &args(&["show", f, &ids[0].to_string()]))?;
    let lines: Vec<&str> = printed.lines().collect();
    let line_with =
        |word: &str| lines.iter().any(|l| l.split(|c: char| !c.is_alphanumeric()).any(|w| w == word));
    ensure!(
        lines.len() >= 4
            && line_with(&ids[0].to_string())
            && line_with("alpha")
            && line_with("ready")
            && printed.contains("hello, world"),
        format!("`show` of job {} to print its fields one a line (its id, queue alpha, state ready) and its payload `hello, world`", ids[0]),
        format!("{printed:?}")
    );
    let out = run(ctx, &who, &args(&["show", f, &ids[1].to_string()]), None)?;
    let said = std::str::from_utf8(&out.stdout).map(str::to_lowercase);
    ensure!(
        out.status.code() == Some(0)
            && said.as_ref().is_ok_and(|s| (s.contains("binary") || s.contains("base64")) && !s.contains('\x1b')),
        format!("`show` of job {} (a payload that is no UTF-8) to exit 0 and say it is binary (or base64), in text", ids[1]),
        format!("{}; stdout {:?}", common::outcome(&out), text(&out.stdout))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the published `printable` makes of a field.
    fn escaped(field: &str) -> String {
        field
            .chars()
            .map(|c| if control(c) { format!("\\x{:02x}", c as u32) } else { c.to_string() })
            .collect()
    }

    #[test]
    fn whatever_a_table_shows_of_a_field_must_be_escaped() {
        let (queue, error, payload) = (escaped(QUEUE), escaped(ERROR), escaped(PAYLOAD));
        let fields = [QUEUE, ERROR, PAYLOAD];
        // Every field, some, a field cut short, upper-case hex: all escaped.
        for good in [
            format!("ID QUEUE ERROR\n1 {queue} {error}\n"),
            format!("ID QUEUE\n1 {queue}\n"),
            format!("1 {}…\n", &payload[..20]),
            format!("queue: {}\n", queue.replace("\\x1b", "\\x1B").replace("\\x07", "\\X07")),
            "ID STATE\n1 dead\n".to_string(),
        ] {
            assert_eq!(unescaped(&good, &fields), Vec::<String>::new(), "{good:?}");
        }
        // A control character dropped, or written as something else.
        for bad in [
            format!("1 {}", error.replace("\\x08", "")),
            format!("1 {}", queue.replace("\\x07", "?")),
            format!("1 {}", payload.replace("\\x85", "\\u0085")),
        ] {
            assert_eq!(unescaped(&bad, &fields).len(), 1, "{bad:?}");
        }
    }
}
