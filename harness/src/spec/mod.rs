//! The spec the suite judges by, as two pages of rules: FORMAT.md (the
//! library's copy, embedded once), read as numbered sections and their
//! MUST and SHOULD sentences ([`rules`]), and COMMAND.md, the command line
//! and HTTP API read as items with ids and levels ([`items`]). A case
//! names the rule it checks (a section such as `5.4`, or an item such as
//! `work.concurrency`), so that a report can show its heading and text;
//! [`coverage`] says which cases check which rule, by CONFORMANCE.md's
//! tables; [`evolve`] judges an edit of FORMAT.md by the format's promise.

pub mod coverage;
pub mod evolve;
pub mod items;
pub mod requirements;
pub mod rules;

use std::sync::OnceLock;

/// spec/FORMAT.md, as the reference library embeds it.
pub use ukue::spec::FORMAT_MD;

/// spec/COMMAND.md: the command line and the HTTP API, item by item.
pub const COMMAND_MD: &str = include_str!("../../../spec/COMMAND.md");

/// spec/CONFORMANCE.md: what a subject must offer, and every case.
pub const CONFORMANCE_MD: &str = include_str!("../../../spec/CONFORMANCE.md");

/// A page of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Page {
    #[serde(rename = "FORMAT.md")]
    Format,
    #[serde(rename = "COMMAND.md")]
    Command,
}

impl Page {
    pub const ALL: [Page; 2] = [Page::Format, Page::Command];

    pub fn name(self) -> &'static str {
        match self {
            Page::Format => "FORMAT.md",
            Page::Command => "COMMAND.md",
        }
    }

    /// The embedded page.
    pub fn markdown(self) -> &'static str {
        match self {
            Page::Format => FORMAT_MD,
            Page::Command => COMMAND_MD,
        }
    }

    /// The page a text is: one of items is a COMMAND.md.
    pub fn of(markdown: &str) -> Page {
        if items::is_item_page(markdown) {
            Page::Command
        } else {
            Page::Format
        }
    }

    /// The page a rule id belongs to: items have letters first
    /// (`work.concurrency`), FORMAT.md's rules a section number (`5.4`,
    /// `5.4/must-be-a-fresh-random`).
    pub fn of_rule(id: &str) -> Page {
        if items::is_item_id(id) {
            Page::Command
        } else {
            Page::Format
        }
    }

    /// Every rule of a version of this page.
    pub fn rules(self, markdown: &str) -> Vec<rules::Rule> {
        match self {
            Page::Format => rules::rules(markdown),
            Page::Command => items::items(markdown),
        }
    }
}

/// The sections of the embedded FORMAT.md, read once.
pub fn sections() -> &'static [rules::Section] {
    static SECTIONS: OnceLock<Vec<rules::Section>> = OnceLock::new();
    SECTIONS.get_or_init(|| rules::sections(FORMAT_MD))
}

/// The items of the embedded COMMAND.md, read once.
pub fn command_items() -> &'static [rules::Rule] {
    static ITEMS: OnceLock<Vec<rules::Rule>> = OnceLock::new();
    ITEMS.get_or_init(|| items::items(COMMAND_MD))
}

fn section(number: &str) -> Option<&'static rules::Section> {
    sections().iter().find(|s| s.number == number)
}

fn item(id: &str) -> Option<&'static rules::Rule> {
    command_items().iter().find(|i| i.id == id)
}

/// The title of the rule a case names: for FORMAT.md section `number`
/// (such as `2.3` or `5.4`), a heading `### 5.4. Claim`, or a paragraph
/// `2.3. **Refusal.**`, or for an untitled paragraph (`4.1. Every step …`)
/// its first sentence; for a COMMAND.md item, its text.
pub fn title(rule: &str) -> Option<String> {
    match Page::of_rule(rule) {
        Page::Format => section(rule).map(|s| s.name()),
        Page::Command => item(rule).map(|i| i.title.clone()),
    }
}

/// `FORMAT.md §5.4 Claim` or `COMMAND.md work.concurrency`, or the bare
/// rule when the page has no such rule.
pub fn label(rule: &str) -> String {
    match (Page::of_rule(rule), title(rule)) {
        (Page::Format, Some(title)) => format!("FORMAT.md §{rule} {title}"),
        (Page::Format, None) => format!("FORMAT.md §{rule}"),
        (Page::Command, _) => format!("COMMAND.md {rule}"),
    }
}

/// The text of the rule a case names: FORMAT.md section `number` (without
/// its subsections'), or a COMMAND.md item, as `` `id` (level): text ``.
pub fn rule_text(rule: &str) -> Option<String> {
    match Page::of_rule(rule) {
        Page::Format => section(rule).map(|s| s.text.clone()),
        Page::Command => item(rule).map(|i| format!("`{}` ({}): {}", i.id, i.kind.as_str(), i.text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_headings_and_bold_paragraphs() {
        assert_eq!(title("5.4").as_deref(), Some("Claim"));
        assert_eq!(title("2.3").as_deref(), Some("Refusal"));
        assert_eq!(title("1.3").as_deref(), Some("Application id"));
        assert_eq!(title("7").as_deref(), Some("Invariants"));
        assert_eq!(title("9.9"), None);
        assert_eq!(title("4.1").as_deref(), Some("Every step below is one transaction"));
        assert!(rule_text("5.4").is_some_and(|t| t.contains("BEGIN IMMEDIATE")));
    }

    #[test]
    fn command_items_are_rules_too() {
        assert!(title("work.concurrency").is_some_and(|t| t.contains("--concurrency N")));
        assert_eq!(label("work.concurrency"), "COMMAND.md work.concurrency");
        assert_eq!(label("5.4"), "FORMAT.md §5.4 Claim");
        assert!(rule_text("work.concurrency").is_some_and(|t| t.starts_with("`work.concurrency` (must): ")));
        assert_eq!(title("work.no-such-item"), None);
        assert_eq!(Page::of(COMMAND_MD), Page::Command);
        assert_eq!(Page::of(FORMAT_MD), Page::Format);
    }
}
