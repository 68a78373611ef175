//! Edits generated from spec/FORMAT.md itself, one at a time: every MUST
//! lowered to MAY, and every number of every requirement changed. Each
//! must get its verdict from the text alone; none may pass unseen.

use super::snapshot::Snapshot;
use super::{compare, Evolution, Verdict};
use crate::spec::requirements::{self, Form, Level, Requirement};
use crate::spec::{CONFORMANCE_MD, FORMAT_MD};

fn judge(old: &Snapshot, new_md: &str) -> Evolution {
    let new = Snapshot::read(new_md).unwrap_or_else(|e| panic!("the edited page does not read: {e}"));
    compare(old, &new, CONFORMANCE_MD, &[])
}

/// Byte offsets of `word` standing alone in the page's prose: after the
/// preamble, outside code blocks.
fn occurrences(page: &str, word: &str) -> Vec<usize> {
    let body = page.find("\n## 1.").expect("a first section");
    let mut found = Vec::new();
    let mut offset = 0;
    let mut in_code = false;
    for line in page.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && offset > body {
            let mut from = 0;
            while let Some(at) = line[from..].find(word) {
                let start = from + at;
                let end = start + word.len();
                let alone = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '`');
                if alone(line[..start].chars().next_back()) && alone(line[end..].chars().next()) {
                    found.push(offset + start);
                }
                from = end;
            }
        }
        offset += line.len();
    }
    found
}

/// Each `MUST` (and `MUST NOT`) of the page made `MAY`, one at a time: the
/// edit breaks the promise, unless the word is only named (§8's "Each MUST
/// and SHOULD of this page"). A MUST of §8's table lowered leaves §8
/// disagreeing with the page.
#[test]
fn every_must_lowered_to_may_breaks_the_promise() {
    let old = Snapshot::read(FORMAT_MD).unwrap();
    let before = requirements::requirements(FORMAT_MD);
    let musts = before
        .iter()
        .filter(|r| r.form == Form::Sentence && matches!(r.level, Level::Must | Level::MustNot))
        .count();
    let mut lowered = 0;
    let mut named = Vec::new();
    let mut passed = Vec::new();
    for at in occurrences(FORMAT_MD, "MUST") {
        let word = if FORMAT_MD[at..].starts_with("MUST NOT") { "MUST NOT" } else { "MUST" };
        let edited = format!("{}MAY{}", &FORMAT_MD[..at], &FORMAT_MD[at + word.len()..]);
        let after = requirements::requirements(&edited);
        let line = FORMAT_MD[..at].lines().count();
        let in_table = FORMAT_MD[..at].rsplit('\n').next().is_some_and(|l| l.starts_with('|'));
        if after == before && !in_table {
            named.push(line);
            continue;
        }
        lowered += 1;
        let e = judge(&old, &edited);
        // The requirement itself is found weakened, not only §8 left
        // disagreeing with the page.
        let changed: Vec<&Requirement> = before.iter().filter(|r| changes(r, &edited)).collect();
        let found = changed
            .iter()
            .all(|r| e.findings.iter().any(|f| f.subject == r.id && f.verdict == Verdict::NeedsNewVersion));
        if !e.breaks() || !found {
            passed.push(format!("line {line}: {:?}", e.findings));
        }
    }
    assert!(passed.is_empty(), "a MUST lowered to MAY got exit 0:\n{}", passed.join("\n"));
    assert!(lowered >= musts, "{lowered} MUSTs lowered, the page has {musts}");
    assert!(named.len() <= 2, "MUSTs that the page only names, on lines {named:?}: a requirement missed?");
}

/// The digits of a requirement's words, each run a number (a section's
/// number, `§5.4`, is a reference).
fn numbers(text: &str) -> Vec<String> {
    let mut runs = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let run: String = chars[start..i].iter().collect::<String>().trim_end_matches('.').to_string();
            let reference = start > 0 && chars[start - 1] == '§';
            if !reference {
                runs.push(run);
            }
        } else {
            i += 1;
        }
    }
    runs
}

/// The page with the number at `at` (its last digit) changed.
fn bumped(page: &str, at: usize, len: usize) -> String {
    let last = at + len - 1;
    let digit = page.as_bytes()[last] - b'0';
    format!("{}{}{}", &page[..last], (digit + 1) % 10, &page[last + 1..])
}

fn line_offsets(page: &str) -> Vec<usize> {
    std::iter::once(0).chain(page.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

/// Every number in the words of every requirement changed, one at a time:
/// each edit finds the requirement changed,
/// and none goes unseen.
#[test]
fn every_number_of_a_requirement_changed_is_found() {
    let old = Snapshot::read(FORMAT_MD).unwrap();
    let before = requirements::requirements(FORMAT_MD);
    let lines = line_offsets(FORMAT_MD);
    let mut unseen = Vec::new();
    let mut missed = Vec::new();
    let mut tried = 0;
    for r in &before {
        for number in numbers(&r.text) {
            let (from, to) = (lines[r.lines.0], lines.get(r.lines.1 + 1).copied().unwrap_or(FORMAT_MD.len()));
            let mut landed = false;
            for (at, _) in FORMAT_MD[from..to].match_indices(number.as_str()) {
                let at = from + at;
                let edited = bumped(FORMAT_MD, at, number.len());
                if !changes(r, &edited) {
                    continue;
                }
                landed = true;
                tried += 1;
                let e = judge(&old, &edited);
                let seen = e.findings.iter().any(|f| f.subject == r.id);
                if !seen {
                    unseen.push(format!("{} {number}: {:?}", r.id, e.findings));
                }
            }
            if !landed {
                missed.push(format!("{} {number}", r.id));
            }
        }
    }
    assert!(unseen.is_empty(), "a number of a requirement changed, and no finding:\n{}", unseen.join("\n"));
    assert!(missed.is_empty(), "numbers the test could not find on the page: {missed:?}");
    assert!(tried >= 15, "only {tried} numbers tried");
}

/// Whether the edit changed requirement `r`'s words.
fn changes(r: &Requirement, edited: &str) -> bool {
    requirements::requirements(edited).iter().find(|n| n.id == r.id).is_none_or(|n| n.text != r.text)
}
