//! FORMAT.md's requirements, each with an identity that survives edits
//! elsewhere on the page: every sentence or list item that says MUST, MUST
//! NOT, SHOULD, SHOULD NOT or MAY; each item of a list that such a sentence
//! introduces (§6.2's four rules); and each row of the tables that define
//! the format (§3.1's keys, §5.1's states and their transitions). Each
//! carries its level, whom it binds and the constants in its words, so that
//! `evolve` can tell an edit of what programs rely on from one that
//! rewords the description around it.
//!
//! A keyword in backticks (`` `MUST` ``) is mentioned, not used, as is one
//! named beside another (`each MUST and SHOULD`): that is how the page
//! talks about its levels without making a requirement.

use serde::Serialize;

use super::rules;

/// A requirement's level, as RFC 2119 uses the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Must,
    MustNot,
    Should,
    ShouldNot,
    May,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::MustNot => "MUST NOT",
            Level::Should => "SHOULD",
            Level::ShouldNot => "SHOULD NOT",
            Level::May => "MAY",
        }
    }

    /// Whether another program may rely on it: what one program must do,
    /// must not do or may do, the others are written to meet. A SHOULD is
    /// advice: no program may count on another having taken it.
    pub fn binding(self) -> bool {
        !matches!(self, Level::Should | Level::ShouldNot)
    }
}

/// Whom a requirement binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binds {
    /// Programs that change the file: add, claim, finish, fail.
    Writers,
    /// Programs that read jobs.
    Readers,
    /// Every program that works with the file.
    Every,
    /// Whoever edits this page (§2.4), no program.
    Editors,
}

impl Binds {
    pub fn as_str(self) -> &'static str {
        match self {
            Binds::Writers => "programs that write",
            Binds::Readers => "programs that read",
            Binds::Every => "every program",
            Binds::Editors => "editors only",
        }
    }
}

/// Where on the page a requirement is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// A sentence that uses a keyword.
    Sentence,
    /// An item of a list that a sentence with a keyword introduces.
    ListItem,
    /// A row of a table that defines the format.
    TableRow,
}

/// The tables that define the format, by their first header cell.
pub const DEFINING_TABLES: [&str; 3] = ["key", "state", "from"];

/// One requirement of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// `5.4/be-a-fresh-random`, `6.2/change-a-running-job`, `3.1/key=format_version`:
    /// its section and its subject (the words after its keyword, a list
    /// item's first words, a row's first cells). The level is not part of
    /// it, so that a requirement whose level changes keeps its id.
    pub id: String,
    pub section: String,
    pub level: Level,
    pub binds: Binds,
    pub form: Form,
    /// For a table row, its table's first header cell (`key`, `state`, `from`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Its words on one line, without emphasis.
    pub text: String,
    /// The constants in its words: numbers with their units, names in
    /// backticks, units of time standing alone.
    pub constants: Vec<String>,
    /// The page's lines it is written on, from 0, first and last.
    #[serde(skip)]
    pub lines: (usize, usize),
}

/// A paragraph, a list item or a table row of one section, with the lines
/// it spans.
#[derive(Debug)]
struct Block {
    section: String,
    kind: BlockKind,
    text: String,
    lines: (usize, usize),
}

#[derive(Debug, PartialEq)]
enum BlockKind {
    Paragraph,
    /// Where a code block starts.
    Code,
    Item,
    Row {
        header: Vec<String>,
        cells: Vec<String>,
    },
}

