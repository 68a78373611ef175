//! differential: the reference as an oracle (as Csmith's differential
//! testing uses one compiler for another). Seeded sequences of command
//! lines, valid and invalid ([`step`]), run on twin files by the subject
//! and the reference, compared after every step ([`twin`], in the terms of
//! [`seen`]); the first difference is shrunk to a short sequence
//! ([`shrink`]) and reported with it. The family runs for `--generate-for`
//! (3 s by default), as many sequences as fit.

mod seen;
mod shrink;
mod step;
mod twin;

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::subjects::ctx::Ctx;
use crate::subjects::Failure;

pub fn cases() -> Vec<Case> {
    vec![Case {
        id: "differential/commands",
        rule: "exit.success",
        summary:
            "generated sequences of add (argument and stdin), list, show, stats, retry, purge, delete and a \
                  bounded work, valid and invalid, do to the subject's file and output what they do to the \
                  reference's",
        needs: Needs { generated: true, reference: true, ..Needs::default() },
        level: Level::Must,
        run: commands,
    }]
}

/// Steps in a sequence: enough for jobs to be added, worked, retried and
/// purged; few enough to shrink quickly.
const STEPS: std::ops::RangeInclusive<usize> = 8..=22;

fn commands(ctx: &mut Ctx) -> CaseResult {
    let started = Instant::now();
    let (mut sequences, mut steps) = (0u64, 0u64);
    loop {
        let seed: u64 = ctx.rng.gen();
        let mut rng = StdRng::seed_from_u64(seed);
        let len = rng.gen_range(STEPS);
        let sequence = step::sequence(&mut rng, len);
        if let Some(found) = twin::run(ctx, &format!("sequence-{sequences}"), &sequence)? {
            let found_after = started.elapsed().as_secs_f64();
            ctx.notes.push(format!("a difference found after {found_after:.1} s, in sequence {sequences}"));
            return Err(reported(ctx, sequences, seed, &sequence, found)?);
        }
        sequences += 1;
        steps += len as u64;
        if started.elapsed() >= ctx.generate_for {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    ctx.notes.push(format!("{sequences} sequences, {steps} steps, alike on both sides, in {seconds:.1} s"));
    ctx.figures.insert("differential_steps".into(), steps);
    Ok(())
}

/// The failure: the difference, on the shortest sequence shrinking finds.
fn reported(
    ctx: &Ctx,
    n: u64,
    seed: u64,
    sequence: &[step::Step],
    found: twin::Difference,
) -> Result<Failure, Failure> {
    let (shrunk, difference) = shrink::shrink(ctx, sequence, found)?;
    let mut lines = vec!["ukue init FILE".to_string()];
    lines.extend(difference.lines.iter().cloned());
    let numbered: Vec<String> = lines.iter().enumerate().map(|(i, l)| format!("  {}. {l}", i + 1)).collect();
    let at = difference.step + 2;
    Ok(Failure::fail(
        format!("at step {at} (`{}`), as the reference: {}", difference.line, difference.expected),
        format!(
            "{}\nthe sequence (sequence {n} of the case's seed, its own seed {seed}), shrunk from {} to {} steps; \
             each side runs it on a file of its own, with its own ids:\n{}",
            difference.seen,
            sequence.len() + 1,
            shrunk.len() + 1,
            numbered.join("\n")
        ),
    ))
}
