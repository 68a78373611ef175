//! A [`Timeline`] drawn as inline SVG, for the HTML report: a lane per
//! worker process (a row per command it ran at once), a bar per run from
//! its claim to its end (a thin line until its command started), coloured
//! by how it ended, the blamed runs
//! outlined and the others faded, a red band where two blamed runs of one
//! job overlapped, and the marks. Every bar and mark has a `<title>` (job,
//! attempt, token…), which a browser shows on hover, and `data-` attributes
//! that a test can read back.

use std::fmt::Write;

use super::html::esc;
use super::timeline::{secs, slice_text, Bar, MarkKind, RunEnd, Timeline};

/// Where the lane labels end and the plot begins, and the plot's width.
const LABEL_W: f64 = 150.0;
const PLOT_W: f64 = 1000.0;
const ROW_H: f64 = 9.0;
const LANE_PAD: f64 = 3.0;
const AXIS_H: f64 = 24.0;
/// A bar is drawn at least this wide, however short its run.
const MIN_BAR_W: f64 = 1.5;

/// The CSS class of a run's end.
pub fn end_class(end: RunEnd) -> &'static str {
    match end {
        RunEnd::Finished => "finished",
        RunEnd::Failed => "failed",
        RunEnd::Killed => "killed",
        RunEnd::LeaseLost => "lease-lost",
    }
}

/// Which part of a timeline to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum View {
    /// All of it, every lane.
    Whole,
    /// From..to (timeline ms), the lanes with a bar in it.
    Window(i64, i64),
}

/// At most this many close-ups of blamed runs.
pub const CLOSE_UPS: usize = 4;

/// Close-ups of the blamed runs: the blamed bars grouped where their
/// times meet (each widened by a margin), each group with its jobs; none
/// when one group would show most of the timeline anyway.
pub fn blamed_windows(t: &Timeline) -> Vec<(View, Vec<i64>)> {
    let mut blamed: Vec<&Bar> = t.blamed().collect();
    blamed.sort_by_key(|b| b.claim_ms);
    let mut groups: Vec<(i64, i64, Vec<i64>)> = Vec::new();
    for bar in blamed {
        let pad = ((bar.end_ms - bar.claim_ms) / 2).max(40);
        let (from, to) = (bar.claim_ms - pad, bar.end_ms + pad);
        match groups.last_mut() {
            Some(group) if from <= group.1 => {
                group.1 = group.1.max(to);
                group.2.push(bar.job);
            }
            _ => groups.push((from, to, vec![bar.job])),
        }
    }
    let narrow = |(from, to): (i64, i64)| ((to - from) as f64) <= 0.6 * t.span_ms as f64;
    groups
        .into_iter()
        .filter(|(from, to, _)| narrow((*from, *to)))
        .take(CLOSE_UPS)
        .map(|(from, to, mut jobs)| {
            jobs.sort_unstable();
            jobs.dedup();
            (View::Window(from.max(0), to.min(t.span_ms)), jobs)
        })
        .collect()
}

