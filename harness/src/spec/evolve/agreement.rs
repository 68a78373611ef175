//! One page against itself (FORMAT.md §2.4.15): where its prose and its
//! SQL state the same fact, they must agree. A page that disagrees with
//! itself is wrong whatever page it is compared with, so each
//! disagreement names both places.
//!
//! Each fact is read from the prose by its section and a few fixed words
//! around it; when the prose no longer says it in those words, the fact
//! is not checked (and the `cargo test` check of spec/FORMAT.md, which
//! asks that every fact be found, fails instead).

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use serde::Serialize;

use super::lex::Token;
use super::probe;
use super::snapshot::Snapshot;
use crate::spec::requirements::{self, Form, Level};
use crate::spec::rules;

/// A fact the prose and the SQL both state, and how they differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// What fact: `a limit and its CHECK`, …
    pub fact: &'static str,
    /// Where the prose states it, and what it says.
    pub prose: String,
    /// Where the SQL (or the page's other place) states it, and what it says.
    pub sql: String,
}

/// The facts checked, for a report of what was compared.
pub const FACTS: [&str; 9] =
    [LIMIT, DEFAULT, APPLICATION_ID, TIME_UNIT, BUSY_TIMEOUT, BACKOFF, STATES, VERSION, LEVELS];
const LIMIT: &str = "a limit and its CHECK";
const DEFAULT: &str = "a default and its DEFAULT";
const APPLICATION_ID: &str = "the application id and the statement that sets it";
const TIME_UNIT: &str = "the unit of times and the factor in the defaults";
const BUSY_TIMEOUT: &str = "the busy timeout and its statement";
const BACKOFF: &str = "the backoff and the statements that compute it";
const STATES: &str = "the states and the state column's CHECK";
const VERSION: &str = "the version of the title, §2.1 and §3.1";
const LEVELS: &str = "§8's list of requirements and the page's";

/// What the check found: the disagreements, and the facts it found stated
/// in both places.
#[derive(Debug, Default)]
pub struct Agreement {
    pub disagreements: Vec<Disagreement>,
    pub checked: Vec<&'static str>,
}

/// The page against itself.
pub fn check(page: &Snapshot) -> Agreement {
    let sections = rules::sections(&page.markdown);
    let text = |number: &str| -> String {
        sections.iter().find(|s| s.number == number).map(|s| prose(&s.text)).unwrap_or_default()
    };
    let mut a = Agreement::default();
    limits(page, &sections, &mut a);
    defaults(page, &sections, &mut a);
    application_id(page, &text("1.3"), &mut a);
    time_unit(page, &text("1.5"), &mut a);
    busy_timeout(page, &text("4.1"), &mut a);
    backoff(page, &text("5.6"), &mut a);
    states(page, &mut a);
    version(page, &mut a);
    levels(page, &sections, &mut a);
    a.checked.dedup();
    a
}

impl Agreement {
    fn found(&mut self, fact: &'static str) {
        self.checked.push(fact);
    }

    fn differ(&mut self, fact: &'static str, prose: String, sql: String) {
        self.checked.push(fact);
        self.disagreements.push(Disagreement { fact, prose, sql });
    }
}

/// A section's words on one line, without its code blocks.
fn prose(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            out.push(line.trim());
        }
    }
    out.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The words of a text with the punctuation around them trimmed.
fn tokens(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | ':' | '.' | '"' | '*')).to_string()
        })
        .collect()
}

fn integer(word: &str) -> Option<i64> {
    word.replace('−', "-").parse().ok()
}

fn column<'a>(page: &'a Snapshot, name: &str) -> Option<&'a super::snapshot::Column> {
    page.tables.get("ukue_jobs")?.columns.iter().find(|c| c.name == name)
}

