//! `merge`: the JSON reports of a run's shards (`--format json`, one per
//! `--partition`) read back into the [`CaseReport`]s the runner builds, so
//! that every reporter writes a merged run as it writes one run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{CaseReport, RunInfo};

/// The shards' cases, in the order read, and the run's length (the
/// longest shard's: shards run side by side).
#[derive(Debug, Default)]
pub struct Merged {
    pub reports: Vec<CaseReport>,
    pub elapsed: Duration,
    /// Shards whose report ends before its summary line: they did not
    /// finish, so the merged run cannot pass.
    pub unfinished: Vec<PathBuf>,
    /// What each finished shard's summary says it was.
    pub runs: Vec<RunInfo>,
}

/// Reads each shard's report. A case reported by two shards (in the same
/// soak pass) is an error: the shards were not disjoint.
pub fn merge(paths: &[PathBuf]) -> Result<Merged, String> {
    let mut merged = Merged::default();
    let mut seen: BTreeMap<(String, Option<u32>), &Path> = BTreeMap::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut finished = false;
        for (n, line) in text.lines().enumerate().filter(|(_, l)| l.trim_start().starts_with('{')) {
            let at = || format!("{} line {}", path.display(), n + 1);
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("{}: not JSON: {e}", at()))?;
            // A case's object has an id; the run's summary object has none.
            if value.get("id").is_none() {
                let ms = value.get("duration_ms").and_then(|v| v.as_u64()).unwrap_or(0);
                merged.elapsed = merged.elapsed.max(Duration::from_millis(ms));
                finished = true;
                if let Some(run) = value.get("run").and_then(|r| serde_json::from_value(r.clone()).ok()) {
                    merged.runs.push(run);
                }
                continue;
            }
            let report: CaseReport =
                serde_json::from_value(value).map_err(|e| format!("{}: not a case report: {e}", at()))?;
            if let Some(other) = seen.insert((report.id.clone(), report.iteration), path) {
                return Err(format!(
                    "{} is in {} and in {}: the shards overlap",
                    report.id,
                    other.display(),
                    path.display()
                ));
            }
            merged.reports.push(report);
        }
        if !finished {
            merged.unfinished.push(path.clone());
        }
    }
    Ok(merged)
}
