//! Implementations side by side (`ukue-conformance compare`), as Bowtie
//! shows JSON Schema's: a row a case, with its level; a column an
//! implementation, named by what its `version` printed; a cell a verdict.
//! The rows whose verdicts differ come first, and a `must` case that
//! passes one implementation and fails another is marked: if both follow
//! the format, the suite gave a false verdict; if not, one of them has a
//! bug. Made from [`CaseReport`]s alone, so that saved JSON reports make
//! the same matrix as live runs.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::html::{esc, STYLE};
use super::{CaseReport, RunInfo, Status};
use crate::cases::Level;

/// One implementation's run (or its shards): what it was, and its cases.
#[derive(Debug, Clone)]
pub struct Column {
    /// What each run (or shard) was.
    pub runs: Vec<RunInfo>,
    pub reports: Vec<CaseReport>,
    /// How long it ran (its longest shard).
    pub elapsed: std::time::Duration,
}

/// A column's head: the implementation as the reports name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    /// What its `version` printed (its program's name when it printed
    /// nothing), with the program's name added where two would read alike.
    pub name: String,
    pub implementation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// The reference its cases compared it with, or why there was none.
    pub reference: String,
    pub seeds: Vec<u64>,
    /// The run in one line: `191 cases in 70.2 s: 185 pass, 6 skipped`.
    pub tally: String,
}

/// A cell: the case's verdict in one column (None: the column did not run it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub status: Option<Status>,
    /// What was expected and seen, for a verdict that is not a pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl Cell {
    pub fn text(&self) -> &'static str {
        self.status.map_or("not run", Status::as_str)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub id: String,
    pub level: Level,
    pub rule: String,
    /// In the columns' order.
    pub cells: Vec<Cell>,
    /// The verdicts are not all the same.
    pub differs: bool,
    /// A `must` case that passes one implementation and fails another:
    /// which, and what follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspect: Option<String>,
}

/// The matrix: its columns, and its rows with the differing ones first
/// (the suspect ones first of all), each group in catalogue order.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    pub columns: Vec<Head>,
    pub rows: Vec<Row>,
    /// Rows whose verdicts differ; of those, suspect ones.
    pub differ: usize,
    pub suspect: usize,
    /// Said of the whole matrix (the columns ran with different seeds…).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Whether a verdict counts as passing, or failing, for the suspect mark:
/// an expected failure still fails; a skip or a warning is neither.
fn passes(status: Status) -> bool {
    matches!(status, Status::Pass | Status::UnexpectedPass)
}

fn fails(status: Status) -> bool {
    matches!(status, Status::Fail | Status::Error | Status::Timeout | Status::ExpectedFailure)
}

/// A case's verdict over a soak's passes: the worst one (a failure over a
/// warning over a skip over a pass), and its report.
fn worst<'a>(reports: impl Iterator<Item = &'a CaseReport>) -> BTreeMap<&'a str, &'a CaseReport> {
    let rank = |s: Status| match s {
        Status::Pass => 0,
        Status::Skipped => 1,
        Status::Warn | Status::ExpectedFailure => 2,
        _ => 3,
    };
    let mut by_id: BTreeMap<&str, &CaseReport> = BTreeMap::new();
    for r in reports {
        let kept = by_id.entry(r.id.as_str()).or_insert(r);
        if rank(r.status) > rank(kept.status) {
            *kept = r;
        }
    }
    by_id
}

