//! The spec the suite judges by: FORMAT.md (the library's copy, embedded
//! once), its numbered rules, so that a case can name the rule it checks
//! and a report can show its heading, and CONFORMANCE.md, which lists
//! every case.

/// spec/FORMAT.md, as the reference library embeds it.
pub use ukue::spec::FORMAT_MD;

/// spec/CONFORMANCE.md: what a subject must offer, and every case.
pub const CONFORMANCE_MD: &str = include_str!("../../spec/CONFORMANCE.md");

/// The title of FORMAT.md section `number` (such as `2.3` or `5.4`):
/// a heading `### 5.4. Claim`, or a paragraph `2.3. **Refusal.**`.
pub fn title(number: &str) -> Option<String> {
    let prefix = format!("{number}. ");
    FORMAT_MD.lines().find_map(|line| {
        let text = line.trim_start_matches('#').trim_start();
        let rest = text.strip_prefix(&prefix)?;
        if line.starts_with('#') {
            return Some(rest.trim().to_string());
        }
        let bold = rest.strip_prefix("**")?;
        let end = bold.find("**")?;
        Some(bold[..end].trim_end_matches('.').to_string())
    })
}

/// `§5.4 Claim`, or the bare number when FORMAT.md has no such section.
pub fn label(number: &str) -> String {
    match title(number) {
        Some(title) => format!("FORMAT.md §{number} {title}"),
        None => format!("FORMAT.md §{number}"),
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
    }
}
