//! For a person with a browser: one self-contained HTML page (inline CSS
//! and SVG, a few lines of script, nothing fetched). At the top, what the
//! run was, the table by family and level and the replay commands; then a
//! section for each case that did not pass, with the FORMAT.md text of its
//! rule, what was expected and seen, and its timeline; the passing cases,
//! collapsed; and the coverage of FORMAT.md and COMMAND.md by the cases of
//! this run.
//!
//! It is made from the [`CaseReport`]s alone (and the embedded spec), so
//! that `merge --html` makes the same page from the shards' JSON.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use super::scale::{self, Scaling};
use super::svg::{self, end_class, View};
use super::timeline::{RunEnd, Timeline};
use super::{by_family, not_passed, tally, CaseReport, FamilyRow, RunInfo, Status};
use crate::spec::{self, coverage};

/// Escapes text for HTML (and attribute values).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(super) const STYLE: &str = r#"
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1260px;padding:0 16px 40px;color:#1b1b1b}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0}table.run{width:100%}table.run td{overflow-wrap:anywhere}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}td.zero{color:#bbb}
.verdict{font-size:16px;font-weight:600;padding:6px 10px;border-radius:4px;display:inline-block}
.verdict.ok{background:#e8f5e9;color:#1b5e20}.verdict.bad{background:#ffebee;color:#b71c1c}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12.5px;margin:6px 0}code{background:#f1f1f1;padding:0 2px}
.case{border-left:4px solid #999;padding:2px 12px;margin:18px 0}
.case.fail,.case.error,.case.timeout,.case.unexpected-pass{border-color:#c62828}.case.warn{border-color:#f9a825}
.case.expected-failure{border-color:#6d4c41}
.status{font-weight:700;text-transform:uppercase}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}dl.facts dt{font-weight:600;color:#555}
dl.facts dd{margin:0;white-space:pre-wrap}
blockquote.rule{border-left:3px solid #90caf9;margin:6px 0;padding:2px 10px;background:#f7fbff}
.kw{color:#0d47a1;font-weight:700}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:14px;height:9px;margin-right:4px;vertical-align:middle}
svg.timeline{display:block;margin:6px 0;font:11px system-ui,sans-serif;max-width:100%;height:auto}
svg .lane-bg{fill:#fff}svg .lane-bg.odd{fill:#f6f7f9}svg .life{stroke:#c7c7c7;stroke-width:1}
svg .axis line{stroke:#e3e3e3}svg .axis text{fill:#666;text-anchor:middle}
.finished{fill:#43a047}i.finished{background:#43a047}.failed{fill:#fb8c00}i.failed{background:#fb8c00}
.killed{fill:#757575}i.killed{background:#757575}.lease-lost{fill:#e53935}i.lease-lost{background:#e53935}
svg.has-blame .run:not(.blamed),svg.has-blame .claim:not(.blamed){opacity:.35}.claim.blamed{fill:#000}.run.blamed{stroke:#000;stroke-width:1.6}
i.blamed{background:#fff;outline:2px solid #000}
.slice{fill:#607d8b}.overlap{fill:#d50000;fill-opacity:.14;stroke:#d50000;stroke-dasharray:3 2}
i.overlap{background:#fbd3d3;outline:1px dashed #d50000}
.mark{stroke-width:1.6;fill:none}.mark.kill{stroke:#b71c1c;stroke-width:2.2}.mark.start,.mark.restart{fill:#2e7d32}
.mark.restart{fill:#00838f}.mark.stop,.mark.suspend,.mark.resume{fill:#37474f}.mark.reap{fill:#6a1b9a}
.mark.taken{fill:#d50000;stroke:#000;stroke-width:1}.mark.lease-end{stroke:#ef6c00;stroke-dasharray:2 1.5;stroke-width:2}
.hover{font:12px ui-monospace,monospace;background:#fffde7;padding:3px 6px;min-height:1.4em;margin:0}
.chip{display:inline-block;padding:0 5px;margin:1px 2px;border-radius:3px;font-size:12px;background:#e0e0e0}
.chip.pass{background:#c8e6c9}.chip.fail,.chip.error,.chip.timeout,.chip.unexpected-pass{background:#ffcdd2}
.chip.warn{background:#fff3c4}.chip.skipped{background:#eee;color:#777}.chip.not-run{background:#fff;border:1px dashed #bbb;color:#777}
tr.gap td{background:#ffebee}tr.explained td{background:#fffde7}
details>summary{cursor:pointer}
.scale-grid{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}figure.scale{margin:0;border:1px solid #ddd;border-radius:4px;padding:6px 8px;width:300px}
figure.scale.warn,figure.scale.fail{border-color:#e57373;background:#fffafa}figure.scale figcaption{font-size:12px;color:#444}
svg.scale{display:block;font:10.5px system-ui,sans-serif}svg.scale .axis line{stroke:#e6e6e6}svg.scale .axis text{fill:#666}
svg.scale .past-bound{fill:#ffebee}svg.scale .flat{stroke:#9e9e9e;stroke-dasharray:5 3;stroke-width:1.2}
svg.scale .linear{stroke:#c62828;stroke-dasharray:1.5 3;stroke-width:1.4}svg.scale .sample{fill:#455a64;fill-opacity:.35}
svg.scale line.median{stroke:#2e7d32;stroke-width:2.2}svg.scale circle.median{fill:#2e7d32}
svg.scale.grows line.median{stroke:#c62828}svg.scale.grows circle.median{fill:#c62828}
svg.scale .ratio{text-anchor:end;font-weight:700;font-size:12px;fill:#2e7d32}svg.scale.grows .ratio{fill:#c62828}
i.flat{border-top:2px dashed #9e9e9e;height:0!important}i.linear{border-top:2px dotted #c62828;height:0!important}
i.median{background:#2e7d32;border-radius:50%;width:9px!important}i.sample{background:#90a4ae;border-radius:50%;width:6px!important;height:6px!important}
i.past-bound{background:#ffebee;outline:1px solid #f5c6c6}
"#;

/// A little script: a bar's or mark's title shown under its timeline on
/// hover (a browser shows it as a tooltip too), and the page marked ready.
const SCRIPT: &str = r#"
document.querySelectorAll('svg.timeline').forEach(function (svg) {
  var out = svg.nextElementSibling;
  svg.addEventListener('mouseover', function (e) {
    var t = e.target.closest('.run, .mark, .slice, .overlap');
    var title = t && t.querySelector('title');
    if (title && out) { out.textContent = title.textContent; }
  });
});
document.documentElement.setAttribute('data-ready', 'yes');
"#;

/// The whole page. `runs` is what the run was (one per shard when merged).
pub fn page(reports: &[CaseReport], elapsed: Duration, runs: &[RunInfo]) -> String {
    let failed = reports.iter().filter(|r| r.status.is_bad()).count();
    let mut out = String::new();
    let subject = runs.first().map(|r| r.implementation.as_str()).unwrap_or("?");
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>ukue conformance: {} — {}</title><style>{STYLE}</style></head><body>",
        esc(subject),
        if failed == 0 { "passed".to_string() } else { format!("{failed} failed") }
    );
    header(&mut out, reports, elapsed, runs);
    scale_section(&mut out, reports);
    let not_passing: Vec<&CaseReport> = reports.iter().filter(|r| not_passed(r)).collect();
    if !not_passing.is_empty() {
        let _ = write!(out, "<h2 id=\"not-passed\">Cases that did not pass ({})</h2>", not_passing.len());
        for r in &not_passing {
            case_section(&mut out, r);
        }
    }
    passing(&mut out, reports);
    coverage_section(&mut out, reports);
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    out
}

fn status_class(status: Status) -> String {
    status.as_str().replace(' ', "-")
}

/// A case's anchor.
fn anchor(r: &CaseReport) -> String {
    let pass = r.iteration.map(|i| format!("-pass-{i}")).unwrap_or_default();
    format!("case-{}{pass}", r.id.replace('/', "-"))
}

fn header(out: &mut String, reports: &[CaseReport], elapsed: Duration, runs: &[RunInfo]) {
    let bad = reports.iter().any(|r| r.status.is_bad());
    let _ = write!(
        out,
        "<h1>ukue conformance report</h1><p class=\"verdict {}\">{}: {}</p>",
        if bad { "bad" } else { "ok" },
        if bad { "FAILED" } else { "PASSED" },
        esc(&tally(reports, elapsed))
    );
    out.push_str(
        "<table class=\"run\"><tr><th>implementation</th><th>version</th><th>reference</th><th>seed</th>\
                  <th>shard</th><th>runner</th><th>machine</th><th>started</th></tr>",
    );
    for run in runs {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&run.implementation),
            esc(run.implementation_version.as_deref().unwrap_or("(no answer to `version`)")),
            esc(&run.reference_text()),
            run.seed,
            esc(run.partition.as_deref().unwrap_or("whole run")),
            esc(&run.runner),
            esc(&run.machine),
            esc(&run.started_at),
        );
    }
    out.push_str("</table>");
    if runs.is_empty() {
        out.push_str("<p>(The reports say nothing of the run: they come from an older runner.)</p>");
    }
    family_table(out, &by_family(reports));
    let replay: Vec<&CaseReport> =
        reports.iter().filter(|r| r.status.is_bad() || r.status == Status::Warn).collect();
    if !replay.is_empty() {
        out.push_str("<h2>To replay what did not pass</h2><pre class=\"replay\">");
        for r in replay {
            let _ = writeln!(out, "{}", esc(&r.replay));
        }
        out.push_str("</pre><p>");
        for r in reports.iter().filter(|r| not_passed(r)) {
            let _ = write!(
                out,
                "<a class=\"chip {}\" href=\"#{}\">{}</a> ",
                status_class(r.status),
                anchor(r),
                esc(&r.id)
            );
        }
        out.push_str("</p>");
    }
}

fn family_table(out: &mut String, rows: &[FamilyRow]) {
    out.push_str("<h2>By family and level</h2><table class=\"families\"><tr><th>family</th><th>level</th>");
    for name in FamilyRow::COLUMNS {
        let _ = write!(out, "<th>{name}</th>");
    }
    out.push_str("</tr>");
    for row in rows {
        let _ = write!(out, "<tr><td>{}</td><td>{}</td>", esc(&row.family), row.level.as_str());
        for n in row.counts {
            let _ = write!(out, "<td class=\"n{}\">{n}</td>", if n == 0 { " zero" } else { "" });
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn case_section(out: &mut String, r: &CaseReport) {
    let _ = write!(
        out,
        "<section class=\"case {}\" id=\"{}\"><h3><span class=\"status\">{}</span> {} <small>({})</small></h3><p>{}</p><dl class=\"facts\">",
        status_class(r.status),
        anchor(r),
        esc(r.status.as_str()),
        esc(&r.id),
        r.level.as_str(),
        esc(&r.summary)
    );
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", esc(value));
    };
    fact("rule", &r.rule);
    if r.rules.len() > 1 {
        fact("also checks", &r.rules[1..].join(", "));
    }
    if let Some(expected) = &r.expected {
        fact("expected", expected);
    }
    if let Some(seen) = &r.seen {
        fact("seen", seen);
    }
    if let Some(reason) = &r.reason {
        fact("listed", reason);
    }
    for note in &r.notes {
        fact("note", note);
    }
    fact("seed", &r.seed.to_string());
    if let Some(pass) = r.iteration {
        fact("soak pass", &pass.to_string());
    }
    if let Some(dir) = &r.work_dir {
        fact("kept", &dir.display().to_string());
    }
    fact("duration", &format!("{} ms", r.duration_ms));
    let _ = write!(out, "<dt>replay</dt><dd><code>{}</code></dd></dl>", esc(&r.replay));
    if let Some(text) = &r.rule_text {
        let _ = write!(
            out,
            "<details open><summary>{} (FORMAT.md, as this runner embeds it)</summary><blockquote class=\"rule\">{}</blockquote></details>",
            esc(&r.rule),
            markdown(text)
        );
    }
    if let Some(scaling) = &r.scale {
        let _ = write!(out, "<h3>Cost against size</h3>{SCALE_LEGEND}{}", scale::chart(&r.id, scaling));
    }
    if let Some(timeline) = &r.timeline {
        timeline_block(out, timeline);
    }
    out.push_str("</section>");
}

/// What the marks of a scale chart are.
const SCALE_LEGEND: &str = "<p class=\"legend\"><span><i class=\"sample\"></i>a sample</span>\
    <span><i class=\"median\"></i>the median, small file to large (red: past the bound)</span>\
    <span><i class=\"flat\"></i>no growth</span><span><i class=\"linear\"></i>growth with the jobs (a scan)</span>\
    <span><i class=\"past-bound\"></i>past the bound</span></p>";

/// The scale cases at a glance: a chart each, cost against size on log
/// axes, whatever their status.
fn scale_section(out: &mut String, reports: &[CaseReport]) {
    let scaled: Vec<(&CaseReport, &Scaling)> =
        reports.iter().filter_map(|r| r.scale.as_ref().map(|s| (r, s))).collect();
    if scaled.is_empty() {
        return;
    }
    let grows = scaled.iter().filter(|(_, s)| !s.passes()).count();
    let _ = write!(
        out,
        "<h2 id=\"scale\">How each step's cost grows ({} scale cases, {grows} past the bound)</h2>\
         <p>Each step timed on a small file and on a large one (CPU time, medians of interleaved samples). \
         A step through an index stays flat; one that scans the file climbs with the dotted line.</p>{SCALE_LEGEND}\
         <div class=\"scale-grid\">",
        scaled.len()
    );
    for (r, s) in scaled {
        let _ = write!(
            out,
            "<figure class=\"scale {}\"><a href=\"#{}\">{}</a> <span class=\"chip {}\">{}</span>{}<figcaption>{}: {}</figcaption></figure>",
            status_class(r.status),
            anchor(r),
            esc(&r.id),
            status_class(r.status),
            esc(r.status.as_str()),
            scale::chart(&r.id, s),
            esc(&s.step),
            esc(&s.line())
        );
    }
    out.push_str("</div>");
}

/// A timeline: its legend, the whole of it, and a close-up of the blamed
/// runs when they sit in a small part of it.
fn timeline_block(out: &mut String, t: &Timeline) {
    let _ = write!(
        out,
        "<h3>Timeline</h3><p>{} worker processes, {} runs{}, over {:.1} s. A lane is a worker process, a bar a run of a job from its claim (a thin line until its command started) to its end.</p>",
        t.lanes.len(),
        t.runs,
        if t.bars.len() < t.runs {
            format!(
                " ({} drawn one by one: those blamed, overlapping another run of their job, or not finished; the other {} as grey blocks, darker with more runs)",
                t.bars.len(),
                t.runs - t.bars.len()
            )
        } else {
            String::new()
        },
        t.span_ms as f64 / 1000.0
    );
    out.push_str("<p class=\"legend\">");
    for end in RunEnd::ALL {
        let _ = write!(out, "<span><i class=\"{}\"></i>{}</span>", end_class(end), end.as_str());
    }
    out.push_str(
        "<span><i class=\"blamed\"></i>blamed by the checker</span><span><i class=\"overlap\"></i>two blamed runs of one job at once</span>\
         <span>marks: ✕ kill, ▶ start (teal: restart), ■ stop, ◆ reap (red: taken while the lease held), ┆ lease end</span></p>",
    );
    let close_ups = svg::blamed_windows(t);
    for (window, jobs) in &close_ups {
        if let View::Window(from, to) = window {
            let jobs: Vec<String> = jobs.iter().map(|j| j.to_string()).collect();
            let _ = write!(
                out,
                "<p>Close-up of the blamed runs of job {}, {:.3} to {:.3} s:</p>",
                jobs.join(", "),
                *from as f64 / 1000.0,
                *to as f64 / 1000.0
            );
        }
        out.push_str(&svg::draw(t, *window));
        out.push_str("<p class=\"hover\"></p>");
    }
    if !close_ups.is_empty() {
        out.push_str("<p>The whole history:</p>");
    }
    out.push_str(&svg::draw(t, View::Whole));
    out.push_str("<p class=\"hover\">(hover over a bar or mark)</p>");
}

fn passing(out: &mut String, reports: &[CaseReport]) {
    let passing: Vec<&CaseReport> = reports.iter().filter(|r| !not_passed(r)).collect();
    if passing.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h2 id=\"passed\">Passed and skipped cases ({})</h2><details><summary>show them</summary><table><tr><th>case</th><th>status</th><th>level</th><th>rule</th><th>ms</th><th>notes</th></tr>",
        passing.len()
    );
    for r in &passing {
        let notes = r.reason.iter().chain(&r.notes).cloned().collect::<Vec<_>>().join("; ");
        let _ = write!(
            out,
            "<tr id=\"{}\"><td>{}</td><td><span class=\"chip {}\">{}</span></td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            anchor(r),
            esc(&r.id),
            status_class(r.status),
            esc(r.status.as_str()),
            r.level.as_str(),
            esc(&r.rule),
            r.duration_ms,
            esc(&notes)
        );
    }
    out.push_str("</table></details>");
    for r in passing.iter().filter(|r| r.timeline.is_some()) {
        let _ =
            write!(out, "<details class=\"passing-timeline\"><summary>timeline of {}</summary>", esc(&r.id));
        if let Some(t) = &r.timeline {
            timeline_block(out, t);
        }
        out.push_str("</details>");
    }
}

/// A case report's FORMAT.md section: the first of its rules, or the
/// number in its label (reports of an older runner).
fn section_of(r: &CaseReport) -> String {
    r.rules.first().cloned().unwrap_or_else(|| {
        r.rule.split('§').nth(1).and_then(|s| s.split_whitespace().next()).unwrap_or("").to_string()
    })
}

fn coverage_section(out: &mut String, reports: &[CaseReport]) {
    // A case's worst status over a soak's passes.
    let mut status: BTreeMap<&str, Status> = BTreeMap::new();
    for r in reports {
        let worst = status.entry(r.id.as_str()).or_insert(r.status);
        if r.status.is_bad() || (*worst == Status::Pass && r.status != Status::Pass) {
            *worst = r.status;
        }
    }
    let mut cases: Vec<coverage::CaseInfo> =
        crate::cases::all().iter().map(coverage::CaseInfo::from).collect();
    // Cases of the reports this runner does not have (an older or newer one's).
    let unknown: Vec<coverage::CaseInfo> = reports
        .iter()
        .filter(|r| !cases.iter().any(|c| c.id == r.id))
        .map(|r| coverage::CaseInfo { id: r.id.clone(), rule: section_of(r), level: r.level })
        .collect();
    cases.extend(unknown);
    for page in spec::Page::ALL {
        let covered = coverage::coverage(page, page.markdown(), spec::CONFORMANCE_MD, &cases);
        coverage_table(out, &covered, &status);
    }
}

fn coverage_table(out: &mut String, covered: &coverage::Coverage, status: &BTreeMap<&str, Status>) {
    let gaps = covered.gaps().count();
    let explained = covered.explained().count();
    let (anchor, what) = match covered.page {
        spec::Page::Format => ("coverage", "rules (each numbered section, and each MUST or SHOULD sentence)"),
        spec::Page::Command => ("coverage-command", "items (each with its level, must or should)"),
    };
    let _ = write!(
        out,
        "<h2 id=\"{anchor}\">Coverage of {}</h2><p>{} {what}: \
         {} checked, {explained} that cannot be checked from outside (spec/CONFORMANCE.md says why), {gaps} gaps. \
         Each case is shown with its status in this run (dashed: not run). <code>ukue-conformance coverage</code> prints the same.</p>",
        covered.page.name(),
        covered.rules.len(),
        covered.rules.len() - gaps - explained
    );
    out.push_str(
        "<table class=\"coverage\"><tr><th>rule</th><th>kind</th><th>text</th><th>checked by</th></tr>",
    );
    for rc in &covered.rules {
        let class = if rc.explained {
            " class=\"explained\""
        } else if rc.gap {
            " class=\"gap\""
        } else {
            ""
        };
        let mut title: String = rc.rule.title.chars().take(220).collect();
        if title.len() < rc.rule.title.len() {
            title.push('…');
        }
        let _ = write!(
            out,
            "<tr{class} data-rule=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>",
            esc(&rc.rule.id),
            esc(&rc.rule.id),
            rc.rule.kind.as_str(),
            inline(&title)
        );
        for check in &rc.cases {
            let (class, label) = match status.get(check.id.as_str()) {
                Some(s) => (status_class(*s), s.as_str()),
                None => ("not-run".to_string(), "not run"),
            };
            let _ = write!(
                out,
                "<span class=\"chip {class}\" title=\"{} ({}): {label}\">{}</span>",
                esc(&check.id),
                check.level.as_str(),
                esc(&check.id)
            );
        }
        if !rc.through.is_empty() {
            let _ = write!(out, "through §{}", esc(&rc.through.join(", §")));
        }
        if let Some(note) = &rc.note {
            let _ = write!(out, "<br><small>{}</small>", inline(note));
        }
        if rc.gap && !rc.explained {
            out.push_str(if rc.only_should {
                "<strong>gap: a must item that only should cases check</strong>"
            } else {
                "<strong>gap: no case checks it</strong>"
            });
        }
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
}

/// Inline markdown: `code`, **bold**, and the words MUST, SHOULD stand out.
fn inline(text: &str) -> String {
    let escaped = esc(text);
    let mut out = String::new();
    for (i, part) in escaped.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
            continue;
        }
        let mut bold = false;
        for (j, piece) in part.split("**").enumerate() {
            if j > 0 {
                out.push_str(if bold { "</strong>" } else { "<strong>" });
                bold = !bold;
            }
            let mut words = String::new();
            for (k, word) in piece.split(' ').enumerate() {
                if k > 0 {
                    words.push(' ');
                }
                let bare = word.trim_matches(|c: char| !c.is_ascii_alphabetic());
                if matches!(bare, "MUST" | "SHOULD" | "NOT" | "MAY") {
                    words.push_str(&word.replace(bare, &format!("<span class=\"kw\">{bare}</span>")));
                } else {
                    words.push_str(word);
                }
            }
            out.push_str(&words);
        }
        if bold {
            out.push_str("</strong>");
        }
    }
    out
}

/// A section of FORMAT.md as HTML: paragraphs, lists, tables and SQL blocks.
pub fn markdown(text: &str) -> String {
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut code: Option<Vec<&str>> = None;
    let mut table: Vec<&str> = Vec::new();
    let flush = |out: &mut String, paragraph: &mut Vec<&str>, table: &mut Vec<&str>| {
        if !paragraph.is_empty() {
            // A list item starts a line of its own; other lines run on.
            let mut text = String::new();
            for (i, line) in paragraph.iter().enumerate() {
                let line = line.trim();
                let item = line.starts_with("- ")
                    || line.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok());
                if i > 0 {
                    text.push_str(if item { "<br>" } else { " " });
                }
                text.push_str(&inline(line));
            }
            let _ = write!(out, "<p>{text}</p>");
            paragraph.clear();
        }
        if !table.is_empty() {
            out.push_str("<table>");
            for row in
                table.iter().filter(|r| !r.trim().trim_matches('|').chars().all(|c| c == '-' || c == '|'))
            {
                out.push_str("<tr>");
                for cell in row.trim().trim_matches('|').split('|') {
                    let _ = write!(out, "<td>{}</td>", inline(cell.trim()));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
            table.clear();
        }
    };
    for line in text.lines() {
        if let Some(block) = code.as_mut() {
            if line.trim_start().starts_with("```") {
                let _ = write!(out, "<pre>{}</pre>", esc(&block.join("\n")));
                code = None;
            } else {
                block.push(line);
            }
        } else if line.trim_start().starts_with("```") {
            flush(&mut out, &mut paragraph, &mut table);
            code = Some(Vec::new());
        } else if line.trim_start().starts_with('|') {
            if !paragraph.is_empty() {
                let mut none = Vec::new();
                flush(&mut out, &mut paragraph, &mut none);
            }
            table.push(line);
        } else if line.trim().is_empty() {
            flush(&mut out, &mut paragraph, &mut table);
        } else {
            if !table.is_empty() {
                let mut none = Vec::new();
                flush(&mut out, &mut none, &mut table);
            }
            paragraph.push(line);
        }
    }
    if let Some(block) = code {
        let _ = write!(out, "<pre>{}</pre>", esc(&block.join("\n")));
    }
    flush(&mut out, &mut paragraph, &mut table);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_markdown_kept_simple() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        let html = markdown("A **claim** MUST run `BEGIN`.\n\n```sql x\nSELECT 1 < 2\n```\n\n| a | b |\n|---|---|\n| c | d |\n");
        assert_eq!(
            html,
            "<p>A <strong>claim</strong> <span class=\"kw\">MUST</span> run <code>BEGIN</code>.</p>\
             <pre>SELECT 1 &lt; 2</pre><table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"
        );
    }
}

#[cfg(test)]
mod page_tests {
    use super::*;
    use crate::cases::Level;
    use crate::history::Blame;
    use crate::report::timeline::tests::big_history;

    fn failing(timeline: Option<Timeline>) -> CaseReport {
        CaseReport {
            id: "concurrency/drain-while-adding".into(),
            rule: crate::spec::label("6.3"),
            summary: "drain".into(),
            level: Level::Must,
            status: Status::Fail,
            duration_ms: 1,
            expected: Some("each job once".into()),
            seen: Some("job <1> twice".into()),
            reason: None,
            seed: 7,
            work_dir: None,
            replay: "ukue-conformance --cases 'concurrency/drain-while-adding'".into(),
            notes: Vec::new(),
            figures: Default::default(),
            iteration: None,
            rules: vec!["6.3".into()],
            rule_text: crate::spec::rule_text("6.3"),
            timeline,
            scale: None,
        }
    }

    #[test]
    fn a_page_of_a_10000_run_history_stays_small() {
        let h = big_history(10_000);
        let blame = Blame { runs: vec![(&h.executions[5_000]).into()], jobs: Vec::new() };
        let report = failing(Timeline::of(&h, &blame));
        let json = serde_json::to_string(&report).unwrap();
        let html = page(&[report], Duration::from_secs(1), &[RunInfo::default()]);
        eprintln!("10,000 runs: HTML {} bytes, the case's JSON {} bytes", html.len(), json.len());
        assert!(html.len() < 3_000_000, "{} bytes", html.len());
        assert!(json.len() < 1_500_000, "{} bytes", json.len());
        let bars = html.matches("<rect class=\"run ").count();
        assert!(bars >= crate::report::timeline::MAX_BARS, "{bars} bars drawn");
        assert!(html.contains("job &lt;1&gt; twice"), "text is escaped");
        assert!(
            !html.contains("http://") && !html.contains("https://") && !html.contains(" src="),
            "nothing fetched"
        );
    }
}

#[cfg(test)]
mod coverage_tests {
    use super::*;

    #[test]
    fn the_page_covers_both_pages_of_the_spec_with_each_case_and_its_status() {
        let html = page(&[], Duration::from_secs(1), &[RunInfo::default()]);
        assert!(html.contains("<h2 id=\"coverage\">Coverage of FORMAT.md</h2>"));
        assert!(html.contains("<h2 id=\"coverage-command\">Coverage of COMMAND.md</h2>"));
        assert!(html.contains("data-rule=\"5.4/must-be-a-fresh-random\""), "a sentence of FORMAT.md");
        let row = html.split("data-rule=\"list.json\"").nth(1).expect("the item list.json has its row");
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains("steps/list-json") && row.contains("not run"), "{row}");
    }
}
