//! For machines: one JSON object per case on stdout as it finishes, then
//! one summary object.

use std::io::Write;
use std::time::Duration;

use super::{counts, totals, CaseReport, Reporter, RunInfo};

#[derive(Default)]
pub struct Json {
    run: RunInfo,
}

impl Reporter for Json {
    fn begin(&mut self, _total: usize, run: &RunInfo) {
        // A soak's passes begin with their own seeds; the summary keeps the run's.
        if self.run.runner.is_empty() {
            self.run = run.clone();
        }
    }

    fn case_done(&mut self, report: &CaseReport) {
        let mut out = std::io::stdout().lock();
        if let Ok(text) = serde_json::to_string(report) {
            let _ = writeln!(out, "{text}");
        }
    }

    fn end(&mut self, reports: &[CaseReport], elapsed: Duration) {
        let counts: serde_json::Map<String, serde_json::Value> =
            counts(reports).into_iter().map(|(s, n)| (s.replace(' ', "_"), n.into())).collect();
        let summary = serde_json::json!({
            "summary": counts,
            "cases": reports.len(),
            "duration_ms": elapsed.as_millis() as u64,
            "ok": !reports.iter().any(|r| r.status.is_bad()),
            "figures": totals(reports),
            "run": self.run,
        });
        let _ = writeln!(std::io::stdout().lock(), "{summary}");
    }
}