/// The timeline as an `<svg>` element.
pub fn draw(t: &Timeline, view: View) -> String {
    let (from, to) = match view {
        View::Whole => (0, t.span_ms.max(1)),
        View::Window(from, to) => (from, to.max(from + 1)),
    };
    let x = |ms: i64| LABEL_W + (ms - from) as f64 * PLOT_W / (to - from) as f64;
    let in_view = |b: &Bar| b.end_ms >= from && b.claim_ms <= to;
    let lanes: Vec<usize> = (0..t.lanes.len())
        .filter(|&i| view == View::Whole || t.bars.iter().any(|b| b.lane as usize == i && in_view(b)))
        .collect();
    // Each shown lane's top.
    let mut tops = vec![None; t.lanes.len()];
    let mut y = AXIS_H;
    for &i in &lanes {
        tops[i] = Some(y);
        y += t.lanes[i].rows as f64 * ROW_H + 2.0 * LANE_PAD;
    }
    let height = y + 4.0;
    let bars: Vec<&Bar> = t.bars.iter().filter(|b| in_view(b) && tops[b.lane as usize].is_some()).collect();
    let blamed = t.blamed().next().is_some();
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="timeline {}{}" width="{w}" height="{height}" viewBox="0 0 {w} {height}" data-lanes="{}" data-bars="{}" data-runs="{}" role="img">"#,
        if view == View::Whole { "overview" } else { "detail" },
        if blamed { " has-blame" } else { "" },
        lanes.len(),
        bars.len(),
        t.runs,
        w = LABEL_W + PLOT_W + 10.0,
    );
    axis(&mut svg, from, to, height, &x);
    for (n, &i) in lanes.iter().enumerate() {
        let lane = &t.lanes[i];
        let top = tops[i].unwrap_or(0.0);
        let h = lane.rows as f64 * ROW_H + 2.0 * LANE_PAD;
        let _ = write!(
            svg,
            r#"<g class="lane" data-worker="{pid}"><rect class="lane-bg{odd}" x="0" y="{top}" width="{w}" height="{h}"/><text x="4" y="{ty:.1}">worker {pid}</text><line class="life" x1="{x1:.1}" x2="{x2:.1}" y1="{ly:.1}" y2="{ly:.1}"/></g>"#,
            pid = lane.worker_pid,
            odd = if n % 2 == 1 { " odd" } else { "" },
            w = LABEL_W + PLOT_W + 10.0,
            ty = top + h / 2.0 + 4.0,
            x1 = x(lane.from_ms.max(from)),
            x2 = x(lane.to_ms.min(to)),
            ly = top + h - 1.0,
        );
    }
    slices(&mut svg, t, &tops, from, to, &x);
    overlaps(&mut svg, t, &bars, AXIS_H, height, &x);
    for bar in &bars {
        let top = tops[bar.lane as usize].unwrap_or(0.0) + LANE_PAD + bar.row as f64 * ROW_H;
        // From the claim to the command's start a thin line, then the bar.
        let x0 = x(bar.claim_ms.max(from));
        let x1 = x(bar.start_ms.clamp(bar.claim_ms.max(from), bar.end_ms.min(to)));
        let x2 = x(bar.end_ms.min(to)).max(x1 + MIN_BAR_W);
        if x1 - x0 >= 1.0 {
            let _ = write!(
                svg,
                r#"<rect class="claim {}{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="2"/>"#,
                end_class(bar.end),
                if bar.blamed { " blamed" } else { "" },
                top + ROW_H / 2.0 - 1.5,
                x1 - x0
            );
        }
        let _ = write!(
            svg,
            r#"<rect class="run {}{}" x="{x1:.1}" y="{top:.1}" width="{:.1}" height="{}" data-job="{}" data-attempt="{}" data-pid="{}" data-from="{}" data-to="{}"><title>{}</title></rect>"#,
            end_class(bar.end),
            if bar.blamed { " blamed" } else { "" },
            x2 - x1,
            ROW_H - 1.5,
            bar.job,
            bar.attempt,
            bar.pid,
            bar.claim_ms,
            bar.end_ms,
            esc(&t.bar_text(bar)),
        );
    }
    marks(&mut svg, t, &tops, from, to, &x);
    svg.push_str("</svg>");
    svg
}

