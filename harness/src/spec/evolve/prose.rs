//! The page's words judged (FORMAT.md §2.4.13 and §2.4.14): each
//! requirement of the old page paired with the new page's, and each
//! requirement removed, added, moved, or whose level, words or constants
//! changed, with its verdict.
//!
//! Requirements pair by id (their section and subject, which a level
//! change keeps), then by words: one that moved to another section
//! unchanged, or whose subject words changed, is still the same
//! requirement.

use std::collections::BTreeMap;

use super::{rule, Findings, Verdict};
use crate::spec::requirements::{Binds, Form, Level, Requirement};

/// How much two texts must share, in words, to be one requirement
/// reworded rather than one removed and another added.
const SAME_REQUIREMENT: f64 = 0.6;

/// Adds a finding for each requirement the edit touched.
pub(super) fn compare(old: &[Requirement], new: &[Requirement], found: &mut Findings) {
    for (o, n) in pair(old, new) {
        match (o, n) {
            (Some(o), Some(n)) => changed(o, n, found),
            (None, Some(n)) => added_or_removed(n, "added", found),
            (Some(o), None) => added_or_removed(o, "removed", found),
            (None, None) => {}
        }
    }
}

/// The old and new pages' requirements paired: by id, then the same
/// words elsewhere (moved), then most words in common within a section.
pub fn pair<'a>(
    old: &'a [Requirement],
    new: &'a [Requirement],
) -> Vec<(Option<&'a Requirement>, Option<&'a Requirement>)> {
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    let mut old_left: Vec<usize> = Vec::new();
    let by_id: BTreeMap<&str, usize> = new.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
    let mut new_taken = vec![false; new.len()];
    for (i, o) in old.iter().enumerate() {
        match by_id.get(o.id.as_str()) {
            Some(&j) => {
                new_taken[j] = true;
                pairs.push((Some(i), Some(j)));
            }
            None => old_left.push(i),
        }
    }
    let mut unpaired_old = Vec::new();
    for i in old_left {
        let o = &old[i];
        let same_words = |n: &Requirement| n.form == o.form && words_only(&n.text) == words_only(&o.text);
        let best = (0..new.len()).filter(|&j| !new_taken[j]).find(|&j| same_words(&new[j])).or_else(|| {
            (0..new.len())
                .filter(|&j| !new_taken[j] && new[j].section == o.section && new[j].form == o.form)
                .map(|j| (j, similarity(&o.text, &new[j].text)))
                .filter(|(_, s)| *s >= SAME_REQUIREMENT)
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(j, _)| j)
        });
        match best {
            Some(j) => {
                new_taken[j] = true;
                pairs.push((Some(i), Some(j)));
            }
            None => unpaired_old.push(i),
        }
    }
    pairs.extend(unpaired_old.into_iter().map(|i| (Some(i), None)));
    pairs.extend((0..new.len()).filter(|&j| !new_taken[j]).map(|j| (None, Some(j))));
    pairs.into_iter().map(|(o, n)| (o.map(|i| &old[i]), n.map(|j| &new[j]))).collect()
}

/// A text's words, lowercased, without its level's keywords: what stays
/// when only the level changes.
fn words_only(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty() && !matches!(*w, "MUST" | "SHOULD" | "MAY" | "NOT"))
        .map(str::to_lowercase)
        .collect()
}

/// The share of words two texts have in common (of the longer).
fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (words_only(a), words_only(b));
    let common = lcs(&a, &b).iter().filter(|p| matches!(p, Piece::Same(_))).count();
    common as f64 / a.len().max(b.len()).max(1) as f64
}

/// A word of a word-by-word diff.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Piece {
    Same(String),
    Gone(String),
    New(String),
}

/// The words of `old` and `new`, each kept, gone or new (the longest
/// common subsequence of the two).
fn lcs(old: &[String], new: &[String]) -> Vec<Piece> {
    let (n, m) = (old.len(), new.len());
    let mut table = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i][j] =
                if old[i] == new[j] { table[i + 1][j + 1] + 1 } else { table[i + 1][j].max(table[i][j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            out.push(Piece::Same(old[i].clone()));
            i += 1;
            j += 1;
        } else if i < n && (j == m || table[i + 1][j] >= table[i][j + 1]) {
            out.push(Piece::Gone(old[i].clone()));
            i += 1;
        } else {
            out.push(Piece::New(new[j].clone()));
            j += 1;
        }
    }
    out
}

