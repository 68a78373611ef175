//! FORMAT.md read as rules: each numbered section (a heading `### 5.4.
//! Claim`, or a paragraph `2.3. **Refusal.** …`) with its own text, and
//! each sentence in it that says MUST or SHOULD.
//!
//! A sentence's id is its section, its word and the four words after it
//! (`5.4/must-be-a-fresh-random`): it stays the same when other sentences,
//! or other words of the same sentence, change, so that
//! `ukue-conformance coverage --diff` can tell a changed rule from a new one.

use serde::Serialize;

use super::requirements::{self, Level};

/// A numbered section of the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// `5.4`, `7`.
    pub number: String,
    /// The heading, or the bold words a numbered paragraph starts with.
    pub title: Option<String>,
    /// Its own text (without its subsections'), as markdown.
    pub text: String,
    /// Its MUST and SHOULD sentences.
    pub sentences: Vec<Sentence>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Keyword {
    Must,
    Should,
}

impl Keyword {
    pub fn as_str(self) -> &'static str {
        match self {
            Keyword::Must => "must",
            Keyword::Should => "should",
        }
    }
}

/// A sentence that says MUST (or MUST NOT) or SHOULD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    /// `5.4/must-be-a-fresh-random`.
    pub id: String,
    /// The first of the two words it says.
    pub keyword: Keyword,
    /// The sentence, on one line.
    pub text: String,
}

/// What a rule is: a section, or a sentence in one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    Section,
    Must,
    Should,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Section => "section",
            RuleKind::Must => "must",
            RuleKind::Should => "should",
        }
    }
}

/// A rule: a section or a MUST/SHOULD sentence, with a stable id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub id: String,
    pub kind: RuleKind,
    /// The section it is (or is in).
    pub section: String,
    /// The section's title, or the sentence.
    pub title: String,
    /// The section's own text, or the sentence.
    pub text: String,
}

/// The numbered sections of a FORMAT.md, in page order. The text before
/// the first one (the preamble) is not a rule.
pub fn sections(markdown: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            if let Some((number, title, rest)) = section_start(line) {
                sections.push(Section { number, title, text: rest, sentences: Vec::new() });
                continue;
            }
        }
        if let Some(section) = sections.last_mut() {
            if !section.text.is_empty() || !line.trim().is_empty() {
                section.text.push('\n');
                section.text.push_str(line);
            }
        }
    }
    for section in &mut sections {
        section.text = section.text.trim_matches('\n').trim_end().to_string();
        section.sentences = sentences(&section.number, &section.text);
    }
    sections
}

impl Section {
    /// Its title, or for an untitled one its first sentence.
    pub fn name(&self) -> String {
        self.title.clone().unwrap_or_else(|| first_words(&self.text))
    }
}

/// Every rule of the page: each section, followed by its sentences.
pub fn rules(markdown: &str) -> Vec<Rule> {
    let mut rules = Vec::new();
    for section in sections(markdown) {
        let title = section.name();
        rules.push(Rule {
            id: section.number.clone(),
            kind: RuleKind::Section,
            section: section.number.clone(),
            title,
            text: section.text.clone(),
        });
        for sentence in section.sentences {
            rules.push(Rule {
                id: sentence.id,
                kind: match sentence.keyword {
                    Keyword::Must => RuleKind::Must,
                    Keyword::Should => RuleKind::Should,
                },
                section: section.number.clone(),
                title: sentence.text.clone(),
                text: sentence.text,
            });
        }
    }
    rules
}

/// `(number, title, the rest of the line)` when `line` starts a section: a
/// heading `## 7. Invariants`, or a paragraph `1.5. **Times** are …`.
pub(crate) fn section_start(line: &str) -> Option<(String, Option<String>, String)> {
    if line.starts_with("## ") || line.starts_with("### ") {
        let text = line.trim_start_matches('#').trim_start();
        let (number, title) = text.split_once(". ")?;
        return is_number(number, false)
            .then(|| (number.to_string(), Some(title.trim().to_string()), String::new()));
    }
    let (number, rest) = line.split_once(". ")?;
    if !is_number(number, true) {
        return None;
    }
    let title =
        rest.strip_prefix("**").and_then(|bold| bold.find("**").map(|end| bold[..end].trim_end_matches('.')));
    Some((number.to_string(), title.map(str::to_string), rest.to_string()))
}

