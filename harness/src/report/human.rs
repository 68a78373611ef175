//! For a person at a terminal: a progress bar while cases run, each
//! failure in full as it happens, then a summary table.

use std::io::Write;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{by_family, tally, totals, CaseReport, FamilyRow, Reporter, RunInfo, Status};

/// The widths of the summary table's count columns.
const WIDTHS: [usize; 6] = [5, 5, 5, 6, 8, 8];

pub struct Human {
    bar: ProgressBar,
    verbose: bool,
    /// Only the header, the bar and the closing tally (on stderr): the
    /// progress of one of `compare`'s runs, whose matrix tells the rest.
    quiet: bool,
}

impl Human {
    /// `verbose` also lists every passing case.
    pub fn new(verbose: bool) -> Human {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Human { bar, verbose, quiet: false }
    }

    /// The header, the bar and the tally alone.
    pub fn quiet() -> Human {
        Human { quiet: true, ..Human::new(false) }
    }
}

/// The full account of one case that did not pass.
pub fn failure_text(r: &CaseReport) -> String {
    let mut text = format!(
        "{} {} ({})\n  rule:     {}\n",
        r.status.as_str().to_uppercase(),
        r.id,
        r.level.as_str(),
        r.rule
    );
    if let Some(expected) = &r.expected {
        text.push_str(&format!("  expected: {}\n", indent(expected)));
    }
    if let Some(seen) = &r.seen {
        text.push_str(&format!("  seen:     {}\n", indent(seen)));
    }
    if let Some(reason) = &r.reason {
        text.push_str(&format!("  listed:   {reason}\n"));
    }
    for note in &r.notes {
        text.push_str(&format!("  note:     {}\n", indent(note)));
    }
    if let Some(timeline) = &r.timeline {
        let blamed: Vec<_> = timeline.blamed().collect();
        for bar in blamed.iter().take(BLAMED_SHOWN) {
            text.push_str(&format!("  run:      {}\n", timeline.bar_text(bar)));
        }
        if blamed.len() > BLAMED_SHOWN {
            text.push_str(&format!("  run:      … and {} more blamed runs\n", blamed.len() - BLAMED_SHOWN));
        }
    }
    text.push_str(&format!("  seed:     {}\n", r.seed));
    if let Some(dir) = &r.work_dir {
        text.push_str(&format!("  kept:     {}\n", dir.display()));
    }
    text.push_str(&format!("  replay:   {}\n", r.replay));
    text
}

/// Blamed runs listed in a failure's text (the reports' timelines hold all).
const BLAMED_SHOWN: usize = 12;

fn indent(text: &str) -> String {
    text.replace('\n', "\n            ")
}

impl Human {
    /// A line above the bar, or plainly on stderr when there is no terminal.
    fn say(&self, line: String) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }
}

impl Reporter for Human {
    fn begin(&mut self, total: usize, run: &RunInfo) {
        let version = run.implementation_version.as_deref().map(|v| format!(" ({v})")).unwrap_or_default();
        let by =
            run.implementation_interpreter.as_deref().map(|p| format!(" run by {p}")).unwrap_or_default();
        let python = run.python.as_deref().map(|p| format!(", python {p}")).unwrap_or_default();
        self.say(format!(
            "ukue-conformance: {total} cases against {}{version}{by}, seed {}{python}",
            run.implementation, run.seed
        ));
        self.say(format!("reference: {}", run.reference_text()));
        if let Some(probe) = &run.probe {
            self.say(format!("probe: {probe}"));
        }
        self.bar.set_length(total as u64);
        self.bar.set_position(0);
        self.bar.enable_steady_tick(Duration::from_millis(200));
    }

    fn case_done(&mut self, r: &CaseReport) {
        self.bar.inc(1);
        self.bar.set_message(r.id.clone());
        if self.quiet {
            return;
        }
        if r.status.is_bad() || r.status == Status::Warn {
            self.say(failure_text(r));
        } else if self.verbose || r.status == Status::ExpectedFailure {
            let mut line = format!("{:<16} {} ({} ms)", r.status.as_str(), r.id, r.duration_ms);
            if self.verbose {
                for note in &r.notes {
                    line.push_str(&format!("\n  {note}"));
                }
            }
            self.say(line);
        }
    }