/// A program's name: the last part of its path.
fn program(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Matrix {
    pub fn of(columns: &[Column]) -> Matrix {
        let mut heads: Vec<Head> = columns
            .iter()
            .map(|c| {
                let mut seeds: Vec<u64> = c.runs.iter().map(|r| r.seed).collect();
                seeds.dedup();
                let run = c.runs.first();
                let implementation = run.map(|r| r.implementation.clone()).unwrap_or_default();
                Head {
                    name: run
                        .and_then(|r| r.implementation_version.clone())
                        .unwrap_or_else(|| program(&implementation).to_string()),
                    implementation,
                    interpreter: run.and_then(|r| r.implementation_interpreter.clone()),
                    reference: run.map(RunInfo::reference_text).unwrap_or_default(),
                    seeds,
                    tally: super::tally(&c.reports, c.elapsed),
                }
            })
            .collect();
        // Two implementations that print the same version: their programs' names tell them apart.
        for round in 0..2 {
            let names: Vec<String> = heads.iter().map(|h| h.name.clone()).collect();
            for (i, head) in heads.iter_mut().enumerate() {
                if names.iter().filter(|n| **n == names[i]).count() > 1 {
                    let by = if round == 0 { program(&head.implementation) } else { &head.implementation };
                    head.name = format!("{} · {by}", head.name);
                }
            }
        }
        let verdicts: Vec<BTreeMap<&str, &CaseReport>> =
            columns.iter().map(|c| worst(c.reports.iter())).collect();
        // Catalogue order: the first column's, then cases only later columns ran.
        let mut ids: Vec<&str> = Vec::new();
        for column in columns {
            for r in &column.reports {
                if !ids.contains(&r.id.as_str()) {
                    ids.push(r.id.as_str());
                }
            }
        }
        let mut rows: Vec<Row> = ids.iter().map(|id| row(id, &verdicts, &heads)).collect();
        rows.sort_by_key(|r| (r.suspect.is_none(), !r.differs));
        let mut notes = Vec::new();
        let seeds: std::collections::BTreeSet<u64> = heads.iter().flat_map(|h| h.seeds.clone()).collect();
        if seeds.len() > 1 {
            notes.push(format!(
                "the runs had different seeds ({}): a case that draws values may differ by its seed alone",
                seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        Matrix {
            differ: rows.iter().filter(|r| r.differs).count(),
            suspect: rows.iter().filter(|r| r.suspect.is_some()).count(),
            columns: heads,
            rows,
            notes,
        }
    }

    /// The matrix in one line: `191 cases, 2 implementations: 5 differ, none suspect`.
    pub fn verdict(&self) -> String {
        format!(
            "{} cases, {} implementations: {} differ; {} must {} one implementation and {} another",
            self.rows.len(),
            self.columns.len(),
            self.differ,
            self.suspect,
            if self.suspect == 1 { "case passes" } else { "cases pass" },
            if self.suspect == 1 { "fails" } else { "fail" },
        )
    }

    /// The rows to list: all, or only those that differ.
    fn listed(&self, differing: bool) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.differs || !differing)
    }

    /// The listed rows, each with its label in Markdown (in bold where it
    /// differs). With `differing`, the unmarked rows of one family that
    /// differ alike (the same level and verdicts), three or more, are one
    /// row: `**30 cases of http/**`, where an implementation has no
    /// `serve`.
    fn folded(&self, differing: bool) -> Vec<(String, &Row)> {
        let key = |r: &Row| {
            let cells: Vec<&str> = r.cells.iter().map(Cell::text).collect();
            (super::family(&r.id).to_string(), r.level.as_str(), cells)
        };
        let listed: Vec<&Row> = self.listed(differing).collect();
        let alike = |r: &Row| listed.iter().filter(|o| o.suspect.is_none() && key(o) == key(r)).count();
        let mut folded: Vec<(String, &Row)> = Vec::new();
        let mut done = Vec::new();
        for r in listed.iter().copied() {
            let n = if differing && r.suspect.is_none() { alike(r) } else { 1 };
            if n < 3 {
                let label = if r.differs { format!("**{}**", r.id) } else { r.id.clone() };
                folded.push((label, r));
            } else if !done.contains(&key(r)) {
                done.push(key(r));
                folded.push((format!("**{n} cases of {}/**", super::family(&r.id)), r));
            }
        }
        folded
    }

    /// What the unlisted rows are, counted by their verdict:
    /// `186 agree: 180 pass, 6 skipped`.
    fn agreeing(&self) -> String {
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for r in self.rows.iter().filter(|r| !r.differs) {
            *by.entry(r.cells.first().map_or("not run", Cell::text)).or_insert(0) += 1;
        }
        let counted: Vec<String> = by.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let agree = self.rows.len() - self.differ;
        format!(
            "{agree} {} where every implementation agrees: {}",
            if agree == 1 { "case" } else { "cases" },
            if counted.is_empty() { "none".to_string() } else { counted.join(", ") }
        )
    }

    /// For a terminal: the columns lettered (A, B…) and named below the table.
    pub fn human(&self, differing: bool) -> String {
        let mut out = String::new();
        let letters: Vec<String> = (0..self.columns.len()).map(letter).collect();
        for (head, letter) in self.columns.iter().zip(&letters) {
            let by = head.interpreter.as_deref().map(|i| format!(" (run by {i})")).unwrap_or_default();
            let seeds: Vec<String> = head.seeds.iter().map(|s| s.to_string()).collect();
            let _ = writeln!(out, "{letter}  {}: {}{by}", head.name, shown(&head.implementation));
            let _ = writeln!(
                out,
                "   seed {}, reference {}; {}",
                seeds.join(", "),
                shown(&head.reference),
                head.tally
            );
        }
        let width = self.rows.iter().map(|r| r.id.len()).max().unwrap_or(4).max(4);
        let _ = write!(out, "\n{:<width$}  {:<6}", "case", "level");
        for letter in &letters {
            let _ = write!(out, "  {letter:<16}");
        }
        let _ = writeln!(out);
        let mut shown_agreeing = false;
        for r in self.listed(differing) {
            if !r.differs && !shown_agreeing {
                let _ = writeln!(out, "-- {} --", self.agreeing());
                shown_agreeing = true;
            }
            let _ = write!(out, "{:<width$}  {:<6}", r.id, r.level.as_str());
            for cell in &r.cells {
                let _ = write!(out, "  {:<16}", cell.text());
            }
            let _ = writeln!(out);
            if let Some(suspect) = &r.suspect {
                let _ = writeln!(out, "{:width$}  ^ {suspect}", "");
            }
        }
        if differing {
            let _ = writeln!(out, "{}", self.agreeing());
        }
        self.ending(&mut out);
        out.lines().map(|l| format!("{}\n", l.trim_end())).collect()
    }

    fn ending(&self, out: &mut String) {
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let _ = writeln!(out, "\n{}", self.verdict());
    }

    /// For a README or a pull request: a table headed by the columns' names.
    pub fn markdown(&self, differing: bool) -> String {
        let mut out = String::new();
        let _ = write!(out, "| case | level |");
        for head in &self.columns {
            let _ = write!(out, " {} |", cell_md(&head.name));
        }
        let _ = write!(out, "\n|---|---|");
        for _ in &self.columns {
            let _ = write!(out, "---|");
        }
        let _ = writeln!(out);
        for (label, r) in self.folded(differing) {
            let _ = write!(out, "| {label} | {} |", r.level.as_str());
            for cell in &r.cells {
                let _ = write!(out, " {} |", cell.text());
            }
            let _ = writeln!(out);
        }
        if differing || self.differ == 0 {
            let _ = writeln!(out, "\n{}.", self.agreeing());
        }
        let suspects: Vec<&Row> = self.rows.iter().filter(|r| r.suspect.is_some()).collect();
        if !suspects.is_empty() {
            let _ = writeln!(out);
            for r in suspects {
                let _ = writeln!(out, "- **{}**: {}", r.id, r.suspect.as_deref().unwrap_or_default());
            }
        }
        let _ = writeln!(out);
        for head in &self.columns {
            let by = head.interpreter.as_deref().map(|i| format!(", run by `{i}`")).unwrap_or_default();
            let seeds: Vec<String> = head.seeds.iter().map(|s| s.to_string()).collect();
            let _ = writeln!(
                out,
                "- {}: `{}`{by}; seed {}; reference {}; {}",
                cell_md(&head.name),
                shown(&head.implementation),
                seeds.join(", "),
                shown(&head.reference),
                head.tally
            );
        }
        self.ending(&mut out);
        out
    }

    /// One self-contained page, styled as the run's report.
    pub fn html(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
             <title>ukue implementations compared</title><style>{STYLE}{MATRIX_STYLE}</style></head><body>\
             <h1>ukue implementations side by side</h1><p class=\"verdict {}\">{}</p>",
            if self.suspect > 0 { "bad" } else { "ok" },
            esc(&self.verdict())
        );
        for note in &self.notes {
            let _ = write!(out, "<p>Note: {}</p>", esc(note));
        }
        out.push_str(
            "<table class=\"run\"><tr><th>column</th><th>implementation</th><th>seed</th><th>reference</th><th>cases</th></tr>",
        );
        for head in &self.columns {
            let by = head
                .interpreter
                .as_deref()
                .map(|i| format!("<br><small>run by <code>{}</code></small>", esc(i)))
                .unwrap_or_default();
            let seeds: Vec<String> = head.seeds.iter().map(|s| s.to_string()).collect();
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code>{by}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&head.name),
                esc(&head.implementation),
                seeds.join(", "),
                esc(&head.reference),
                esc(&head.tally)
            );
        }
        out.push_str("</table><h2>Cases</h2><table class=\"matrix\"><tr><th>case</th><th>level</th>");
        for head in &self.columns {
            let _ = write!(out, "<th>{}</th>", esc(&head.name));
        }
        out.push_str("</tr>");
        let span = self.columns.len() + 2;
        let mut shown_agreeing = false;
        for r in &self.rows {
            if !r.differs && !shown_agreeing {
                let _ = write!(
                    out,
                    "<tr class=\"group\"><td colspan=\"{span}\">{}</td></tr>",
                    esc(&self.agreeing())
                );
                shown_agreeing = true;
            }
            let class = if r.suspect.is_some() {
                " class=\"suspect\""
            } else if r.differs {
                " class=\"differs\""
            } else {
                ""
            };
            let _ = write!(
                out,
                "<tr{class}><td title=\"{}\">{}</td><td>{}</td>",
                esc(&r.rule),
                esc(&r.id),
                r.level.as_str()
            );
            for cell in &r.cells {
                let class = cell.status.map_or("not-run".to_string(), |s| s.as_str().replace(' ', "-"));
                let title: Vec<&str> = cell.detail.iter().chain(&cell.replay).map(String::as_str).collect();
                let _ = write!(
                    out,
                    "<td><span class=\"chip {class}\" title=\"{}\">{}</span></td>",
                    esc(&title.join("\n")),
                    cell.text()
                );
            }
            out.push_str("</tr>");
            if let Some(suspect) = &r.suspect {
                let _ = write!(
                    out,
                    "<tr class=\"suspect note\"><td colspan=\"{span}\">{}</td></tr>",
                    esc(suspect)
                );
            }
        }
        out.push_str("</table>");
        out.push_str(
            "<p>A cell's title (hover) holds what was expected and seen, and the command that replays the case.</p>\
             <script>document.documentElement.setAttribute('data-ready', 'yes');</script></body></html>\n",
        );
        out
    }
}