/// `5`, `5.4` or `2.4.1` (when `dotted`, not `5`): digits, at most two
/// dots. A heading is never three deep; a paragraph may be, for the rules
/// of a numbered paragraph (`2.4.1` under `2.4`).
fn is_number(text: &str, dotted: bool) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    let digits = parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    let deepest = if dotted { 3 } else { 2 };
    digits && parts.len() <= deepest && (parts.len() > 1 || !dotted)
}

/// A title for an untitled section: its first sentence, or its first words.
fn first_words(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let sentence = line.split(". ").next().unwrap_or(line).trim_end_matches('.');
    let words: Vec<&str> = sentence.split_whitespace().take(10).collect();
    words.join(" ")
}

/// The MUST and SHOULD sentences of a section's text: prose only (no code
/// block, table row or heading), a paragraph's lines (a list with them)
/// joined into one.
fn sentences(number: &str, text: &str) -> Vec<Sentence> {
    let mut paragraphs: Vec<String> = vec![String::new()];
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            paragraphs.push(String::new());
        } else if in_code || trimmed.starts_with('|') || trimmed.starts_with('#') || trimmed.is_empty() {
            paragraphs.push(String::new());
        } else if list_item(trimmed) && !paragraphs.last().is_some_and(|p| p.ends_with([':', ';'])) {
            // An item ends the sentence before it, unless that sentence
            // leads into the list (`MUST:`) or the item before ran on (`;`).
            paragraphs.push(trimmed.to_string());
        } else if let Some(last) = paragraphs.last_mut() {
            last.push(' ');
            last.push_str(trimmed);
        }
    }
    let mut found: Vec<Sentence> = Vec::new();
    for paragraph in paragraphs {
        for sentence in split_sentences(&paragraph) {
            let Some(keyword) = keyword_of(&sentence) else { continue };
            let mut id = format!("{number}/{}", slug(&sentence, keyword));
            let base = id.clone();
            let mut n = 1;
            while found.iter().any(|s| s.id == id) {
                n += 1;
                id = format!("{base}-{n}");
            }
            found.push(Sentence { id, keyword, text: sentence.replace("**", "") });
        }
    }
    found
}

/// Whether a line starts a list item (`- …`, `2. …`).
fn list_item(line: &str) -> bool {
    line.starts_with("- ")
        || line
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit()))
}

/// A paragraph's sentences: each ends at `.`, `!` or `?` before a space
/// and a capital letter, or at the paragraph's end.
pub(crate) fn split_sentences(paragraph: &str) -> Vec<String> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..chars.len() {
        let ends = matches!(chars[i], '.' | '!' | '?')
            && chars.get(i + 1) == Some(&' ')
            && chars.get(i + 2).is_some_and(|c| c.is_ascii_uppercase());
        if ends {
            out.push(chars[start..=i].iter().collect::<String>());
            start = i + 1;
        }
    }
    out.push(chars[start..].iter().collect());
    out.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

/// MUST or SHOULD, whichever the sentence uses first (a MUST NOT is a
/// MUST, a SHOULD NOT a SHOULD); a mentioned one is none
/// ([`requirements::levels_used`]).
fn keyword_of(sentence: &str) -> Option<Keyword> {
    requirements::levels_used(sentence).into_iter().find_map(|level| match level {
        Level::Must | Level::MustNot => Some(Keyword::Must),
        Level::Should | Level::ShouldNot => Some(Keyword::Should),
        Level::May => None,
    })
}

