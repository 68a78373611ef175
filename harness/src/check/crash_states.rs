//! Crash states, as SQLite's crash tests and ALICE make them: from a
//! [`Recording`] of what reached a ukue file, the file states that a power
//! cut could leave. A cut falls just before each sync (and at the end of
//! the trace); the writes to a file that a sync of that file covered
//! before the cut are on the disk, and each later one may have been kept,
//! dropped, or torn (only its first sectors written). The powerloss cases
//! (cases/powerloss.rs) open each state and check it; this module is pure.
//!
//! [`Recording`]: crate::subjects::observe::recording::Recording

use std::collections::{HashMap, HashSet};

use rand::seq::index;
use rand::Rng;

use crate::subjects::observe::recording::{place, Change, Effect, FileKind, Images, Recorded};

/// A write of at most one sector is atomic; a longer one may tear at a
/// multiple of it (SQLite's "powersafe overwrite" assumption).
pub const SECTOR: u64 = 512;

/// What became of one unsynced change when the power went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Choice {
    Keep,
    Drop,
    /// A write of which only the first this many bytes (whole sectors of
    /// the file) reached the disk.
    Torn(u64),
}

/// One file state a power cut could leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashState {
    /// The recorded calls before this index happened: the cut falls just
    /// before `recorded[at]` (a sync), or after the last one.
    pub at: usize,
    /// What became of each unsynced change (by its index in the recording).
    pub choices: Vec<(usize, Choice)>,
    /// How the choices were made: `all dropped`, `in order`, `random`, …
    pub how: &'static str,
}

/// How many states to build.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    /// Random combinations per cut.
    pub random_per_cut: usize,
    /// At most this many states in all; the `all dropped` and `all kept`
    /// state of every cut come first, the rest are a seeded sample.
    pub budget: usize,
}

/// The bytes of a write of `len` at `offset` that a tear at a sector
/// boundary near its middle leaves; None when it lies within one sector
/// (and cannot tear).
pub fn torn_len(offset: u64, len: u64) -> Option<u64> {
    let first = (offset / SECTOR + 1) * SECTOR;
    if first >= offset + len {
        return None;
    }
    Some(((offset + len / 2) / SECTOR * SECTOR).max(first) - offset)
}

fn tear(change: &Change) -> Option<u64> {
    match change {
        Change::Write { offset, data } => torn_len(*offset, data.len() as u64),
        _ => None,
    }
}

/// Where the cuts fall: before each sync of a traced file, and at the end.
pub fn cuts(recorded: &[Recorded]) -> Vec<usize> {
    let mut at: Vec<usize> = recorded
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.effect, Effect::Sync { .. }))
        .map(|(i, _)| i)
        .collect();
    at.push(recorded.len());
    at
}

/// The index of the last sync of each file before `at`.
fn last_syncs(recorded: &[Recorded], at: usize) -> HashMap<FileKind, usize> {
    let mut last = HashMap::new();
    for (i, r) in recorded[..at].iter().enumerate() {
        match r.effect {
            Effect::Sync { file: Some(file) } => {
                last.insert(file, i);
            }
            Effect::Sync { file: None } => {
                for file in FileKind::ALL {
                    last.insert(file, i);
                }
            }
            _ => {}
        }
    }
    last
}

/// The changes before `at` that no sync of their file covered.
pub fn pending(recorded: &[Recorded], at: usize) -> Vec<usize> {
    let last = last_syncs(recorded, at);
    recorded[..at]
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &s.effect {
            Effect::Change { file, .. } if last.get(file).is_none_or(|&synced| i > synced) => Some(i),
            _ => None,
        })
        .collect()
}