/// Two texts word by word.
pub fn word_diff(old: &str, new: &str) -> Vec<Piece> {
    let split = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    lcs(&split(old), &split(new))
}

/// `[-old-]{+new+}` around the words an edit changed, as `git diff
/// --word-diff` shows them.
pub fn word_diff_text(pieces: &[Piece]) -> String {
    render(pieces, ("[-", "-]"), ("{+", "+}"))
}

/// `~~old~~ **new**`, for Markdown.
pub fn word_diff_markdown(pieces: &[Piece]) -> String {
    render(pieces, ("~~", "~~"), ("**", "**"))
}

fn render(pieces: &[Piece], gone: (&str, &str), new: (&str, &str)) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        let run = |i: &mut usize, want: fn(&Piece) -> Option<&String>| -> Vec<String> {
            let mut words = Vec::new();
            while let Some(w) = pieces.get(*i).and_then(want) {
                words.push(w.clone());
                *i += 1;
            }
            words
        };
        if let Piece::Same(w) = &pieces[i] {
            out.push(w.clone());
            i += 1;
            continue;
        }
        let gone_words = run(&mut i, |p| if let Piece::Gone(w) = p { Some(w) } else { None });
        let new_words = run(&mut i, |p| if let Piece::New(w) = p { Some(w) } else { None });
        if !gone_words.is_empty() {
            out.push(format!("{}{}{}", gone.0, gone_words.join(" "), gone.1));
        }
        if !new_words.is_empty() {
            out.push(format!("{}{}{}", new.0, new_words.join(" "), new.1));
        }
    }
    out.join(" ")
}

/// Whether a level lets another program rely on what it says: a MUST that
/// a thing always happens, a MUST NOT that it never does; SHOULD, SHOULD
/// NOT and MAY all leave it open, so a program copes either way.
fn relied_on(level: Level) -> Option<bool> {
    match level {
        Level::Must => Some(true),
        Level::MustNot => Some(false),
        Level::Should | Level::ShouldNot | Level::May => None,
    }
}

/// The rule that judges a change of `r`: its table's, or §2.4.13.
fn rule_of(r: &Requirement) -> &'static str {
    match r.table.as_deref() {
        Some("key") => rule::SETTINGS,
        Some("state") => rule::STATES,
        Some("from") => rule::STEPS,
        _ => rule::REQUIREMENTS,
    }
}

/// `MUST (programs that read, a sentence)`.
fn described(r: &Requirement) -> String {
    let form = match r.form {
        Form::Sentence => "",
        Form::ListItem => ", a list item",
        Form::TableRow => ", a row of a defining table",
    };
    format!("{} ({}{form})", r.level.as_str(), r.binds.as_str())
}

fn added_or_removed(r: &Requirement, how: &str, found: &mut Findings) {
    // The keys and states a table lists are judged from the schema and
    // the key table as SQLite and the snapshot read them (§2.4.6, §2.4.8),
    // and against each other by the page's own agreement.
    if r.form == Form::TableRow && matches!(r.table.as_deref(), Some("key" | "state")) {
        return;
    }
    let needs = r.level.binding() || r.form == Form::TableRow;
    let why = match (needs, how) {
        (true, "added") => "programs that followed the earlier page need not meet it".to_string(),
        (true, _) => "programs of the earlier page rely on it".to_string(),
        (false, _) => "advice: no program relies on another following it".to_string(),
    };
    let verdict = if needs { Verdict::NeedsNewVersion } else { Verdict::Allowed };
    found.add(rule_of(r), verdict, r.binds, r.id.clone(), format!("{} {how}: {why}", described(r)));
    let last = found.0.last_mut().expect("just added");
    match how {
        "added" => last.new_text = Some(r.text.clone()),
        _ => last.old_text = Some(r.text.clone()),
    }
}