const MATRIX_STYLE: &str = "table.matrix td{padding:2px 8px}table.run td:nth-child(3){white-space:nowrap}tr.differs td:first-child{font-weight:600}\
tr.suspect td{background:#ffebee}tr.suspect.note td{font-style:italic;color:#b71c1c}\
tr.group td{background:#f4f4f4;color:#555;font-style:italic}";

fn row(id: &str, verdicts: &[BTreeMap<&str, &CaseReport>], heads: &[Head]) -> Row {
    let found: Vec<Option<&CaseReport>> = verdicts.iter().map(|v| v.get(id).copied()).collect();
    let any = found.iter().flatten().next().copied();
    let cells: Vec<Cell> = found
        .iter()
        .map(|r| Cell {
            status: r.map(|r| r.status),
            detail: r.filter(|r| r.status != Status::Pass).and_then(detail),
            replay: r.filter(|r| r.status.is_bad() || r.status == Status::Warn).map(|r| r.replay.clone()),
        })
        .collect();
    let level = any.map_or(Level::Must, |r| r.level);
    let differs = cells.iter().any(|c| c.status != cells[0].status);
    let names = |pick: fn(Status) -> bool| {
        let named: Vec<&str> = cells
            .iter()
            .zip(heads)
            .filter(|(c, _)| c.status.is_some_and(pick))
            .map(|(_, h)| h.name.as_str())
            .collect();
        named.join(", ")
    };
    let (passing, failing) = (names(passes), names(fails));
    let suspect = (level == Level::Must && !passing.is_empty() && !failing.is_empty()).then(|| {
        format!(
            "passes {passing}, fails {failing}: a false verdict of the suite, or a bug of the implementation \
             that fails"
        )
    });
    Row {
        id: id.to_string(),
        level,
        rule: any.map(|r| r.rule.clone()).unwrap_or_default(),
        cells,
        differs,
        suspect,
    }
}

