//! Latency with many jobs delayed for later in the same queue: an empty
//! claim, and one job's add + claim + finish.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ukue::{Claim, NewJob, Ukue};

use super::load::{checkpoint, LEASE, PAYLOAD, QUEUE};

/// The median and 99th percentile of some samples.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    pub median: Duration,
    pub p99: Duration,
}

impl Spread {
    pub fn of(mut samples: Vec<Duration>) -> Spread {
        samples.sort_unstable();
        let at = |q: f64| {
            let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
            samples.get(i).copied().unwrap_or_default()
        };
        Spread { median: at(0.5), p99: at(0.99) }
    }
}

/// The figures with one number of delayed jobs in the file.
#[derive(Debug, Clone, Copy)]
pub struct AtSize {
    pub delayed: u64,
    pub empty_claim: Spread,
    pub add_claim_finish: Spread,
}

/// How far in the future the delayed jobs are due: a day, and a
/// millisecond more for each, so that none falls due during the run.
const DELAY_MS: i64 = 86_400_000;
/// Jobs a transaction while the delayed jobs are added.
const FILL_BATCH: usize = 50_000;
/// Untimed rounds before each stretch of samples.
const WARMUP: usize = 5;

/// Adds `count` jobs of `priority`, all delayed for later, to the file.
pub fn fill(file: &Path, count: u64, priority: i64) -> Result<()> {
    let mut ukue = Ukue::open(file)?;
    let base = ukue.now() + DELAY_MS;
    let mut added = 0u64;
    while added < count {
        let n = (count - added).min(FILL_BATCH as u64);
        let jobs: Vec<NewJob> = (0..n)
            .map(|i| {
                NewJob::new(QUEUE, PAYLOAD.to_vec()).priority(priority).run_at(base + (added + i) as i64)
            })
            .collect();
        ukue.add_batch(&jobs)?;
        added += n;
    }
    checkpoint(ukue.connection())
}

/// Measures each file (holding `delayed` delayed jobs) in turn, `rounds`
/// times over, so that what the disk does meanwhile falls on every size
/// alike; `samples` of each figure in all.
pub fn measure(files: &[(u64, &Path)], samples: usize, rounds: usize) -> Result<Vec<AtSize>> {
    let mut open = files.iter().map(|(n, path)| Ok((*n, Ukue::open(path)?))).collect::<Result<Vec<_>>>()?;
    let mut empty: Vec<Vec<Duration>> = vec![Vec::new(); files.len()];
    let mut full: Vec<Vec<Duration>> = vec![Vec::new(); files.len()];
    let job = NewJob::new(QUEUE, PAYLOAD.to_vec());
    for round in 0..rounds {
        // The samples of this round: an even share, the rest in the last.
        let share = samples / rounds + if round + 1 == rounds { samples % rounds } else { 0 };
        for (i, (_, ukue)) in open.iter_mut().enumerate() {
            time(share, &mut empty[i], || match ukue.claim_next(QUEUE, LEASE)? {
                Claim::Empty { .. } => Ok(()),
                Claim::Job(job) => bail!("job {} was claimed from a queue with no due job", job.id),
            })?;
            time(share, &mut full[i], || {
                let id = ukue.add(&job)?;
                match ukue.claim(QUEUE, LEASE)? {
                    Some(claimed) if claimed.id == id => {
                        Ok(ukue.finish(claimed.id, &claimed.token, false)?)
                    }
                    Some(claimed) => bail!("claimed job {} instead of the new job {id}", claimed.id),
                    None => bail!("the new job {id} was not claimed"),
                }
            })?;
        }
    }
    Ok(open
        .iter()
        .zip(empty.into_iter().zip(full))
        .map(|((delayed, _), (empty, full))| AtSize {
            delayed: *delayed,
            empty_claim: Spread::of(empty),
            add_claim_finish: Spread::of(full),
        })
        .collect())
}

fn time(samples: usize, taken: &mut Vec<Duration>, mut op: impl FnMut() -> Result<()>) -> Result<()> {
    for _ in 0..WARMUP {
        op()?;
    }
    for _ in 0..samples {
        let start = Instant::now();
        op()?;
        taken.push(start.elapsed());
    }
    Ok(())
}
