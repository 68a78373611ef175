//! The spec the suite judges by: FORMAT.md (the library's copy, embedded
//! once), read as numbered rules ([`rules`]), so that a case can name the
//! rule it checks and a report can show its heading and text; which cases
//! check which rule ([`coverage`]); and CONFORMANCE.md, which lists every
//! case and maps the MUST and SHOULD sentences to the cases that check them.

pub mod coverage;
pub mod rules;

use std::sync::OnceLock;

/// spec/FORMAT.md, as the reference library embeds it.
pub use ukue::spec::FORMAT_MD;

/// spec/CONFORMANCE.md: what a subject must offer, and every case.
pub const CONFORMANCE_MD: &str = include_str!("../../../spec/CONFORMANCE.md");

/// The sections of the embedded FORMAT.md, read once.
pub fn sections() -> &'static [rules::Section] {
    static SECTIONS: OnceLock<Vec<rules::Section>> = OnceLock::new();
    SECTIONS.get_or_init(|| rules::sections(FORMAT_MD))
}

fn section(number: &str) -> Option<&'static rules::Section> {
    sections().iter().find(|s| s.number == number)
}

/// The title of FORMAT.md section `number` (such as `2.3` or `5.4`):
/// a heading `### 5.4. Claim`, or a paragraph `2.3. **Refusal.**`; for an
/// untitled paragraph (`4.1. Every step …`), its first sentence.
pub fn title(number: &str) -> Option<String> {
    section(number).map(|s| s.name())
}

/// `§5.4 Claim`, or the bare number when FORMAT.md has no such section.
pub fn label(number: &str) -> String {
    match title(number) {
        Some(title) => format!("FORMAT.md §{number} {title}"),
        None => format!("FORMAT.md §{number}"),
    }
}

/// The text of FORMAT.md section `number` (without its subsections').
pub fn section_text(number: &str) -> Option<String> {
    section(number).map(|s| s.text.clone())
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
        assert!(section_text("5.4").is_some_and(|t| t.contains("BEGIN IMMEDIATE")));
    }
}