/// The crash states of a recording: per cut, every unsynced change
/// dropped; all kept; kept in order up to each one (and the next torn);
/// each one alone kept or torn; and `sampling.random_per_cut` random
/// combinations. Within the budget, in cut order.
pub fn states(recorded: &[Recorded], rng: &mut impl Rng, sampling: Sampling) -> Vec<CrashState> {
    let mut must = Vec::new();
    let mut rest = Vec::new();
    for at in cuts(recorded) {
        let pending = pending(recorded, at);
        let changes: Vec<&Change> = pending
            .iter()
            .map(|&i| match &recorded[i].effect {
                Effect::Change { change, .. } => change,
                _ => unreachable!("pending() returns changes only"),
            })
            .collect();
        let n = pending.len();
        let mut seen = HashSet::new();
        let mut add = |choices: Vec<Choice>, how: &'static str, must_check: bool| {
            if seen.insert(choices.clone()) {
                let state = CrashState { at, choices: pending.iter().copied().zip(choices).collect(), how };
                if must_check {
                    must.push(state);
                } else {
                    rest.push(state);
                }
            }
        };
        let torn = |i: usize| tear(changes[i]).map(Choice::Torn);
        add(vec![Choice::Drop; n], "all dropped", true);
        add(vec![Choice::Keep; n], "all kept", true);
        for k in 0..n {
            let prefix = |last: Choice| {
                (0..n)
                    .map(|j| {
                        if j < k {
                            Choice::Keep
                        } else if j == k {
                            last
                        } else {
                            Choice::Drop
                        }
                    })
                    .collect()
            };
            add(prefix(Choice::Keep), "in order", false);
            if let Some(t) = torn(k) {
                add(prefix(t), "in order, the last torn", false);
            }
            let alone = |c: Choice| (0..n).map(|j| if j == k { c } else { Choice::Drop }).collect();
            add(alone(Choice::Keep), "one kept", false);
            if let Some(t) = torn(k) {
                add(alone(t), "one torn", false);
            }
        }
        if n > 1 {
            for _ in 0..sampling.random_per_cut {
                let choices = (0..n)
                    .map(|j| match (rng.gen_range(0..3), torn(j)) {
                        (0, _) => Choice::Keep,
                        (1, Some(t)) => t,
                        _ => Choice::Drop,
                    })
                    .collect();
                add(choices, "random", false);
            }
        }
    }
    let mut chosen = if must.len() >= sampling.budget {
        sample(must, sampling.budget, rng)
    } else {
        let room = sampling.budget - must.len();
        let mut all = must;
        all.extend(sample(rest, room, rng));
        all
    };
    chosen.sort_by_key(|s| s.at);
    chosen
}

/// `n` of `states`, chosen by `rng`, in their order.
fn sample(states: Vec<CrashState>, n: usize, rng: &mut impl Rng) -> Vec<CrashState> {
    if states.len() <= n {
        return states;
    }
    let keep: HashSet<usize> = index::sample(rng, states.len(), n).into_iter().collect();
    states.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, s)| s).collect()
}

/// The files a state holds: `base`, every change a sync covered, and the
/// unsynced ones as the state chose.
pub fn image(base: &Images, recorded: &[Recorded], state: &CrashState) -> Images {
    let last = last_syncs(recorded, state.at);
    let chosen: HashMap<usize, Choice> = state.choices.iter().copied().collect();
    let mut images = base.clone();
    for (i, r) in recorded[..state.at].iter().enumerate() {
        let Effect::Change { file, change } = &r.effect else { continue };
        let choice = if last.get(file).is_some_and(|&synced| i < synced) {
            Choice::Keep
        } else {
            chosen.get(&i).copied().unwrap_or(Choice::Drop)
        };
        apply(&mut images, *file, change, choice);
    }
    images
}

fn apply(images: &mut Images, file: FileKind, change: &Change, choice: Choice) {
    match (change, choice) {
        (_, Choice::Drop) | (Change::Truncate(_) | Change::Unlink, Choice::Torn(_)) => {}
        (Change::Write { offset, data }, Choice::Keep | Choice::Torn(_)) => {
            let keep = match choice {
                Choice::Torn(n) => (n as usize).min(data.len()),
                _ => data.len(),
            };
            let bytes = images.entry(file).or_default();
            let start = *offset as usize;
            if bytes.len() < start + keep {
                bytes.resize(start + keep, 0);
            }
            bytes[start..start + keep].copy_from_slice(&data[..keep]);
        }
        (Change::Truncate(len), Choice::Keep) => images.entry(file).or_default().resize(*len as usize, 0),
        (Change::Unlink, Choice::Keep) => {
            images.remove(&file);
        }
    }
}

