//! The figures of one run, the targets they meet or miss, and the
//! machine they were measured on: as a table, or as JSON.

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::checker::Timing;
use super::http::{LoadRun, Polls, RoundTrip};
use super::latency::Spread;
use super::load::Rate;

/// One measured figure. Rates are per second and their ratio is
/// `value / ceiling`; latencies are in milliseconds and their ratio is
/// `value / (1 / ceiling)`: how many of the ceiling's commits they last.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub key: String,
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub ratio: f64,
    /// Delayed jobs in the file (latency figures only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed: Option<u64>,
    /// Steps that found the file busy past the busy timeout (rates only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy: Option<u64>,
}

/// A goal of the issue (a target figure), and whether this run met it.
#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    pub name: String,
    pub measured: f64,
    /// `>= limit` or `<= limit`.
    pub rule: String,
    pub met: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckerFigure {
    pub events: u64,
    pub executions: u64,
    pub jobs: u64,
    pub seconds: f64,
    /// Each checker's seconds.
    pub checks: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu: String,
    pub memory: String,
    /// `df -hT` of the bench's directory: device, type, size, used, free.
    pub disk: String,
    pub kernel: String,
    pub sqlite: String,
    pub ukue: String,
    pub dir: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub machine: Machine,
    /// Seconds of each throughput figure, over all rounds.
    pub seconds_per_figure: f64,
    pub rounds: usize,
    pub latency_samples: usize,
    pub delayed_priority: i64,
    /// `--busy-poll-us`, when the run tried it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_poll_us: Option<u64>,
    /// Raw SQLite commits per second (the median of the rounds' ceilings),
    /// the unit of every latency's ratio.
    pub ceiling_per_s: f64,
    /// The ceiling of every window, in the order measured.
    pub ceilings: Vec<f64>,
    pub figures: Vec<Figure>,
    pub checkers: Vec<CheckerFigure>,
    /// Checker time on the largest history over the time on the smallest
    /// (4 when linear in events and the largest is 4× the smallest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checker_ratio: Option<f64>,
    /// `ukue serve` beyond its throughput figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpFigures>,
    pub targets: Vec<Goal>,
}

/// One claim + ack over HTTP against claim + finish in this process, in ms.
#[derive(Debug, Clone, Serialize)]
pub struct RoundTripMs {
    pub http_median: f64,
    pub http_p99: f64,
    pub in_process_median: f64,
    pub in_process_p99: f64,
    /// What HTTP adds: the difference of the medians, and of the p99s.
    pub added_median: f64,
    pub added_p99: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HttpFigures {
    pub round_trip_ms: RoundTripMs,
    pub polls: Polls,
    pub load: LoadRun,
}

impl Report {
    pub(super) fn new(dir: &Path, plan: &super::Plan) -> Report {
        Report {
            machine: Machine::here(dir),
            seconds_per_figure: plan.window * plan.rounds as f64,
            rounds: plan.rounds,
            latency_samples: plan.samples,
            delayed_priority: plan.delayed_priority,
            busy_poll_us: plan.busy_poll_us,
            ceiling_per_s: 0.0,
            ceilings: Vec::new(),
            figures: Vec::new(),
            checkers: Vec::new(),
            checker_ratio: None,
            http: None,
            targets: Vec::new(),
        }
    }

    pub fn http(&mut self, round_trip: RoundTrip, polls: Polls, load: LoadRun) {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let (h, p) = (round_trip.http, round_trip.in_process);
        let round_trip_ms = RoundTripMs {
            http_median: ms(h.median),
            http_p99: ms(h.p99),
            in_process_median: ms(p.median),
            in_process_p99: ms(p.p99),
            added_median: ms(h.median) - ms(p.median),
            added_p99: ms(h.p99) - ms(p.p99),
        };
        self.http = Some(HttpFigures { round_trip_ms, polls, load });
    }

