//! COMMAND.md read as items: each list entry `` - `work.concurrency`
//! (must): … `` under a numbered section is one rule of the command line,
//! with its level. Unlike FORMAT.md's sentences, an item's id is written on
//! the page, so it stays the same however its words change.

use super::rules::{Rule, RuleKind};

/// Every item of a COMMAND.md, in page order, as rules of kind `must` or
/// `should`.
pub fn items(markdown: &str) -> Vec<Rule> {
    let mut items: Vec<Rule> = Vec::new();
    let mut section = String::new();
    let mut open = false;
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            open = false;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(number) = heading_number(line) {
            section = number;
            open = false;
        } else if let Some((id, kind, rest)) = item_start(line) {
            items.push(Rule {
                id,
                kind,
                section: section.clone(),
                title: rest.to_string(),
                text: rest.to_string(),
            });
            open = true;
        } else if open && line.starts_with("  ") && !line.trim().is_empty() {
            let item = items.last_mut().expect("an open item");
            item.text.push(' ');
            item.text.push_str(line.trim());
            item.title = item.text.clone();
        } else {
            open = false;
        }
    }
    items
}

/// Whether `markdown` is a page of items (a COMMAND.md), not of sections
/// and sentences (a FORMAT.md).
pub fn is_item_page(markdown: &str) -> bool {
    markdown.lines().any(|line| item_start(line).is_some())
}

/// `5` for `## 5. ukue work …`.
fn heading_number(line: &str) -> Option<String> {
    let text = line.strip_prefix("## ").or_else(|| line.strip_prefix("### "))?;
    let (number, _) = text.split_once(". ")?;
    (!number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.')).then(|| number.to_string())
}

/// `(id, kind, the text after the colon)` for `` - `id` (must): text ``.
fn item_start(line: &str) -> Option<(String, RuleKind, &str)> {
    let rest = line.strip_prefix("- `")?;
    let (id, rest) = rest.split_once('`')?;
    if !is_item_id(id) {
        return None;
    }
    let rest = rest.strip_prefix(" (")?;
    let (level, rest) = rest.split_once("):")?;
    let kind = match level {
        "must" => RuleKind::Must,
        "should" => RuleKind::Should,
        _ => return None,
    };
    Some((id.to_string(), kind, rest.trim()))
}

/// `work.concurrency`, `http.claim-wait`: lowercase words joined by dots
/// and dashes, at least one dot, starting with a letter (so that no item
/// id can be read as a FORMAT.md section number).
pub fn is_item_id(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_lowercase())
        && id.contains('.')
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && !id.ends_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# Title\n\nIntro, with `a.b` mentioned.\n\n## 1. Conventions\n\n\
        - `exit.success` (must): A command exits 0.\n\
        - `exit.usage` (should): A bad flag is exit 2,\n  and nothing is written.\n\
        - plain text, not an item\n\n\
        ```sh\n- `code.block` (must): not an item\n```\n\n\
        ## 5. `ukue work`\n\n- `work.concurrency` (must): Up to N.\n  Never more.\n\nAfter.\n\
        - `Bad.Id` (must): no\n- `noperiod` (must): no\n- `x.y` (maybe): no\n";

    #[test]
    fn items_have_ids_levels_sections_and_their_whole_text() {
        let found = items(PAGE);
        let got: Vec<(&str, RuleKind, &str, &str)> =
            found.iter().map(|r| (r.id.as_str(), r.kind, r.section.as_str(), r.text.as_str())).collect();
        assert_eq!(
            got,
            [
                ("exit.success", RuleKind::Must, "1", "A command exits 0."),
                ("exit.usage", RuleKind::Should, "1", "A bad flag is exit 2, and nothing is written."),
                ("work.concurrency", RuleKind::Must, "5", "Up to N. Never more."),
            ]
        );
        assert!(is_item_page(PAGE));
        assert!(!is_item_page(crate::spec::FORMAT_MD));
    }

    #[test]
    fn item_ids_cannot_be_section_numbers() {
        for id in ["work.concurrency", "http.claim-wait", "a.b2"] {
            assert!(is_item_id(id), "{id}");
        }
        for id in ["5.4", "5", "work", "Work.x", "work.", "work concurrency"] {
            assert!(!is_item_id(id), "{id}");
        }
    }

    #[test]
    fn the_real_page_has_its_items_once_each() {
        let found = items(crate::spec::COMMAND_MD);
        assert!(found.len() > 100, "{} items", found.len());
        let mut ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
        for id in ["work.concurrency", "add.payload-stdin", "exit.usage", "json.job"] {
            assert!(ids.contains(&id), "{id}");
        }
        assert!(found.iter().all(|r| !r.section.is_empty() && !r.text.is_empty()));
        ids.sort();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "an item id used twice");
    }
}