/// Every requirement of a FORMAT.md, in page order.
pub fn requirements(markdown: &str) -> Vec<Requirement> {
    let blocks = blocks(markdown);
    let mut found: Vec<Requirement> = Vec::new();
    // The level and binds of a sentence that ends in `:`, for the list
    // items that follow it.
    let mut lead: Option<(String, Level, Binds)> = None;
    for block in &blocks {
        match &block.kind {
            BlockKind::Code => lead = None,
            BlockKind::Row { header, cells } => {
                lead = None;
                if DEFINING_TABLES.contains(&header.first().map(String::as_str).unwrap_or("")) {
                    found.push(row(block, header, cells, &blocks));
                }
            }
            kind => {
                let sentences = rules::split_sentences(&block.text);
                let own: Vec<(String, Level)> =
                    sentences.iter().filter_map(|s| level_of(s).map(|l| (s.clone(), l))).collect();
                if *kind == BlockKind::Item && own.is_empty() {
                    if let Some((section, level, binds)) = &lead {
                        if *section == block.section {
                            found.push(Requirement {
                                id: format!("{}/{}", block.section, slug(&block.text, None)),
                                section: block.section.clone(),
                                level: *level,
                                binds: *binds,
                                form: Form::ListItem,
                                table: None,
                                text: plain(&block.text),
                                constants: constants(&block.text),
                                lines: block.lines,
                            });
                            continue;
                        }
                    }
                }
                if *kind == BlockKind::Paragraph {
                    lead = None;
                }
                for (sentence, level) in own {
                    let binds = binds(&block.section, &sentence);
                    if sentence.trim_end().ends_with(':') {
                        lead = Some((block.section.clone(), level, binds));
                    }
                    found.push(Requirement {
                        id: format!("{}/{}", block.section, slug(&sentence, Some(level))),
                        section: block.section.clone(),
                        level,
                        binds,
                        form: Form::Sentence,
                        table: None,
                        text: plain(&sentence),
                        constants: constants(&sentence),
                        lines: block.lines,
                    });
                }
            }
        }
    }
    // Two alike in one section are told apart by their order.
    for i in 0..found.len() {
        let twins = found[..i].iter().filter(|r| same_base(&r.id, &found[i].id)).count();
        if twins > 0 {
            found[i].id = format!("{}-{}", found[i].id, twins + 1);
        }
    }
    found
}

fn same_base(a: &str, b: &str) -> bool {
    let base = |id: &str| -> String {
        match id.rsplit_once('-') {
            Some((head, n)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => head.to_string(),
            _ => id.to_string(),
        }
    };
    a == b || base(a) == b
}

/// A table row: its id from the fewest first cells that tell it from the
/// table's other rows.
fn row(block: &Block, header: &[String], cells: &[String], blocks: &[Block]) -> Requirement {
    let siblings: Vec<&Vec<String>> = blocks
        .iter()
        .filter_map(|b| match &b.kind {
            BlockKind::Row { header: h, cells } if h == header && b.section == block.section => Some(cells),
            _ => None,
        })
        .collect();
    let unquote = |c: &str| {
        let words: Vec<&str> = c.trim_matches('`').split([' ', ',', ';']).filter(|w| !w.is_empty()).collect();
        words.join("-")
    };
    let mut keep = 1;
    while keep < cells.len()
        && siblings.iter().filter(|other| other.iter().take(keep).eq(cells.iter().take(keep))).count() > 1
    {
        keep += 1;
    }
    let subject: Vec<String> =
        header.iter().zip(cells).take(keep).map(|(h, c)| format!("{}={}", unquote(h), unquote(c))).collect();
    Requirement {
        id: format!("{}/{}", block.section, subject.join(",")),
        section: block.section.clone(),
        level: Level::Must,
        binds: Binds::Every,
        form: Form::TableRow,
        table: header.first().cloned(),
        text: plain(&cells.join(" | ")),
        constants: constants(&cells.join(" ; ")),
        lines: block.lines,
    }
}

/// The page's paragraphs, list items and table rows, by section; the text
/// before the first section (the preamble) and code blocks are none.
fn blocks(markdown: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut section: Option<String> = None;
    let mut open = false;
    let mut in_code = false;
    let mut header: Option<Vec<String>> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            open = false;
            // A code block ends a list: a lead-in's items are the ones
            // right after it.
            if let (true, Some(current)) = (in_code, section.clone()) {
                blocks.push(block(current, BlockKind::Code, "", i));
            }
            continue;
        }
        if in_code {
            continue;
        }
        if let Some((number, _, rest)) = rules::section_start(line) {
            section = Some(number);
            open = false;
            header = None;
            if !rest.trim().is_empty() && !line.starts_with('#') {
                blocks.push(block(section.clone().unwrap(), BlockKind::Paragraph, without_title(&rest), i));
                open = true;
            }
            continue;
        }
        let Some(current) = section.clone() else { continue };
        if trimmed.is_empty() || trimmed.starts_with('#') {
            open = false;
            header = None;
            continue;
        }
        if trimmed.starts_with('|') {
            open = false;
            let cells: Vec<String> =
                trimmed.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
            match &header {
                None => header = Some(cells),
                Some(_) if cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':'))) => {}
                Some(h) => {
                    let kind = BlockKind::Row { header: h.clone(), cells: cells.clone() };
                    blocks.push(block(current, kind, &cells.join(" | "), i));
                }
            }
            continue;
        }
        header = None;
        if let Some(rest) = item_start(trimmed) {
            blocks.push(block(current, BlockKind::Item, without_title(rest), i));
            open = true;
            continue;
        }
        match blocks.last_mut() {
            Some(last) if open => {
                last.text.push(' ');
                last.text.push_str(trimmed);
                last.lines.1 = i;
            }
            _ => {
                blocks.push(block(current, BlockKind::Paragraph, trimmed, i));
                open = true;
            }
        }
    }
    blocks
}