fn changed(o: &Requirement, n: &Requirement, found: &mut Findings) {
    let mut how: Vec<String> = Vec::new();
    let mut needs = false;
    let mut rule = rule_of(n);
    if o.level != n.level {
        let (was, is) = (relied_on(o.level), relied_on(n.level));
        let what = match (was, is) {
            (Some(_), None) => "weakened",
            (None, Some(_)) => "made binding",
            (Some(_), Some(_)) => "turned round",
            (None, None) => "still advice or a permission",
        };
        needs |= was != is;
        how.push(format!("{} → {}: {what}", o.level.as_str(), n.level.as_str()));
    }
    let words_changed = words_only(&o.text) != words_only(&n.text);
    let (gone, new) = constants_diff(&o.constants, &n.constants);
    if !gone.is_empty() || !new.is_empty() {
        how.push(format!("its constants: {} → {}", list(&gone), list(&new)));
        if units_changed(&gone, &new) {
            rule = rule::UNITS;
        } else if rule == rule::REQUIREMENTS {
            rule = rule::CONSTANTS;
        }
    } else if words_changed {
        how.push("its words".to_string());
    }
    if words_changed || !gone.is_empty() || !new.is_empty() {
        needs |= o.level.binding() || n.level.binding() || n.form == Form::TableRow;
    }
    if o.section != n.section {
        how.push(format!("moved from §{} to §{}", o.section, n.section));
    }
    if how.is_empty() {
        return;
    }
    let verdict = if needs { Verdict::NeedsNewVersion } else { Verdict::Allowed };
    let change = format!("{} changed: {}", described(o), how.join("; "));
    found.add(rule, verdict, n.binds, n.id.clone(), change);
    let last = found.0.last_mut().expect("just added");
    last.old_text = Some(o.text.clone());
    last.new_text = Some(n.text.clone());
}

/// The constants the old words have and the new ones lack, and the other
/// way round, each as often as it differs.
fn constants_diff(old: &[String], new: &[String]) -> (Vec<String>, Vec<String>) {
    let mut gone: Vec<String> = old.to_vec();
    let mut added: Vec<String> = Vec::new();
    for c in new {
        match gone.iter().position(|g| g == c) {
            Some(i) => {
                gone.remove(i);
            }
            None => added.push(c.clone()),
        }
    }
    (gone, added)
}

fn list(constants: &[String]) -> String {
    if constants.is_empty() {
        "none".to_string()
    } else {
        constants.join(", ")
    }
}

/// Whether the constants that changed carry another unit of time: times
/// counted in another unit (§2.4.9).
fn units_changed(gone: &[String], new: &[String]) -> bool {
    let unit = |c: &String| -> Option<&'static str> {
        let last = c.rsplit(' ').next()?;
        Some(match last {
            "ms" | "millisecond" | "milliseconds" => "ms",
            "s" | "second" | "seconds" => "s",
            "minute" | "minutes" => "min",
            "hour" | "hours" => "h",
            "microseconds" => "µs",
            "nanoseconds" => "ns",
            "days" => "d",
            _ => return None,
        })
    };
    let mut was: Vec<&str> = gone.iter().filter_map(unit).collect();
    let mut is: Vec<&str> = new.iter().filter_map(unit).collect();
    was.sort();
    is.sort();
    !was.is_empty() && !is.is_empty() && was != is
}

impl Binds {
    /// Whom a change of a statement of `section` affects: its readers for
    /// §5.10's reads, its writers for the other steps, every program for
    /// the rest of the page.
    pub fn of_section(section: &str) -> Binds {
        if section == "5.10" {
            Binds::Readers
        } else if section.starts_with("5.") {
            Binds::Writers
        } else {
            Binds::Every
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_diff_marks_what_changed() {
        let pieces = word_diff("The token MUST be at least 128 bits.", "The token MAY be at least 64 bits.");
        assert_eq!(word_diff_text(&pieces), "The token [-MUST-] {+MAY+} be at least [-128-] {+64+} bits.");
        assert_eq!(
            word_diff_markdown(&pieces),
            "The token ~~MUST~~ **MAY** be at least ~~128~~ **64** bits."
        );
    }

    #[test]
    fn units_of_time_that_change_are_units() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(units_changed(&s(&["milliseconds"]), &s(&["seconds"])));
        assert!(units_changed(&s(&["5 s"]), &s(&["5 ms"])));
        assert!(!units_changed(&s(&["5 s"]), &s(&["2 s"])));
        assert!(!units_changed(&s(&["128 bits"]), &s(&["64 bits"])));
    }
}