/// §3.2's columns: `- `queue` names the queue, 1 to 200 characters`
/// against the column's CHECK, at both ends and one past each.
fn limits(page: &Snapshot, sections: &[rules::Section], a: &mut Agreement) {
    let Some(section) = sections.iter().find(|s| s.number == "3.2") else { return };
    for item in items(&section.text) {
        let Some(name) = item.strip_prefix('`').and_then(|r| r.split('`').next()) else { continue };
        let Some(col) = column(page, name) else { continue };
        let words = tokens(&item);
        let Some(k) = (1..words.len().saturating_sub(1)).find(|&k| {
            words[k] == "to" && integer(&words[k - 1]).is_some() && integer(&words[k + 1]).is_some()
        }) else {
            continue;
        };
        let (low, high) = (integer(&words[k - 1]).unwrap(), integer(&words[k + 1]).unwrap());
        let text = words.get(k + 2).is_some_and(|w| w.starts_with("character"));
        let said = if text { format!("{low} to {high} characters") } else { format!("from {low} to {high}") };
        let prose = format!("§3.2 says `{name}` is {said}");
        let Some(check) = &col.check else {
            a.differ(LIMIT, prose, format!("ukue_jobs.{name} has no CHECK"));
            continue;
        };
        let value = |n: i64| {
            if text {
                Value::Text("x".repeat(n.max(0) as usize))
            } else {
                Value::Integer(n)
            }
        };
        let shown = |n: i64| if text { format!("a text of {n} characters") } else { n.to_string() };
        let mut wrong = Vec::new();
        for (n, takes) in [(low, true), (high, true), (low - 1, false), (high + 1, false)] {
            if text && n < 0 {
                continue;
            }
            match probe::passes(&page.db, name, check, &value(n)) {
                Some(t) if t != takes => {
                    wrong.push(format!("{} {}", if t { "takes" } else { "refuses" }, shown(n)))
                }
                _ => {}
            }
        }
        if wrong.is_empty() {
            a.found(LIMIT);
        } else {
            let sql =
                format!("ukue_jobs.{name}'s CHECK ({}) {}", super::lex::render(check), wrong.join(" and "));
            a.differ(LIMIT, prose, sql);
        }
    }
}

/// The list items of a section's text, each on one line.
fn items(text: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("- ") {
            items.push(rest.trim().to_string());
            open = true;
        } else if open && line.starts_with("  ") && !line.trim().is_empty() {
            let last = items.last_mut().expect("an open item");
            last.push(' ');
            last.push_str(line.trim());
        } else {
            open = false;
        }
    }
    items
}

/// `left to its default (priority 0, max_attempts 10, run_at now)`, in any
/// section but §2.4's (whose examples change defaults on purpose), against
/// the columns' DEFAULTs.
fn defaults(page: &Snapshot, sections: &[rules::Section], a: &mut Agreement) {
    for section in sections.iter().filter(|s| !s.number.starts_with("2.4")) {
        let text = prose(&section.text);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("default (") {
            let inside = &rest[at + "default (".len()..];
            let Some(end) = inside.find(')') else { break };
            for part in inside[..end].split(", ") {
                let Some((name, said)) = part.trim().split_once(' ') else { continue };
                let Some(col) = column(page, name) else { continue };
                default_agrees(page, &section.number, name, said, col.default.as_deref(), a);
            }
            rest = &inside[end..];
        }
    }
}

fn default_agrees(
    page: &Snapshot,
    section: &str,
    name: &str,
    said: &str,
    default: Option<&str>,
    a: &mut Agreement,
) {
    let prose = format!("§{section} says `{name}` defaults to {said}");
    let Some(default) = default else {
        a.differ(DEFAULT, prose, format!("ukue_jobs.{name} has no DEFAULT"));
        return;
    };
    let sql = format!("ukue_jobs.{name}'s DEFAULT is {default}");
    let agrees = if said == "now" {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let value: Option<i64> = page.db.query_row(&format!("SELECT ({default})"), [], |r| r.get(0)).ok();
        value.is_some_and(|v| (v - now).abs() < 86_400_000)
    } else {
        integer(said).is_some_and(|n| integer(default.trim_matches(['(', ')'])) == Some(n))
            || said.trim_matches('\'') == default.trim_matches('\'')
    };
    if agrees {
        a.found(DEFAULT);
    } else if said == "now" {
        a.differ(DEFAULT, prose, format!("{sql}, which is not now in milliseconds"));
    } else {
        a.differ(DEFAULT, prose, sql);
    }
}

/// The first number token of a statement after its `=`.
fn assigned(page: &Snapshot, statement: &str) -> Option<i64> {
    let (tokens, _) = page.statements.get(statement)?;
    let at = tokens.iter().position(|t| matches!(t, Token::Punct(p) if p == "="))?;
    tokens[at + 1..].iter().find_map(|t| match t {
        Token::Num(n) => n.parse().ok(),
        _ => None,
    })
}