fn block(section: String, kind: BlockKind, text: &str, line: usize) -> Block {
    Block { section, kind, text: text.trim().to_string(), lines: (line, line) }
}

/// A paragraph's text without the title it starts with (`**Reap.** A
/// claim …`); a bold word that is the sentence's subject stays (`**Pick**
/// MUST take …`).
fn without_title(text: &str) -> &str {
    text.strip_prefix("**")
        .and_then(|bold| bold.split_once("**"))
        .filter(|(title, _)| title.ends_with('.'))
        .map_or(text, |(_, rest)| rest.trim_start())
}

/// The text after a list item's marker (`- `, `1. `).
fn item_start(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix("- ") {
        return Some(rest);
    }
    let (number, rest) = line.split_once(". ")?;
    (!number.is_empty() && number.len() <= 2 && number.chars().all(|c| c.is_ascii_digit())).then_some(rest)
}

/// A sentence's words on one line, without bold or italics.
pub fn plain(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace("**", "")
}

/// The text with its code spans left out: a keyword in backticks is
/// mentioned, not used.
fn outside_code(text: &str) -> String {
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

/// The keywords a sentence uses, in order. A word named beside another of
/// RFC 2119's (`Each MUST and SHOULD of this page`, `MUST, SHOULD and
/// MAY`), or in backticks, is mentioned, not used.
pub fn levels_used(sentence: &str) -> Vec<Level> {
    let text = outside_code(sentence);
    let w: Vec<&str> = words(&text).collect();
    let rfc =
        |i: Option<usize>| i.and_then(|i| w.get(i)).is_some_and(|w| matches!(*w, "MUST" | "SHOULD" | "MAY"));
    let joins = |i: Option<usize>| i.and_then(|i| w.get(i)).is_some_and(|w| matches!(*w, "and" | "or"));
    (0..w.len())
        .filter_map(|i| {
            let negated = w.get(i + 1) == Some(&"NOT");
            let level = match (w[i], negated) {
                ("MUST", false) => Level::Must,
                ("MUST", true) => Level::MustNot,
                ("SHOULD", false) => Level::Should,
                ("SHOULD", true) => Level::ShouldNot,
                ("MAY", _) => Level::May,
                _ => return None,
            };
            let next = if negated { i + 2 } else { i + 1 };
            let (before, before2) = (i.checked_sub(1), i.checked_sub(2));
            let mentioned = rfc(Some(next))
                || rfc(before)
                || (joins(Some(next)) && rfc(Some(next + 1)))
                || (joins(before) && (rfc(before2) || before2.is_some_and(|j| w[j] == "NOT")));
            (!mentioned).then_some(level)
        })
        .collect()
}

/// The level of a sentence: the first keyword it uses.
pub fn level_of(sentence: &str) -> Option<Level> {
    levels_used(sentence).first().copied()
}

/// Whom a sentence of `section` binds.
fn binds(section: &str, sentence: &str) -> Binds {
    let lower = sentence.to_lowercase();
    if section == "2.4" || section.starts_with("2.4.") {
        Binds::Editors
    } else if ["reads jobs", "read jobs", "reader"].iter().any(|w| lower.contains(w)) {
        Binds::Readers
    } else if lower.contains("every program") {
        Binds::Every
    } else if section.starts_with("5.") && !matches!(section, "5.1" | "5.2" | "5.10") {
        Binds::Writers
    } else {
        Binds::Every
    }
}

/// `be-a-fresh-random`: the four words after the keyword (numbers left
/// out), or the four before it when it ends the sentence; for a list item
/// (`level` None), its first four words.
fn slug(text: &str, level: Option<Level>) -> String {
    let text = outside_code(text);
    let all: Vec<String> = words(&text).map(str::to_string).collect();
    let content = |ws: &[String]| -> Vec<String> {
        ws.iter().filter(|w| !w.chars().all(|c| c.is_ascii_digit())).map(|w| w.to_lowercase()).collect()
    };
    let picked: Vec<String> = match level {
        None => content(&all).into_iter().take(4).collect(),
        Some(level) => {
            let word = level.as_str().split(' ').next().expect("a word");
            let at = all.iter().position(|w| w == word).unwrap_or(0);
            let skip = if level.as_str().contains(' ') { at + 2 } else { at + 1 };
            let after: Vec<String> = content(&all[skip.min(all.len())..]).into_iter().take(4).collect();
            if !after.is_empty() {
                after
            } else {
                let before = content(&all[..at]);
                before[before.len().saturating_sub(4)..].to_vec()
            }
        }
    };
    picked.join("-")
}

/// Units a number may carry, longest first.
const UNITS: [&str; 22] = [
    "hex digits",
    "milliseconds",
    "millisecond",
    "microseconds",
    "nanoseconds",
    "characters",
    "character",
    "seconds",
    "second",
    "minutes",
    "minute",
    "hours",
    "hour",
    "bytes",
    "byte",
    "bits",
    "days",
    "bit",
    "KiB",
    "MiB",
    "ms",
    "s",
];

/// Units of time that count on their own (`times in milliseconds`).
const TIME_UNITS: [&str; 6] = ["milliseconds", "microseconds", "nanoseconds", "seconds", "minutes", "hours"];

/// The constants in a requirement's words: each name in backticks, each
/// number with the unit after it, and each unit of time standing alone. A
/// section's number (`§5.4`) is a reference, not a constant.
pub fn constants(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            found.push(format!("`{part}`"));
            continue;
        }
        let tokens: Vec<&str> = part.split_whitespace().collect();
        let mut skip_unit = false;
        for (j, token) in tokens.iter().enumerate() {
            let bare =
                token.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | ':' | '.' | '"' | '*'));
            if token.starts_with('§') || token.starts_with("(§") {
                continue;
            }
            if is_number(bare) {
                let rest = tokens[j + 1..].join(" ");
                let rest = rest.trim_start_matches('(');
                let unit = UNITS.iter().find(|u| {
                    rest.strip_prefix(*u).is_some_and(|after| {
                        after.is_empty() || after.starts_with(|c: char| !c.is_alphanumeric())
                    })
                });
                match unit {
                    Some(u) => {
                        found.push(format!("{bare} {u}"));
                        skip_unit = true;
                    }
                    None => found.push(bare.to_string()),
                }
                continue;
            }
            if skip_unit {
                skip_unit = false;
                if UNITS.iter().any(|u| u.starts_with(bare) && !bare.is_empty()) {
                    continue;
                }
            }
            if TIME_UNITS.contains(&bare) {
                found.push(bare.to_string());
            }
        }
    }
    found
}