    fn end(&mut self, reports: &[CaseReport], elapsed: Duration) {
        self.bar.finish_and_clear();
        if self.quiet {
            self.say(tally(reports, elapsed));
            return;
        }
        let _ = std::io::stdout().lock().write_all(summary(reports, elapsed).as_bytes());
    }
}

/// The table by family and level, the counts, and how to replay what did
/// not pass.
pub fn summary(reports: &[CaseReport], elapsed: Duration) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = write!(out, "{:<14} {:<6}", "family", "level");
    for (name, width) in FamilyRow::COLUMNS.iter().zip(WIDTHS) {
        let _ = write!(out, " {name:>width$}");
    }
    let _ = writeln!(out);
    for row in by_family(reports) {
        let _ = write!(out, "{:<14} {:<6}", row.family, row.level.as_str());
        for (n, width) in row.counts.iter().zip(WIDTHS) {
            let _ = write!(out, " {n:>width$}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "\n{}", tally(reports, elapsed));
    let figures = totals(reports);
    if figures.len() > 1 || figures.get("runs").is_some_and(|&n| n > 1) {
        let figures: Vec<String> = figures.iter().map(|(name, n)| format!("{name} {n}")).collect();
        let _ = writeln!(out, "figures: {}", figures.join(", "));
    }
    let scaled: Vec<&CaseReport> = reports.iter().filter(|r| r.scale.is_some()).collect();
    if !scaled.is_empty() {
        let _ = writeln!(out, "\nhow each step's cost grows, from the small file to the large one:");
        for r in scaled {
            if let Some(s) = &r.scale {
                let _ = writeln!(out, "  {:<28} {:<5} {}", r.id, r.status.as_str(), s.line());
            }
        }
    }
    let replay: Vec<&CaseReport> =
        reports.iter().filter(|r| r.status.is_bad() || r.status == Status::Warn).collect();
    if !replay.is_empty() {
        let _ = writeln!(out, "\nto replay the cases that did not pass:");
        for r in replay {
            let _ = writeln!(out, "  {}", r.replay);
        }
    }
    let skipped = reports.iter().filter(|r| r.status == Status::Skipped).count();
    let warned = reports.iter().filter(|r| r.status == Status::Warn).count();
    let failed = reports.iter().filter(|r| r.status.is_bad()).count();
    let passed = reports.len() - skipped - warned - failed;
    let warned = if warned > 0 { format!(", {warned} warnings (should)") } else { String::new() };
    let skipped = if skipped > 0 { format!(", {skipped} skipped") } else { String::new() };
    let _ = writeln!(out, "\n{passed} passed{warned}{skipped}, {failed} failed");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cases::Level;

    fn report(id: &str, status: Status) -> CaseReport {
        let level = if id.ends_with("-should") { Level::Should } else { Level::Must };
        crate::report::verdict::sample(id, level, status)
    }

    #[test]
    fn the_last_line_counts_skipped_cases_apart() {
        let reports = [
            report("steps/a", Status::Pass),
            report("steps/b", Status::ExpectedFailure),
            report("crash/a", Status::Skipped),
            report("crash/b", Status::Fail),
            report("crash/c", Status::Timeout),
            report("steps/d-should", Status::Warn),
        ];
        let text = summary(&reports, Duration::from_secs(1));
        assert!(text.ends_with("\n2 passed, 1 warnings (should), 1 skipped, 2 failed\n"), "{text}");
        assert!(
            text.contains("  ukue-conformance --cases 'steps/d-should'\n"),
            "a warning is replayed: {text}"
        );
        assert!(text.contains("\nsteps          should     0     0     1"), "{text}");
        assert!(text.contains("  ukue-conformance --cases 'crash/b'\n"), "{text}");
        assert!(!text.contains("--cases 'crash/a'"), "a skipped case is not replayed: {text}");
        let clean = summary(&reports[..1], Duration::from_secs(1));
        assert!(clean.ends_with("\n1 passed, 0 failed\n"), "{clean}");
        assert!(clean.contains("\n1 case in 1.0 s: 1 pass\n"), "{clean}");
        assert!(text.contains("\n6 cases in 1.0 s: "), "{text}");
    }
}