/// Where a cut falls and what became of each unsynced change, for a
/// report; `name` names a file.
pub fn describe(recorded: &[Recorded], state: &CrashState, name: impl Fn(FileKind) -> String) -> String {
    let cut = match recorded.get(state.at) {
        Some(r) => {
            let what = match r.effect {
                Effect::Sync { file: Some(file) } => format!("the fsync of {}", name(file)),
                _ => "a sync of every file".to_string(),
            };
            format!("a power cut just before {what} at {}", place(r))
        }
        None => "a power cut after the last traced call".to_string(),
    };
    if state.choices.is_empty() {
        return format!("{cut}, with every change synced");
    }
    let shown: Vec<String> = state
        .choices
        .iter()
        .take(12)
        .map(|&(i, choice)| {
            let r = &recorded[i];
            let Effect::Change { file, change } = &r.effect else { return String::new() };
            let fate = match choice {
                Choice::Keep => "kept".to_string(),
                Choice::Drop => "dropped".to_string(),
                Choice::Torn(n) => format!("torn to its first {n} B"),
            };
            format!("{} {change} (line {}) {fate}", name(*file), r.line)
        })
        .collect();
    let more = state.choices.len().saturating_sub(shown.len());
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    format!(
        "{cut}, with the {} unsynced changes ({}): {}{more}",
        state.choices.len(),
        state.how,
        shown.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;
    use crate::subjects::observe::recording::record;
    use crate::subjects::observe::recording::test_trace::*;

    #[test]
    fn tears_only_across_sectors() {
        assert_eq!(torn_len(0, 512), None);
        assert_eq!(torn_len(100, 24), None);
        assert_eq!(torn_len(0, 4096), Some(2048));
        assert_eq!(torn_len(56, 4096), Some(1992)); // a -wal frame's page: to byte 2048
        assert_eq!(torn_len(0, 1024), Some(512));
        assert_eq!(torn_len(500, 24), Some(12)); // spans a boundary
    }

    /// A -wal write and its commit record, synced, then acknowledged; then
    /// a second commit acknowledged before its sync (the bug to catch).
    fn two_commits() -> Vec<Recorded> {
        let t = trace(&[
            pwrite(7, WAL, &[1; 1024], 0),                        // 0
            pwrite(7, WAL, &[2; 24], 1024),                       // 1
            fsync(7, WAL),                                        // 2
            print(7, 1),                                          // 3
            pwrite(7, WAL, &[3; 1024], 2048),                     // 4
            print(7, 2),                                          // 5: before its sync
            fsync(7, WAL),                                        // 6
            pwrite(7, DB, &[4; 1024], 0),                         // 7
            format!("7 unlink(\"{}\") = 0", hex(WAL.as_bytes())), // 8
        ]);
        record(&t, DB, STDOUT, None, &Images::new()).recorded
    }

    #[test]
    fn cuts_fall_before_syncs_and_pending_changes_are_the_unsynced_ones() {
        let recorded = two_commits();
        assert_eq!(cuts(&recorded), vec![2, 6, 9]);
        assert_eq!(pending(&recorded, 2), vec![0, 1]);
        assert_eq!(pending(&recorded, 6), vec![4]);
        assert_eq!(pending(&recorded, 9), vec![7, 8], "the db was never synced; the unlink neither");
    }

    #[test]
    fn images_keep_synced_changes_and_apply_the_choices() {
        let recorded = two_commits();
        let base: Images = [(FileKind::Db, vec![9; 8])].into();
        let state = |at, choices: Vec<(usize, Choice)>| CrashState { at, choices, how: "test" };
        let dropped = image(&base, &recorded, &state(6, vec![(4, Choice::Drop)]));
        assert_eq!(dropped[&FileKind::Wal].len(), 1048, "the synced frame only");
        assert_eq!(dropped[&FileKind::Db], vec![9; 8]);
        let torn = image(&base, &recorded, &state(6, vec![(4, Choice::Torn(512))]));
        assert_eq!(torn[&FileKind::Wal].len(), 2048 + 512);
        assert_eq!(torn[&FileKind::Wal][1048..2048], [0; 1000], "the gap before a write reads as zeros");
        let end = image(&base, &recorded, &state(9, vec![(7, Choice::Keep), (8, Choice::Keep)]));
        assert_eq!(end.get(&FileKind::Wal), None, "unlinked");
        assert_eq!(end[&FileKind::Db], vec![4; 1024]);
        let end = image(&base, &recorded, &state(9, vec![(7, Choice::Drop), (8, Choice::Drop)]));
        assert_eq!(end[&FileKind::Wal].len(), 3072, "every -wal write was synced");
        assert_eq!(end[&FileKind::Db], vec![9; 8]);
    }

    #[test]
    fn the_all_dropped_state_shows_an_acknowledgement_that_came_before_its_sync() {
        let recorded = two_commits();
        let mut rng = StdRng::seed_from_u64(1);
        let states = states(&recorded, &mut rng, Sampling { random_per_cut: 4, budget: 100 });
        let before_second_sync: Vec<&CrashState> = states.iter().filter(|s| s.at == 6).collect();
        assert!(before_second_sync.iter().any(|s| s.how == "all dropped"));
        // Id 2 was printed at step 5 < 6, yet its frame (step 4) is not on
        // the disk in that state: the check a case makes.
        let all_dropped = before_second_sync.iter().find(|s| s.how == "all dropped").unwrap();
        let wal = &image(&Images::new(), &recorded, all_dropped)[&FileKind::Wal];
        assert_eq!(wal.len(), 1048);
        let text = describe(&recorded, all_dropped, |k| format!("jobs.ukue{}", k.suffix()));
        assert!(text.contains("just before the fsync of jobs.ukue-wal at trace line 7"), "{text}");
        assert!(text.contains("jobs.ukue-wal write of 1024 B at 2048 (line 5) dropped"), "{text}");
    }

    #[test]
    fn states_cover_each_cut_within_the_budget_and_follow_the_seed() {
        let recorded = two_commits();
        let sampling = Sampling { random_per_cut: 4, budget: 100 };
        let a = states(&recorded, &mut StdRng::seed_from_u64(7), sampling);
        let b = states(&recorded, &mut StdRng::seed_from_u64(7), sampling);
        assert_eq!(a, b);
        for at in cuts(&recorded) {
            assert!(a.iter().any(|s| s.at == at && s.how == "all dropped"), "cut {at}");
        }
        let hows: HashSet<&str> = a.iter().map(|s| s.how).collect();
        // (A lone torn write is also the first of "in order, the last torn":
        // states are made once.)
        for how in ["all kept", "in order", "one kept", "in order, the last torn", "random"] {
            assert!(hows.contains(how), "{how} in {hows:?}");
        }
        let small =
            states(&recorded, &mut StdRng::seed_from_u64(7), Sampling { random_per_cut: 4, budget: 5 });
        assert_eq!(small.len(), 5);
        assert!(small.iter().all(|s| s.how == "all dropped" || s.how == "all kept"));
        assert!(small.windows(2).all(|w| w[0].at <= w[1].at));
        let every =
            states(&recorded, &mut StdRng::seed_from_u64(7), Sampling { random_per_cut: 0, budget: 1000 });
        // Cut 2: DD KK KD TD DK; cut 6: D K T; cut 9: DD KK KD TD DK.
        assert_eq!(every.len(), 13, "{every:#?}");
        let tiny =
            states(&recorded, &mut StdRng::seed_from_u64(7), Sampling { random_per_cut: 0, budget: 2 });
        assert_eq!(tiny.len(), 2);
    }
}