    /// Every window of the ceiling.
    pub fn ceiling(&mut self, ceilings: &[Rate]) {
        self.ceilings = ceilings.iter().map(|c| c.per_s).collect();
        self.ceiling_per_s = median(self.ceilings.clone());
        self.figures.push(Figure {
            key: "ceiling".into(),
            name: "ceiling: raw SQLite, 1 INSERT a commit".into(),
            value: self.ceiling_per_s,
            unit: "commits/s".into(),
            ratio: 1.0,
            delayed: None,
            busy: Some(ceilings.iter().map(|c| c.busy).sum()),
        });
    }

    /// A figure measured once a round, each time with the mean of the
    /// ceilings just before and after it: the median of the rounds' rates,
    /// and the median of their ratios.
    pub fn rate(&mut self, key: &str, name: &str, unit: &str, rounds: &[(Rate, f64)]) {
        self.figures.push(Figure {
            key: key.into(),
            name: name.into(),
            value: median(rounds.iter().map(|(r, _)| r.per_s).collect()),
            unit: unit.into(),
            ratio: median(rounds.iter().map(|(r, ceiling)| r.per_s / ceiling).collect()),
            delayed: None,
            busy: Some(rounds.iter().map(|(r, _)| r.busy).sum()),
        });
    }

    pub fn latency(&mut self, key: &str, name: &str, delayed: u64, spread: Spread) {
        for (which, value) in [("median", spread.median), ("p99", spread.p99)] {
            let ms = value.as_secs_f64() * 1e3;
            self.figures.push(Figure {
                key: format!("{key}_{delayed}_{which}"),
                name: format!("{name}, {which}"),
                value: ms,
                unit: "ms".into(),
                ratio: ms / 1e3 * self.ceiling_per_s,
                delayed: Some(delayed),
                busy: None,
            });
        }
    }

    pub fn checker(&mut self, timing: Timing) {
        self.checkers.push(CheckerFigure {
            events: timing.events,
            executions: timing.executions,
            jobs: timing.jobs,
            seconds: timing.total().as_secs_f64(),
            checks: timing.checks.iter().map(|(n, d)| (n.to_string(), d.as_secs_f64())).collect(),
        });
    }

    fn figure(&self, key: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.key == key)
    }

    fn target(&mut self, name: String, measured: f64, at_least: bool, limit: f64) {
        let met = if at_least { measured >= limit } else { measured <= limit };
        let rule = format!("{} {limit}", if at_least { ">=" } else { "<=" });
        self.targets.push(Goal { name, measured, rule, met });
    }

    /// Works out the targets once every figure is in.
    pub fn finish(&mut self, sizes: &[u64], processes: usize) {
        let p = processes;
        let rates = [
            ("add_1p".to_string(), 0.9, "add, 1 process, × ceiling".to_string()),
            (format!("add_{p}p"), 0.9, format!("add, {p} processes, × ceiling")),
            ("work_1p".to_string(), 0.45, "claim + finish, 1 process, × ceiling".to_string()),
            (format!("work_1p_c{p}"), 0.45, format!("claim + finish, worker concurrency {p}, × ceiling")),
            (format!("work_1p_t{p}"), 0.45, format!("claim + finish, {p} threads, × ceiling")),
            (format!("work_{p}p"), 0.45, format!("claim + finish, {p} processes, × ceiling")),
        ];
        for (key, limit, name) in rates {
            if let Some(ratio) = self.figure(&key).map(|f| f.ratio) {
                self.target(name, ratio, true, limit);
            }
        }
        if let (Some(&small), Some(&large)) = (sizes.first(), sizes.last()) {
            for (key, name) in [("empty_claim", "empty claim"), ("add_claim_finish", "add + claim + finish")]
            {
                for which in ["median", "p99"] {
                    let at = |n: u64| self.figure(&format!("{key}_{n}_{which}")).map(|f| f.value);
                    if let (Some(a), Some(b)) = (at(small), at(large)) {
                        let name = format!("{name} {which}, {large} delayed ÷ {small} delayed");
                        // The target is the typical (median) latency;
                        // the p99 is shown against the same bound.
                        self.target(name, b / a, false, 1.3);
                    }
                }
            }
        }
        for (http, here, name) in [
            (
                format!("http_add_{p}c"),
                format!("add_1p_t{p}"),
                format!("HTTP add, {p} clients ÷ {p} threads in-process"),
            ),
            (
                format!("http_work_{p}c"),
                format!("work_1p_t{p}"),
                format!("HTTP claim + ack, {p} clients ÷ claim + finish, {p} threads in-process"),
            ),
        ] {
            if let (Some(a), Some(b)) =
                (self.figure(&http).map(|f| f.ratio), self.figure(&here).map(|f| f.ratio))
            {
                self.target(name, a / b, true, 0.8);
            }
        }
        if let Some(load) = self.http.as_ref().map(|h| h.load.clone()) {
            self.target("HTTP load run: jobs lost".into(), load.lost as f64, false, 0.0);
            self.target("HTTP load run: 5xx answers".into(), load.five_xx as f64, false, 0.0);
        }
        if let (Some(first), Some(last)) = (self.checkers.first().cloned(), self.checkers.last().cloned()) {
            self.checker_ratio = Some(last.seconds / first.seconds);
            self.target(format!("checkers on {} events, seconds", last.events), last.seconds, false, 2.0);
        }
    }