/// The time axis: a tick every 1, 2 or 5 × 10^k ms, about ten of them.
fn axis(svg: &mut String, from: i64, to: i64, height: f64, x: &impl Fn(i64) -> f64) {
    let span = (to - from).max(1) as f64;
    let raw = span / 10.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(raw);
    let step = (step as i64).max(1);
    let mut tick = (from + step - 1) / step * step;
    svg.push_str(r#"<g class="axis">"#);
    while tick <= to {
        let _ = write!(
            svg,
            r#"<line x1="{px:.1}" x2="{px:.1}" y1="{}" y2="{height}"/><text x="{px:.1}" y="14">{} s</text>"#,
            AXIS_H - 4.0,
            secs(tick).trim_end_matches('0').trim_end_matches('.'),
            px = x(tick),
        );
        tick += step;
    }
    svg.push_str("</g>");
}

/// The runs not drawn one by one: a grey block a lane and slice, darker
/// with more runs.
fn slices(svg: &mut String, t: &Timeline, tops: &[Option<f64>], from: i64, to: i64, x: &impl Fn(i64) -> f64) {
    let most = t.slices.iter().map(|s| s.total()).max().unwrap_or(1).max(1) as f64;
    for slice in t.slices.iter().filter(|s| s.to_ms >= from && s.from_ms <= to) {
        let Some(top) = tops[slice.lane as usize] else { continue };
        let rows = t.lanes[slice.lane as usize].rows as f64;
        let (x1, x2) = (x(slice.from_ms.max(from)), x(slice.to_ms.min(to)));
        let _ = write!(
            svg,
            r#"<rect class="slice" x="{x1:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill-opacity="{:.2}" data-runs="{}"><title>{}</title></rect>"#,
            top + LANE_PAD,
            (x2 - x1).max(MIN_BAR_W),
            rows * ROW_H,
            0.15 + 0.6 * slice.total() as f64 / most,
            slice.total(),
            esc(&slice_text(slice)),
        );
    }
}

/// A red band across every lane where two blamed runs of one job ran at once.
fn overlaps(svg: &mut String, t: &Timeline, bars: &[&Bar], top: f64, bottom: f64, x: &impl Fn(i64) -> f64) {
    let mut blamed: Vec<&&Bar> = bars.iter().filter(|b| b.blamed).collect();
    blamed.sort_by_key(|b| (b.job, b.claim_ms));
    let mut drawn = 0;
    for (i, a) in blamed.iter().enumerate() {
        for b in blamed[i + 1..].iter().take_while(|b| b.job == a.job) {
            let (start, end) = (a.claim_ms.max(b.claim_ms), a.end_ms.min(b.end_ms));
            if start >= end || drawn >= 200 {
                continue;
            }
            drawn += 1;
            let _ = write!(
                svg,
                r#"<rect class="overlap" x="{:.1}" y="{top}" width="{:.1}" height="{}" data-job="{}"><title>job {}: attempt {} (worker {}) and attempt {} (worker {}) both ran from {} to {} s</title></rect>"#,
                x(start),
                (x(end) - x(start)).max(MIN_BAR_W),
                bottom - top,
                a.job,
                a.job,
                a.attempt,
                t.lanes[a.lane as usize].worker_pid,
                b.attempt,
                t.lanes[b.lane as usize].worker_pid,
                secs(start),
                secs(end),
            );
        }
    }
}

/// Each mark as a small shape on its lane.
fn marks(svg: &mut String, t: &Timeline, tops: &[Option<f64>], from: i64, to: i64, x: &impl Fn(i64) -> f64) {
    for mark in t.marks.iter().filter(|m| (from..=to).contains(&m.at_ms)) {
        let Some(top) = tops[mark.lane as usize] else { continue };
        let h = t.lanes[mark.lane as usize].rows as f64 * ROW_H + 2.0 * LANE_PAD;
        let (px, mid) = (x(mark.at_ms), top + h / 2.0);
        let shape = match mark.kind {
            MarkKind::Kill => format!("M{a:.1} {b:.1}l8 8m0 -8l-8 8", a = px - 4.0, b = mid - 4.0),
            MarkKind::Start | MarkKind::Restart => {
                format!("M{:.1} {:.1}l7 4l-7 4z", px, mid - 4.0)
            }
            MarkKind::Stop | MarkKind::Suspend | MarkKind::Resume => {
                format!("M{:.1} {:.1}h6v6h-6z", px - 3.0, mid - 3.0)
            }
            MarkKind::Reap | MarkKind::Taken => {
                format!("M{:.1} {:.1}l5 5l-5 5l-5 -5z", px, mid - 5.0)
            }
            MarkKind::LeaseEnd => format!("M{:.1} {:.1}v{:.1}", px, top + 1.0, h - 2.0),
        };
        let _ = write!(
            svg,
            r#"<path class="mark {}" d="{shape}" data-at="{}"><title>{} s, {}: {}</title></path>"#,
            mark.kind.as_str().replace(' ', "-"),
            mark.at_ms,
            secs(mark.at_ms),
            mark.kind.as_str(),
            esc(&mark.text),
        );
    }
}
