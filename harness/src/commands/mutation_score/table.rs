//! The score per statement, as docs/mutation-score.md shows it: each
//! mutant of the listing counted once, as equivalent (never run), killed
//! by a `must` case, killed by the model run alone, surviving with the
//! reason [`super::survivors`] gives, surviving unexplained, or not run.

use std::fmt::Write;

use super::{survivors, Listed, Outcome, MODEL};
use crate::subjects::mutants;

/// The statement a mutant mutates, or `(kind)` for a bug of ukue-broken.
pub fn statement(name: &str, kind: &str) -> String {
    match name.split_once('/') {
        Some((stmt, _)) => stmt.to_string(),
        None => format!("({kind})"),
    }
}

#[derive(Default)]
struct Row {
    mutants: usize,
    equivalent: usize,
    by_case: usize,
    by_model: usize,
    beyond: usize,
    gaps: usize,
    not_run: usize,
}

impl Row {
    fn add(&mut self, other: &Row) {
        self.mutants += other.mutants;
        self.equivalent += other.equivalent;
        self.by_case += other.by_case;
        self.by_model += other.by_model;
        self.beyond += other.beyond;
        self.gaps += other.gaps;
        self.not_run += other.not_run;
    }
}

/// Where a mutant comes from, for the table by origin: the classic
/// operators' mutants of FORMAT.md's statements apart from the first kinds.
fn origin(m: &Listed) -> &'static str {
    match m.kind {
        "bug" => "ukue-broken's step bugs",
        "serve-bug" | "serve-unreached" => "ukue-broken's servers",
        "cli-bug" => "ukue-broken's command lines",
        _ if mutants::CLASSIC.iter().any(|k| m.name.contains(&format!("/{k}-"))) => {
            "FORMAT.md's statements, the classic operators"
        }
        _ => "FORMAT.md's statements",
    }
}

/// The operator that made a mutant of FORMAT.md (`cmp`, `ror`…, `hand`), or
/// `(kind)` for a bug of ukue-broken.
pub fn operator(name: &str, kind: &str) -> String {
    match name.split_once('/') {
        Some((_, n)) => n.rsplit_once('-').map_or(n, |(op, _)| op).to_string(),
        None => format!("({kind})"),
    }
}

/// The tables of `listing`, read against `outcomes` (the results file):
/// a row a statement in the listing's order, then the whole; then a row
/// for each origin (FORMAT.md's statements by the first kinds and by the
/// classic operators, and ukue-broken's step, server and command-line
/// bugs), as the README shows it; then a row for each operator.
pub fn markdown(listing: &[Listed], outcomes: &[Outcome]) -> String {
    let by_statement = rows(listing, outcomes, |m| format!("`{}`", statement(&m.name, m.kind)));
    let by_origin = rows(listing, outcomes, |m| origin(m).to_string());
    let by_operator = rows(listing, outcomes, |m| format!("`{}`", operator(&m.name, m.kind)));
    format!(
        "{}\n{}\n{}",
        render(&by_statement, "statement"),
        render(&by_origin, "from"),
        render(&by_operator, "operator")
    )
}

fn rows(listing: &[Listed], outcomes: &[Outcome], group: impl Fn(&Listed) -> String) -> Vec<(String, Row)> {
    let mut rows: Vec<(String, Row)> = Vec::new();
    for m in listing {
        let stmt = group(m);
        let at = match rows.iter().position(|(s, _)| *s == stmt) {
            Some(at) => at,
            None => {
                rows.push((stmt, Row::default()));
                rows.len() - 1
            }
        };
        let row = &mut rows[at].1;
        row.mutants += 1;
        let outcome = outcomes.iter().rev().find(|o| o.name == m.name);
        match outcome {
            _ if m.kind == "equivalent" => row.equivalent += 1,
            None => row.not_run += 1,
            Some(o) if o.killed && o.killed_by.as_deref() == Some(MODEL) => row.by_model += 1,
            Some(o) if o.killed => row.by_case += 1,
            Some(o) if survivors::why(&o.name).is_some() => row.beyond += 1,
            Some(_) => row.gaps += 1,
        }
    }
    rows
}

fn render(rows: &[(String, Row)], first: &str) -> String {
    let mut out = format!(
        "| {first} | mutants | equivalent | killed by a `must` case | killed by the model alone | beyond the cases, with why | survived, unexplained | not run |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    let mut all = Row::default();
    let line = |out: &mut String, name: &str, r: &Row| {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            r.mutants, r.equivalent, r.by_case, r.by_model, r.beyond, r.gaps, r.not_run
        );
    };
    for (name, row) in rows {
        line(&mut out, name, row);
        all.add(row);
    }
    line(&mut out, "all", &all);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, killed_by: Option<&str>) -> Outcome {
        Outcome {
            killed: killed_by.is_some(),
            killed_by: killed_by.map(str::to_string),
            ..Outcome::unjudged(name, "generated", 1, String::new())
        }
    }

    fn listed(name: &str, kind: &'static str) -> Listed {
        Listed { name: name.into(), kind, why: None, what: String::new() }
    }

    #[test]
    fn each_mutant_is_counted_once_in_its_column() {
        let listing = [
            listed("pick/cmp-1", "generated"),
            listed("pick/cmp-2", "equivalent"),
            listed("pick/cmp-3", "generated"),
            listed("pick/cmp-4", "generated"),
            listed("fail/const-1", "generated"),
            listed("fail/const-9", "generated"),
            listed("fail/const-99", "generated"),
            listed("no-reaping", "bug"),
            listed("fail/ror-3", "generated"),
        ];
        let outcomes = [
            outcome("pick/cmp-1", Some("steps/claim-order-priority")),
            outcome("pick/cmp-3", Some(MODEL)),
            outcome("pick/cmp-4", None),
            outcome("fail/const-1", None),
            outcome("no-reaping", Some("steps/lease-reaped-counted")),
        ];
        let table = markdown(&listing, &outcomes);
        assert!(table.contains("| `pick` | 4 | 1 | 1 | 1 | 0 | 1 | 0 |"), "{table}");
        assert!(table.contains("| `fail` | 4 | 0 | 0 | 0 | 1 | 0 | 3 |"), "{table}");
        assert!(table.contains("| `(bug)` | 1 | 0 | 1 | 0 | 0 | 0 | 0 |"), "{table}");
        assert!(table.contains("| all | 9 | 1 | 2 | 1 | 1 | 1 | 3 |"), "{table}");
        assert!(table.contains("| FORMAT.md's statements | 7 | 1 | 1 | 1 | 1 | 1 | 2 |"), "{table}");
        assert!(
            table.contains("| FORMAT.md's statements, the classic operators | 1 | 0 | 0 | 0 | 0 | 0 | 1 |")
        );
        assert!(table.contains("| `cmp` | 4 | 1 | 1 | 1 | 0 | 1 | 0 |"), "{table}");
        assert!(table.contains("| `ror` | 1 | 0 | 0 | 0 | 0 | 0 | 1 |"), "{table}");
        assert!(table.contains("| `(bug)` | 1 | 0 | 1 | 0 | 0 | 0 | 0 |"), "{table}");
        assert!(table.contains("| ukue-broken's step bugs | 1 | 0 | 1 | 0 | 0 | 0 | 0 |"), "{table}");
    }
}