/// `128`, `-100`, `0.5`, `0x756B7565`.
fn is_number(word: &str) -> bool {
    let word = word.strip_prefix(['-', '−']).unwrap_or(word);
    if let Some(hex) = word.strip_prefix("0x") {
        return !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit());
    }
    let mut parts = word.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let fraction = parts.next();
    !whole.is_empty()
        && whole.chars().all(|c| c.is_ascii_digit())
        && fraction.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# Title\n\nThe words MUST, SHOULD and MAY are as in RFC 2119.\n\n## 1. The file\n\n\
        1.1. **SQLite.** A file is a database. It MAY hold more.\n\n\
        1.2. A program SHOULD set a timeout of 5 s, so that it waits. Readers MUST NOT write.\n\n\
        ```sql x\nSELECT 'MUST'\n```\n\n\
        | key | value |\n|---|---|\n| `format_version` | `1` |\n| `created_at` | in milliseconds |\n\n\
        | here | requirement |\n|---|---|\n| §1.2 | MUST NOT write |\n\n\
        ### 1.3. Claim\n\n\
        Every program MUST:\n1. change a job only with its token;\n2. commit, with times in milliseconds.\n\n\
        4. **Pick** MUST take the highest priority, then the id. The token MUST be at least 128 bits (§5.4).\n\n\
        A program that reads jobs MUST accept `TEXT`. Each `MUST` here is mentioned.\n";

    fn ids(page: &str) -> Vec<String> {
        requirements(page).into_iter().map(|r| r.id).collect()
    }

    #[test]
    fn every_level_list_items_and_defining_rows_are_requirements() {
        let found = requirements(PAGE);
        let got: Vec<(&str, Level, Form)> = found.iter().map(|r| (r.id.as_str(), r.level, r.form)).collect();
        assert_eq!(
            got,
            [
                ("1.1/hold-more", Level::May, Form::Sentence),
                ("1.2/set-a-timeout-of", Level::Should, Form::Sentence),
                ("1.2/write", Level::MustNot, Form::Sentence),
                ("1.2/key=format_version", Level::Must, Form::TableRow),
                ("1.2/key=created_at", Level::Must, Form::TableRow),
                ("1.3/every-program", Level::Must, Form::Sentence),
                ("1.3/change-a-job-only", Level::Must, Form::ListItem),
                ("1.3/commit-with-times-in", Level::Must, Form::ListItem),
                ("1.3/take-the-highest-priority", Level::Must, Form::Sentence),
                ("1.3/be-at-least-bits", Level::Must, Form::Sentence),
                ("1.3/accept", Level::Must, Form::Sentence),
            ]
        );
        assert_eq!(found[2].text, "Readers MUST NOT write.");
        assert_eq!(found[2].binds, Binds::Readers);
        assert_eq!(found[5].binds, Binds::Every);
        assert_eq!(found[6].binds, Binds::Every, "a list item binds whom its lead-in binds");
        assert_eq!(found[9].constants, ["128 bits"], "a section reference is no constant");
        assert_eq!(found[7].constants, ["milliseconds"]);
        assert_eq!(found[1].constants, ["5 s"]);
        assert_eq!(found[10].constants, ["`TEXT`"]);
        assert_eq!(found[3].constants, ["`format_version`", "`1`"]);
    }

    #[test]
    fn an_id_keeps_through_a_level_change_and_edits_elsewhere() {
        let edited = PAGE
            .replace("The token MUST be", "The token SHOULD be")
            .replace("Readers MUST NOT write", "Readers MAY write")
            .replace("It MAY hold more.", "");
        let before: Vec<String> = ids(PAGE).into_iter().filter(|id| id != "1.1/hold-more").collect();
        assert_eq!(before, ids(&edited));
    }

    #[test]
    fn twins_are_told_apart_by_order() {
        let twice =
            ids("## 2. Two\n\nIt MUST be. It MUST be. Each MUST and SHOULD here. MUST, SHOULD or MAY.\n");
        assert_eq!(twice, ["2/be", "2/be-2"]);
    }

    #[test]
    fn constants_carry_units_and_leave_references() {
        assert_eq!(
            constants(
                "from -100 to 100, 1 to 200 characters, 0x756B7565 (1969976677), 32 hex digits, §5.6, UTF-8"
            ),
            ["-100", "100", "1", "200 characters", "0x756B7565", "1969976677", "32 hex digits"]
        );
        assert_eq!(constants("waits up to 5 s for another writer"), ["5 s"]);
        assert_eq!(constants("a lease ending `:lease` ms from now"), ["`:lease`"]);
    }

    #[test]
    fn the_real_page_has_its_requirements() {
        let found = requirements(crate::spec::FORMAT_MD);
        let of = |id: &str| found.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("{id}: {found:#?}"));
        assert_eq!(of("3.2/accept-text-as-well").binds, Binds::Readers);
        assert_eq!(of("5.4/be-a-fresh-random").level, Level::Must);
        assert!(of("5.4/be-a-fresh-random").constants.contains(&"128 bits".to_string()));
        assert_eq!(of("1.1/make-a-database-of").level, Level::May);
        let rules: Vec<&Requirement> = found.iter().filter(|r| r.section == "6.2").collect();
        assert_eq!(rules.len(), 5, "the lead-in and its four rules: {rules:#?}");
        assert!(rules[1..].iter().all(|r| r.form == Form::ListItem && r.level == Level::Must));
        for id in ["3.1/key=format_version", "5.1/state=ready", "5.1/from=running,to=dead"] {
            assert_eq!(of(id).form, Form::TableRow);
        }
        assert!(!found.iter().any(|r| r.section == "8"), "§8's tables restate; they define nothing");
        let mut ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(n, ids.len(), "an id twice");
    }
}