    /// The report as a plain-text table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let m = &self.machine;
        let _ = writeln!(out, "ukue-bench: {}, SQLite {}", m.ukue, m.sqlite);
        let _ =
            writeln!(out, "machine: {} cpus ({}), {} memory, Linux {}", m.cpus, m.cpu, m.memory, m.kernel);
        let _ = writeln!(out, "disk: {} (df -hT {})", m.disk, m.dir);
        let _ = writeln!(
            out,
            "{} s a throughput figure in {} rounds, {} latency samples, delayed jobs at priority {}",
            self.seconds_per_figure, self.rounds, self.latency_samples, self.delayed_priority
        );
        if let Some(us) = self.busy_poll_us {
            let _ = writeln!(
                out,
                "experiment: the bench's own connections poll a busy file every {us} µs (not the worker's)"
            );
        }
        let mut sorted = self.ceilings.clone();
        sorted.sort_by(f64::total_cmp);
        if let (Some(low), Some(high)) = (sorted.first(), sorted.last()) {
            let _ = writeln!(
                out,
                "ceiling over {} windows: {} to {} commits/s, median {}",
                sorted.len(),
                thousands(*low),
                thousands(*high),
                thousands(self.ceiling_per_s)
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "{:<58} {:>16}  {:>9}", "throughput", "per second", "× ceiling");
        for f in self.figures.iter().filter(|f| f.delayed.is_none()) {
            let value = format!("{} {}", thousands(f.value), f.unit.trim_end_matches("/s"));
            let _ = writeln!(out, "{:<58} {:>16}  {:>9.2}", f.name, value, f.ratio);
        }
        let latencies: Vec<&Figure> = self.figures.iter().filter(|f| f.delayed.is_some()).collect();
        if !latencies.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{:<40} {:>10} {:>12} {:>12}  {:>9}",
                "latency (× ceiling: in commit times)", "delayed", "median ms", "p99 ms", "× ceiling"
            );
        }
        for pair in latencies.chunks(2) {
            if let [median, p99] = pair {
                let name = median.name.trim_end_matches(", median");
                let _ = writeln!(
                    out,
                    "{:<40} {:>10} {:>12.3} {:>12.3}  {:>5.3}/{:.3}",
                    name,
                    thousands(median.delayed.unwrap_or(0) as f64),
                    median.value,
                    p99.value,
                    median.ratio,
                    p99.ratio
                );
            }
        }
        if !self.checkers.is_empty() {
            let _ = writeln!(out);
            let names: Vec<&str> = self.checkers[0].checks.iter().map(|(n, _)| n.as_str()).collect();
            let _ = write!(
                out,
                "{:<18} {:>11} {:>9} {:>9} {:>9}",
                "checkers (ms)", "executions", "jobs", "ns/event", "total"
            );
            for name in &names {
                let _ = write!(out, " {name:>14}");
            }
            let _ = writeln!(out);
            for c in &self.checkers {
                let _ = write!(
                    out,
                    "{:<18} {:>11} {:>9} {:>9.1} {:>9.1}",
                    format!("{} events", thousands(c.events as f64)),
                    thousands(c.executions as f64),
                    thousands(c.jobs as f64),
                    c.seconds * 1e9 / c.events.max(1) as f64,
                    c.seconds * 1e3
                );
                for (_, s) in &c.checks {
                    let _ = write!(out, " {:>14.1}", s * 1e3);
                }
                let _ = writeln!(out);
            }
            if let (Some(first), Some(last), Some(ratio)) =
                (self.checkers.first(), self.checkers.last(), self.checker_ratio)
            {
                let _ = writeln!(
                    out,
                    "time with {} events ÷ time with {}: {ratio:.2} (linear in events: {:.2})",
                    thousands(last.events as f64),
                    thousands(first.events as f64),
                    last.events as f64 / first.events.max(1) as f64
                );
            }
        }
        if let Some(h) = &self.http {
            let _ = writeln!(out);
            let r = &h.round_trip_ms;
            let _ =
                writeln!(out, "{:<58} {:>12} {:>12}", "http (ukue serve, loopback)", "median ms", "p99 ms");
            let _ = writeln!(
                out,
                "{:<58} {:>12.3} {:>12.3}",
                "claim + ack over HTTP, 1 client", r.http_median, r.http_p99
            );
            let _ = writeln!(
                out,
                "{:<58} {:>12.3} {:>12.3}",
                "claim + finish in this process", r.in_process_median, r.in_process_p99
            );
            let _ = writeln!(out, "{:<58} {:>12.3} {:>12.3}", "added by HTTP", r.added_median, r.added_p99);
            let p = &h.polls;
            let _ = writeln!(
                out,
                "server memory: {:.1} MiB idle, {:.1} MiB holding {} waiting claims ({:.1} KiB each); CPU while they wait: {:.3} cores",
                p.rss_idle_kib as f64 / 1024.0,
                p.rss_polling_kib as f64 / 1024.0,
                p.polls,
                p.per_poll_kib,
                p.cpu_while_waiting
            );
            let l = &h.load;
            let _ = writeln!(
                out,
                "load run: {} producers, {} workers, {:.1} s: {} requests, {} jobs added, {} acked, {} lost, {} acked twice, {} 5xx, {} other errors{}",
                l.producers,
                l.workers,
                l.seconds,
                thousands(l.requests as f64),
                thousands(l.added as f64),
                thousands(l.acked as f64),
                l.lost,
                l.twice,
                l.five_xx,
                l.errors,
                l.first_error.as_deref().map(|e| format!(" (first: {e})")).unwrap_or_default()
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "targets");
        for t in &self.targets {
            let verdict = if t.met { "met" } else { "MISSED" };
            let _ = writeln!(out, "  {verdict:<7} {:<70} {:>8.3}  (target {})", t.name, t.measured, t.rule);
        }
        out
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// 12345.6 as `12,346`.
fn thousands(value: f64) -> String {
    crate::report::thousands(value.max(0.0).round() as u64)
}

impl Machine {
    fn here(dir: &Path) -> Machine {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim()))
            .unwrap_or("unknown")
            .to_string();
        let meminfo = read("/proc/meminfo");
        let memory = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
            .unwrap_or_else(|| "unknown".into());
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let disk = std::process::Command::new("df")
            .arg("-hT")
            .arg(&dir)
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|text| text.lines().nth(1).map(describe_df))
            .unwrap_or_else(|| "unknown".into());
        Machine {
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu,
            memory,
            disk,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            sqlite: rusqlite::version().to_string(),
            ukue: format!("ukue {}", env!("CARGO_PKG_VERSION")),
            dir: dir.display().to_string(),
        }
    }
}

/// `/dev/vda ext4 252G 17G 75G 19% /` as `/dev/vda, ext4, 252G, 75G free, on /`.
fn describe_df(line: &str) -> String {
    let cols: Vec<&str> = line.split_whitespace().collect();
    match cols.as_slice() {
        [device, fs, size, _used, avail, _pct, mount, ..] => {
            format!("{device}, {fs}, {size} ({avail} free), mounted on {mount}")
        }
        _ => line.trim().to_string(),
    }
}