/// What was expected and seen, or why it was skipped or listed.
fn detail(r: &CaseReport) -> Option<String> {
    let mut lines = Vec::new();
    if let Some(expected) = &r.expected {
        lines.push(format!("expected: {expected}"));
    }
    if let Some(seen) = &r.seen {
        lines.push(format!("seen: {seen}"));
    }
    if let Some(reason) = &r.reason {
        lines.push(format!("reason: {reason}"));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// A, B, … Z, AA, AB…
fn letter(i: usize) -> String {
    let mut n = i;
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Text that names paths, with those below the current directory made
/// relative to it (`target/release/ukue`).
fn shown(text: &str) -> String {
    match std::env::current_dir() {
        Ok(here) => text.replace(&format!("{}/", here.display()), ""),
        Err(_) => text.to_string(),
    }
}

/// Text for a Markdown table cell.
fn cell_md(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(id: &str, level: Level, status: Status) -> CaseReport {
        let failed = status != Status::Pass;
        CaseReport {
            rule: "FORMAT.md §6.3".into(),
            expected: failed.then(|| "each job once".into()),
            seen: failed.then(|| "job 3 twice".into()),
            ..crate::report::verdict::sample(id, level, status)
        }
    }

    fn column(program: &str, version: &str, seed: u64, reports: Vec<CaseReport>) -> Column {
        let run = RunInfo {
            implementation: program.into(),
            implementation_version: Some(version.into()),
            seed,
            ..RunInfo::default()
        };
        Column { runs: vec![run], reports, elapsed: std::time::Duration::from_secs(1) }
    }

    #[test]
    fn differing_rows_come_first_and_a_must_case_passing_one_and_failing_another_is_suspect() {
        use Level::*;
        use Status::*;
        let a = column(
            "/x/ukue",
            "ukue 0.1.0 (file format 1)",
            7,
            vec![
                report("format/a", Must, Pass),
                report("steps/b", Must, Pass),
                report("cli/c", Should, Pass),
                report("http/d", Must, Pass),
            ],
        );
        let b = column(
            "/y/ukue.py",
            "ukue 0.1.0 (file format 1)",
            7,
            vec![
                report("format/a", Must, Pass),
                report("steps/b", Must, Fail),
                report("cli/c", Should, Warn),
                report("http/d", Must, Skipped),
            ],
        );
        let m = Matrix::of(&[a, b]);
        let order: Vec<&str> = m.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(order, ["steps/b", "cli/c", "http/d", "format/a"]);
        assert_eq!(m.columns[0].name, "ukue 0.1.0 (file format 1) · ukue", "alike versions told apart");
        assert_eq!(m.columns[1].name, "ukue 0.1.0 (file format 1) · ukue.py");
        assert_eq!((m.differ, m.suspect), (3, 1));
        let suspect = m.rows[0].suspect.as_deref().unwrap();
        assert!(suspect.starts_with("passes ukue 0.1.0 (file format 1) · ukue, fails "), "{suspect}");
        assert!(m.rows[1].suspect.is_none(), "a should case that warns is no false verdict");
        assert!(m.rows[2].suspect.is_none(), "a skip is neither pass nor fail");
        assert_eq!(m.rows[0].cells[1].replay.as_deref(), Some("ukue-conformance --cases 'steps/b'"));

        let text = m.human(false);
        assert!(text.contains("\nsteps/b   must    pass              fail\n"), "{text}");
        assert!(text.contains("\n-- 1 case where every implementation agrees: 1 pass --\n"), "{text}");
        assert!(text.ends_with("4 cases, 2 implementations: 3 differ; 1 must case passes one implementation and fails another\n"), "{text}");
        let md = m.markdown(true);
        assert!(md.contains("| **steps/b** | must | pass | fail |"), "{md}");
        assert!(!md.contains("| format/a |"), "agreeing rows are counted, not listed: {md}");
        assert!(md.contains("1 case where every implementation agrees: 1 pass."), "{md}");
        let html = m.html();
        assert!(html.contains("<tr class=\"suspect\"><td title=\"FORMAT.md §6.3\">steps/b</td>"), "{html}");
        assert!(html.contains("title=\"expected: each job once\nseen: job 3 twice\nukue-conformance --cases &#39;steps/b&#39;\">fail</span>"), "{html}");
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["rows"][0]["cells"][1]["status"], "fail");
        assert_eq!(json["suspect"], 1);
    }

    #[test]
    fn in_markdown_the_cases_of_a_family_that_differ_alike_are_one_row() {
        let statuses = [Status::Pass, Status::Pass, Status::Pass, Status::Pass];
        let ids = ["http/a", "http/b", "http/c", "steps/d"];
        let a = ids.iter().zip(statuses).map(|(id, s)| report(id, Level::Must, s)).collect();
        let b = ids.iter().map(|id| report(id, Level::Must, Status::Skipped)).collect();
        let m = Matrix::of(&[column("/x/ukue", "one", 1, a), column("/x/other", "two", 1, b)]);
        let md = m.markdown(true);
        assert!(md.contains("\n| **3 cases of http/** | must | pass | skipped |\n"), "{md}");
        assert!(md.contains("\n| **steps/d** | must | pass | skipped |\n"), "{md}");
        assert!(
            m.markdown(false).contains("\n| **http/b** | must | pass | skipped |\n"),
            "every row without --differing"
        );
    }

    #[test]
    fn a_case_one_column_did_not_run_and_seeds_that_differ_are_said() {
        let a = column("/x/ukue", "one", 1, vec![report("format/a", Level::Must, Status::Pass)]);
        let b = column("/x/other", "two", 2, vec![report("format/b", Level::Must, Status::Pass)]);
        let m = Matrix::of(&[a, b]);
        assert_eq!(m.rows[0].cells[1].text(), "not run");
        assert_eq!(m.rows[1].cells[0].text(), "not run");
        assert_eq!(m.differ, 2);
        assert_eq!(m.suspect, 0);
        assert!(m.notes[0].contains("different seeds (1, 2)"), "{:?}", m.notes);
        assert_eq!(
            (letter(0), letter(25), letter(26), letter(27)),
            ("A".into(), "Z".into(), "AA".into(), "AB".into())
        );
    }

    #[test]
    fn over_a_soaks_passes_a_case_shows_its_worst_verdict() {
        let mut pass = report("crash/a", Level::Must, Status::Pass);
        pass.iteration = Some(1);
        let mut fail = report("crash/a", Level::Must, Status::Fail);
        fail.iteration = Some(2);
        let reports = [pass, fail];
        let worst = worst(reports.iter());
        assert_eq!(worst["crash/a"].status, Status::Fail);
    }
}