/// §1.3's `0x756B7565 (1969976677, the bytes "ukue")` against itself and
/// `set_application_id`.
fn application_id(page: &Snapshot, text: &str, a: &mut Agreement) {
    let words = tokens(text);
    let Some(hex) =
        words.iter().find_map(|w| w.strip_prefix("0x").and_then(|h| i64::from_str_radix(h, 16).ok()))
    else {
        return;
    };
    let decimal = words.iter().skip_while(|w| !w.starts_with("0x")).skip(1).find_map(|w| integer(w));
    let bytes = text.split_once("the bytes \"").and_then(|(_, r)| r.split('"').next());
    let prose = format!("§1.3 gives application_id 0x{hex:08X}");
    let as_text = |n: i64| String::from_utf8_lossy(&(n as u32).to_be_bytes()).into_owned();
    if let Some(d) = decimal.filter(|d| *d != hex) {
        a.differ(APPLICATION_ID, format!("{prose} and {d}"), format!("0x{hex:08X} is {hex}"));
    }
    if let Some(b) = bytes.filter(|b| *b != as_text(hex)) {
        a.differ(
            APPLICATION_ID,
            format!("{prose}, \"the bytes \\\"{b}\\\"\""),
            format!("0x{hex:08X} is the bytes \"{}\"", as_text(hex)),
        );
    }
    match assigned(page, "set_application_id") {
        Some(set) if set != hex => {
            a.differ(APPLICATION_ID, prose, format!("statement set_application_id sets {set} (0x{set:08X})"))
        }
        Some(_) => a.found(APPLICATION_ID),
        None => {}
    }
}

/// The application id a page gives its files: the one its statement
/// sets, or else the one §1.3 names.
pub fn application_id_of(page: &Snapshot) -> Option<i64> {
    assigned(page, "set_application_id").or_else(|| {
        let sections = rules::sections(&page.markdown);
        let text = sections.iter().find(|s| s.number == "1.3").map(|s| prose(&s.text))?;
        tokens(&text).iter().find_map(|w| w.strip_prefix("0x").and_then(|h| i64::from_str_radix(h, 16).ok()))
    })
}

/// The unit of time §1.5 counts in, and how many of it make a day.
fn per_day(unit: &str) -> Option<i64> {
    Some(match unit {
        "milliseconds" => 86_400_000,
        "seconds" => 86_400,
        "microseconds" => 86_400_000_000,
        "minutes" => 1_440,
        _ => return None,
    })
}

/// §1.5's `Times are whole milliseconds` against the factor every time
/// default turns days into (`* 86400000`).
fn time_unit(page: &Snapshot, text: &str, a: &mut Agreement) {
    let Some((unit, factor)) = tokens(text).into_iter().find_map(|w| per_day(&w).map(|f| (w, f))) else {
        return;
    };
    let Some(table) = page.tables.get("ukue_jobs") else { return };
    for col in table.columns.iter().filter(|c| c.default.as_deref().is_some_and(|d| d.contains("julianday")))
    {
        let default = col.default.as_deref().unwrap_or_default();
        let numbers: Vec<i64> = super::lex::tokens(default)
            .iter()
            .filter_map(|t| match t {
                Token::Num(n) => n.parse().ok(),
                _ => None,
            })
            .collect();
        if numbers.contains(&factor) {
            a.found(TIME_UNIT);
        } else {
            a.differ(
                TIME_UNIT,
                format!("§1.5 counts times in {unit} ({factor} a day)"),
                format!("ukue_jobs.{}'s DEFAULT is {default}", col.name),
            );
        }
    }
}

/// `N s` or `N ms` after `up to` in §4.1, against `set_busy_timeout`.
fn busy_timeout(page: &Snapshot, text: &str, a: &mut Agreement) {
    let words = tokens(text);
    let Some(k) = (0..words.len().saturating_sub(3))
        .find(|&k| words[k] == "up" && words[k + 1] == "to" && integer(&words[k + 2]).is_some())
    else {
        return;
    };
    let n = integer(&words[k + 2]).unwrap();
    let ms = match words[k + 3].as_str() {
        "s" | "seconds" => n * 1000,
        "ms" | "milliseconds" => n,
        _ => return,
    };
    match assigned(page, "set_busy_timeout") {
        Some(set) if set != ms => a.differ(
            BUSY_TIMEOUT,
            format!("§4.1 waits up to {n} {} ({ms} ms)", words[k + 3]),
            format!("statement set_busy_timeout sets {set} ms"),
        ),
        Some(_) => a.found(BUSY_TIMEOUT),
        None => {}
    }
}