/// `must-be-a-fresh-random`: the word, then the four words after it
/// (numbers left out: a list's `1.`).
fn slug(sentence: &str, keyword: Keyword) -> String {
    let word = keyword.as_str().to_uppercase();
    let mut after = words(sentence).skip_while(|w| *w != word).skip(1);
    let next: Vec<String> = after
        .by_ref()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .take(4)
        .map(str::to_lowercase)
        .collect();
    std::iter::once(keyword.as_str().to_string()).chain(next).collect::<Vec<_>>().join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# Title\n\nThe words MUST and SHOULD are as in RFC 2119.\n\n## 1. The file\n\n\
        1.1. **SQLite.** A file is a database. It MAY hold more.\n\n\
        1.2. A program SHOULD set a timeout, so that it waits. Readers MUST NOT write.\n\n\
        ```sql x\nSELECT 'MUST'\n```\n\n\
        | a | MUST |\n\n\
        ### 1.3. Claim\n\n\
        Every program MUST:\n1. change a job only with its token;\n2. commit.\n\n\
        4. **Pick** MUST take the highest priority, then the id. The token MUST be fresh.\n\n\
        1.3.1. **Order.** Ties go to the smallest id.\n";

    #[test]
    fn sections_are_headings_and_numbered_paragraphs() {
        let found = sections(PAGE);
        let numbers: Vec<&str> = found.iter().map(|s| s.number.as_str()).collect();
        assert_eq!(numbers, ["1", "1.1", "1.2", "1.3", "1.3.1"]);
        assert_eq!(found[4].title.as_deref(), Some("Order"), "a paragraph's rules are sections too");
        assert!(!found[3].text.contains("smallest id"), "a section's text ends where its rules start");
        assert_eq!(found[1].title.as_deref(), Some("SQLite"));
        assert_eq!(found[2].title, None);
        assert_eq!(found[3].title.as_deref(), Some("Claim"));
        assert!(found[2].text.contains("SELECT 'MUST'"), "code stays in the section's text");
        assert!(!found[0].text.contains("RFC 2119"), "the preamble is no section");
    }

    #[test]
    fn sentences_say_must_or_should_outside_code_and_tables() {
        let found = sections(PAGE);
        assert!(found[1].sentences.is_empty(), "MAY is no rule");
        let ids: Vec<&str> = found[2].sentences.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["1.2/should-set-a-timeout-so", "1.2/must-not-write"]);
        let claim: Vec<(&str, &str)> =
            found[3].sentences.iter().map(|s| (s.id.as_str(), s.text.as_str())).collect();
        assert_eq!(
            claim,
            [
                (
                    "1.3/must-change-a-job-only",
                    "Every program MUST: 1. change a job only with its token; 2. commit."
                ),
                (
                    "1.3/must-take-the-highest-priority",
                    "4. Pick MUST take the highest priority, then the id."
                ),
                ("1.3/must-be-fresh", "The token MUST be fresh."),
            ]
        );
    }

    #[test]
    fn an_id_survives_edits_elsewhere_and_two_alike_are_told_apart() {
        let edited = PAGE.replace("then the id", "then the smallest id").replace("It MAY hold more.", "");
        let ids = |page: &str| rules(page).into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(PAGE), ids(&edited));
        let twice = sections(
            "## 2. Two\n\nIt MUST be. It MUST be. Each MUST and SHOULD here. MUST, SHOULD or MAY.\n",
        );
        let ids: Vec<&str> = twice[0].sentences.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["2/must-be", "2/must-be-2"]);
    }

    #[test]
    fn the_real_page_has_its_rules() {
        let rules = rules(crate::spec::FORMAT_MD);
        let ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
        for id in
            ["1.1", "4.1", "5.4", "7", "8", "5.4/must-be-a-fresh-random", "2.3/should-refuse-a-file-whose"]
        {
            assert!(ids.contains(&id), "{id} not in {ids:?}");
        }
        assert!(
            !ids.iter().any(|id| id.starts_with("8/")),
            "the table of section 8 holds no sentence: {ids:?}"
        );
    }
}