/// §5.6's `10 s × 2^(n−1), at most an hour` against the base and the cap
/// in `fail` and `reap_ready`.
fn backoff(page: &Snapshot, text: &str, a: &mut Agreement) {
    let words = tokens(text);
    let Some(k) = (0..words.len().saturating_sub(2))
        .find(|&k| integer(&words[k]).is_some() && words[k + 1] == "s" && words[k + 2] == "×")
    else {
        return;
    };
    let base = integer(&words[k]).unwrap() * 1000;
    let cap = text.split_once("at most ").and_then(|(_, rest)| {
        let w: Vec<&str> = rest.split_whitespace().take(2).collect();
        let n = if matches!(w.first(), Some(&"an") | Some(&"a")) { 1 } else { integer(w.first()?)? };
        Some(
            n * match w.get(1)?.trim_matches(|c: char| !c.is_alphanumeric()) {
                "hour" | "hours" => 3_600_000,
                "minute" | "minutes" => 60_000,
                "s" | "seconds" => 1000,
                _ => return None,
            },
        )
    });
    let prose = match cap {
        Some(cap) => format!("§5.6's backoff is {} s × 2^(n−1), at most {cap} ms", base / 1000),
        None => format!("§5.6's backoff is {} s × 2^(n−1)", base / 1000),
    };
    for name in ["fail", "reap_ready"] {
        let Some((tokens, _)) = page.statements.get(name) else { continue };
        let numbers: Vec<i64> = tokens
            .iter()
            .filter_map(|t| match t {
                Token::Num(n) => n.parse().ok(),
                _ => None,
            })
            .collect();
        let shifted = tokens.windows(2).any(|w| {
            matches!((&w[0], &w[1]), (Token::Num(n), Token::Punct(p)) if p == "<<" && n.parse() == Ok(base))
        });
        let capped = cap.is_none_or(|c| numbers.contains(&c));
        if shifted && capped {
            a.found(BACKOFF);
        } else {
            let base_sql = tokens
                .windows(2)
                .find_map(|w| match (&w[0], &w[1]) {
                    (Token::Num(n), Token::Punct(p)) if p == "<<" => Some(n.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| "no".to_string());
            a.differ(
                BACKOFF,
                prose.clone(),
                format!("statement {name} shifts {base_sql} ms, and its numbers are {numbers:?}"),
            );
        }
    }
}

/// §5.1's table of states against the texts the state column's CHECK names.
fn states(page: &Snapshot, a: &mut Agreement) {
    let listed: std::collections::BTreeSet<String> = requirements::requirements(&page.markdown)
        .into_iter()
        .filter(|r| r.form == Form::TableRow && r.table.as_deref() == Some("state"))
        .filter_map(|r| r.text.split(" | ").next().map(|c| c.trim_matches('`').to_string()))
        .collect();
    if listed.is_empty() {
        return;
    }
    let checked = page.states();
    if listed == checked {
        a.found(STATES);
    } else {
        let show = |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        a.differ(
            STATES,
            format!("§5.1's table of states lists {}", show(&listed)),
            format!("ukue_jobs.state's CHECK takes {}", show(&checked)),
        );
    }
}

/// The title's `version N`, §2.1's and §3.1's `format_version` row.
fn version(page: &Snapshot, a: &mut Agreement) {
    let title = page
        .markdown
        .lines()
        .find(|l| l.starts_with("# "))
        .and_then(|l| l.rsplit_once("version ").map(|(_, v)| v.trim().to_string()));
    let row = requirements::requirements(&page.markdown)
        .into_iter()
        .find(|r| r.id.ends_with("/key=format_version"))
        .and_then(|r| r.text.split(" | ").nth(1).map(|v| v.trim_matches('`').to_string()));
    let v = page.version.to_string();
    for (place, said) in [("the title", title), ("§3.1's row of `format_version`", row)] {
        match said {
            Some(s) if s != v => {
                a.differ(VERSION, format!("{place} says version {s}"), format!("§2.1 says version {v}"))
            }
            Some(_) => a.found(VERSION),
            None => {}
        }
    }
}

/// §8's table (`| §5.4 | MUST … |`), counted by section and level, against
/// the page's own MUST and SHOULD sentences.
fn levels(page: &Snapshot, sections: &[rules::Section], a: &mut Agreement) {
    use std::collections::BTreeMap;
    let Some(index) =
        sections.iter().find(|s| s.title.as_deref() == Some("Where each requirement comes from"))
    else {
        return;
    };
    let mut listed: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut in_table = false;
    for line in index.text.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        if !line.trim().starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        if cells.first() == Some(&"here") && cells.get(1) == Some(&"requirement") {
            in_table = true;
            continue;
        }
        let (Some(here), Some(req)) = (cells.first(), cells.get(1)) else { continue };
        let Some(section) = here.strip_prefix('§') else { continue };
        let level = if req.starts_with("MUST NOT") {
            Level::MustNot
        } else if req.starts_with("MUST") {
            Level::Must
        } else if req.starts_with("SHOULD NOT") {
            Level::ShouldNot
        } else if req.starts_with("SHOULD") {
            Level::Should
        } else {
            continue;
        };
        *listed.entry((section.to_string(), level.as_str())).or_default() += 1;
    }
    if listed.is_empty() {
        return;
    }
    let mut written: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    for r in requirements::requirements(&page.markdown) {
        if r.form == Form::Sentence && r.level != Level::May {
            *written.entry((r.section.clone(), r.level.as_str())).or_default() += 1;
        }
    }
    let mut keys: Vec<&(String, &str)> = listed.keys().chain(written.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut differ = false;
    for key in keys {
        let (l, w) = (listed.get(key).copied().unwrap_or(0), written.get(key).copied().unwrap_or(0));
        if l != w {
            differ = true;
            a.differ(
                LEVELS,
                format!("§8 lists {l} {} of §{}", key.1, key.0),
                format!("§{} has {w} {} sentence{}", key.0, key.1, if w == 1 { "" } else { "s" }),
            );
        }
    }
    if !differ {
        a.found(LEVELS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::FORMAT_MD;

    fn disagreements(page: &str) -> Vec<Disagreement> {
        check(&Snapshot::read(page).unwrap()).disagreements
    }

    #[test]
    fn spec_format_md_agrees_with_itself_on_every_fact() {
        let a = check(&Snapshot::read(FORMAT_MD).unwrap());
        assert_eq!(a.disagreements, [], "spec/FORMAT.md disagrees with itself");
        for fact in FACTS {
            assert!(
                a.checked.contains(&fact),
                "the check no longer finds {fact:?} on the page: {:?}",
                a.checked
            );
        }
    }

    /// Each fact, stated otherwise in one place only, is a disagreement
    /// that names both places.
    #[test]
    fn each_fact_changed_in_one_place_disagrees() {
        let edits: [(&str, &str, &str, &str); 12] = [
            (
                "`queue` names the queue, 1 to 200 characters",
                "`queue` names the queue, 1 to 100 characters",
                LIMIT,
                "§3.2",
            ),
            ("`priority` from -100 to 100", "`priority` from -1000 to 1000", LIMIT, "CHECK"),
            (
                "(priority 0, max_attempts 10,\nrun_at now)",
                "(priority 0, max_attempts 5,\nrun_at now)",
                DEFAULT,
                "max_attempts",
            ),
            ("0x756B7565 (1969976677", "0x756B7566 (1969976677", APPLICATION_ID, "0x756B7566"),
            (
                "PRAGMA application_id = 1969976677",
                "PRAGMA application_id = 1969976678",
                APPLICATION_ID,
                "set_application_id",
            ),
            (
                "1.5. **Times** are whole milliseconds",
                "1.5. **Times** are whole seconds",
                TIME_UNIT,
                "86400000",
            ),
            ("waits up to\n5 s", "waits up to\n2 s", BUSY_TIMEOUT, "5000"),
            ("2^(*n*−1), at\nmost an hour", "2^(*n*−1), at\nmost 2 hours", BACKOFF, "fail"),
            ("| `done` | finished", "| `kept` | finished", STATES, "kept"),
            ("This page is\nversion `1`.", "This page is\nversion `2`.", VERSION, "title"),
            ("| §5.4 | MUST count the attempt", "| §5.4 | SHOULD count the attempt", LEVELS, "§5.4"),
            ("the take MUST count the attempt", "the take SHOULD count the attempt", LEVELS, "§5.4"),
        ];
        for (from, to, fact, named) in edits {
            assert!(FORMAT_MD.contains(from), "the page no longer says {from:?}");
            let found = disagreements(&FORMAT_MD.replacen(from, to, 1));
            assert!(
                found.iter().any(|d| d.fact == fact && format!("{} {}", d.prose, d.sql).contains(named)),
                "{from:?} → {to:?}: no disagreement on {fact:?} naming {named:?}: {found:#?}"
            );
        }
    }
}
