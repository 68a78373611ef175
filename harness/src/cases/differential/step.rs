//! The generator: seeded sequences of command lines, valid and invalid,
//! as data. A step names its jobs by the add that made them
//! ([`Word::Job`]), so that each side runs it with its own ids and a
//! sequence shrinks by dropping steps.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// One word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    Lit(String),
    /// An argument that is not UTF-8 (a payload's bytes).
    Bytes(Vec<u8>),
    /// The side's ukue file.
    File,
    /// The id of the job made by the add with this label; the id no job
    /// has when that add was refused or is not in the sequence.
    Job(usize),
    /// An id that no job has.
    Missing,
}

/// What a step's command is, for the comparison of what it printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `add`, whose printed id names the job labelled so.
    Add(usize),
    /// `list`, `show` or `stats` with `--json`: the JSON is compared.
    Json,
    /// `list`, `show` or `stats` as text: only the exit class is compared.
    Text,
    /// `retry IDS` or `delete IDS`: with more than one ID, run with only
    /// the IDs the reference's file holds dead (retry) or at all (delete),
    /// as the published command and the reference part ways at a bad one
    /// (COMMAND.md `retry.not-dead`, `delete.missing`).
    Ids { dead_only: bool },
    /// `retry --all` or `purge`: prints how many.
    Counted,
    /// `work FILE QUEUE`, stopped once the queue has nothing due and
    /// nothing running.
    Work,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub command: Command,
    pub words: Vec<Word>,
    pub stdin: Option<Vec<u8>>,
}

/// The queues a sequence uses: one of several characters' bytes among them.
pub const QUEUES: &[&str] = &["q", "r", "é"];

/// What the worker's command does with a job, by its payload's first
/// four bytes: `fail` exits 3 (its jobs have one attempt, so they die:
/// no backoff, which each program may choose, decides what happens next),
/// `dead` exits 65, anything else exits 0.
pub const WORK_SCRIPT: &str = "p=$(head -c 4); cat >/dev/null; \
                               case \"$p\" in fail) echo failed >&2; exit 3;; dead) echo dead >&2; exit 65;; esac";

/// A sequence of `len` steps.
/// Each sequence leaves out some commands and some of list's options
/// (swarm testing): the rest come up more often, and meet each other.
pub fn sequence(rng: &mut StdRng, len: usize) -> Vec<Step> {
    let mut commands: Vec<Pick> = COMMANDS.iter().copied().filter(|_| rng.gen_bool(0.6)).collect();
    commands.push(Pick::Add);
    let list_options = [(); 4].map(|_| if rng.gen_bool(0.7) { 60 } else { 0 });
    let mut gen = Gen {
        rng,
        adds: 0,
        works: 0,
        commands,
        queues_added: Vec::new(),
        dying: Vec::new(),
        dead: Vec::new(),
        list_options,
    };
    (0..len).map(|_| gen.step()).collect()
}

/// The commands a step may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    Add,
    List,
    Show,
    Stats,
    Retry,
    RetryAll,
    Purge,
    Delete,
    Work,
}

/// The commands but `add`, which every sequence has.
const COMMANDS: [Pick; 8] =
    [Pick::List, Pick::Show, Pick::Stats, Pick::Retry, Pick::RetryAll, Pick::Purge, Pick::Delete, Pick::Work];

struct Gen<'a> {
    rng: &'a mut StdRng,
    /// Adds so far: the labels of their jobs are 0..adds.
    adds: usize,
    works: usize,
    /// The commands this sequence runs (`add` among them).
    commands: Vec<Pick>,
    /// The queues that adds have named.
    queues_added: Vec<&'static str>,
    /// The jobs whose command fails or sends them to dead, by label, with
    /// their queue: the jobs that `work` leaves dead.
    dying: Vec<(usize, String)>,
    /// Those of them whose queue a `work` has run since: dead, most
    /// likely, for `retry` to name.
    dead: Vec<usize>,
    /// The chance (%) of list's --queue, --state, --after and --limit.
    list_options: [u32; 4],
}

fn lit(word: &str) -> Word {
    Word::Lit(word.to_string())
}

impl Gen<'_> {
    /// An add one step in three (and first); another command else.
    fn step(&mut self) -> Step {
        if self.adds == 0 || self.chance(33) {
            return self.add();
        }
        let mut pick = self.pick(&self.commands.clone());
        if pick == Pick::Work && self.works >= 3 {
            pick = Pick::Add;
        }
        match pick {
            Pick::Add => self.add(),
            Pick::List => self.list(),
            Pick::Show => self.show(),
            Pick::Stats => self.stats(),
            Pick::Retry => self.retry(),
            Pick::RetryAll => self.retry_all(),
            Pick::Purge => self.purge(),
            Pick::Delete => self.delete(),
            Pick::Work => self.work(),
        }
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        *from.choose(self.rng).expect("a choice")
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.gen_range(0..100) < percent
    }

    /// Mostly two queues, so that one queue's jobs meet another's.
    fn queue(&mut self) -> String {
        let i = self.pick(&[0, 0, 0, 1, 1, 1, 2]);
        QUEUES[i].to_string()
    }

    /// A job made earlier in the sequence, now and then one no job has.
    fn job(&mut self) -> Word {
        if self.adds == 0 || self.chance(8) {
            return Word::Missing;
        }
        Word::Job(self.rng.gen_range(0..self.adds))
    }

    /// `positional` then `options`, or the options first.
    fn line(&mut self, name: &str, positional: Vec<Word>, options: Vec<Word>) -> Vec<Word> {
        let mut words = vec![lit(name)];
        if self.chance(25) {
            words.extend(options);
            words.extend(positional);
        } else {
            words.extend(positional);
            words.extend(options);
        }
        words
    }

    fn add(&mut self) -> Step {
        let label = self.adds;
        self.adds += 1;
        let kind = self.rng.gen_range(0..100);
        let mut payload = match kind {
            0..=34 => format!("job-{label}").into_bytes(),
            35..=52 => format!("fail-{label}").into_bytes(),
            53..=69 => format!("dead-{label}").into_bytes(),
            70..=77 => Vec::new(),
            78..=87 => vec![0xff, 0xfe, b'0' + (label % 10) as u8],
            88..=94 => format!("-dash {label}\n\tline").into_bytes(),
            _ => (0..70_000u32).map(|i| b"abcdefgh"[(i % 8) as usize]).collect(),
        };
        let mut options = Vec::new();
        let mut valid = true;
        match self.rng.gen_range(0..100) {
            0..=59 => {}
            60..=69 => options.extend([lit("--delay"), lit(self.pick(&["0", "1h", "90m", "0s"]))]),
            70..=79 => {
                let at = self.pick(&[
                    "2000-01-01T00:00:00Z",
                    "2100-01-01T00:00:00.250Z",
                    "2100-06-01T02:00:00+02:00",
                ]);
                options.extend([lit("--at"), lit(at)]);
            }
            80..=84 => options.extend([lit("--delay"), lit("0"), lit("--at"), lit("2000-01-01T00:00:00Z")]),
            85..=89 => {
                valid = false;
                options.extend([lit("--delay"), lit(self.pick(&["-5s", "-1h"]))]);
            }
            90..=94 => {
                valid = false;
                options.extend([lit("--delay"), lit("1h"), lit("--at"), lit("2100-01-01T00:00:00Z")]);
            }
            _ => {
                valid = false;
                options.extend([
                    lit("--at"),
                    lit(self.pick(&["tomorrow", "2100-01-01", "2100-01-01 00:00:00Z"])),
                ]);
            }
        }
        if self.chance(40) {
            let priority = self.pick(&["-100", "-1", "0", "5", "100", "101", "-101"]);
            valid &= !["101", "-101"].contains(&priority);
            options.extend([lit("--priority"), lit(priority)]);
        }
        // A job that fails has one attempt: it dies, whatever the backoff.
        if payload.starts_with(b"fail") {
            options.extend([lit("--attempts"), lit("1")]);
        } else if self.chance(25) {
            let attempts = self.pick(&["1", "3", "10", "-1"]);
            valid &= attempts != "-1";
            options.extend([lit("--attempts"), lit(attempts)]);
        }
        let mut queue = self.queue();
        if payload.starts_with(b"fail") || payload.starts_with(b"dead") {
            self.dying.push((label, queue.clone()));
        }
        if let Some(known) = QUEUES.iter().find(|q| **q == queue) {
            self.queues_added.push(known);
        }
        if valid && self.chance(4) {
            queue = self.pick(&["", &"x".repeat(201)]).to_string();
        }
        let by_stdin = payload.len() > 1000 || self.chance(30);
        let mut positional = vec![Word::File, Word::Lit(queue)];
        let stdin = if by_stdin {
            if self.chance(50) {
                positional.push(lit("-"));
            }
            Some(std::mem::take(&mut payload))
        } else {
            if payload.first() == Some(&b'-') {
                options.push(lit("--"));
            }
            positional.push(match String::from_utf8(payload) {
                Ok(text) => Word::Lit(text),
                Err(e) => Word::Bytes(e.into_bytes()),
            });
            None
        };
        // `--` goes last, before the payload it guards.
        let words = if options.last() == Some(&lit("--")) {
            options.pop();
            let payload = positional.pop().expect("a payload");
            let mut words = self.line("add", positional, options);
            words.extend([lit("--"), payload]);
            words
        } else {
            self.line("add", positional, options)
        };
        Step { command: Command::Add(label), words, stdin }
    }

    fn list(&mut self) -> Step {
        let mut options = Vec::new();
        let [queue, state, after, limit] = self.list_options;
        if self.chance(queue) {
            let queue = self.queue();
            options.extend([lit("--queue"), Word::Lit(queue)]);
        }
        if self.chance(state) {
            let state =
                self.pick(&["ready", "delayed", "running", "dead", "done", "ready", "dead", "waiting"]);
            options.extend([lit("--state"), lit(state)]);
        }
        if self.chance(after) {
            let after = if self.chance(20) { lit("0") } else { self.job() };
            options.extend([lit("--after"), after]);
        }
        if self.chance(limit) {
            let limit = self.pick(&["1", "2", "3", "50"]);
            options.extend([lit("--limit"), lit(limit)]);
        }
        self.json_or_text("list", vec![Word::File], options)
    }

    fn show(&mut self) -> Step {
        let job = self.job();
        self.json_or_text("show", vec![Word::File, job], vec![])
    }

    fn stats(&mut self) -> Step {
        self.json_or_text("stats", vec![Word::File], vec![])
    }

    fn json_or_text(&mut self, name: &str, positional: Vec<Word>, mut options: Vec<Word>) -> Step {
        let json = self.chance(85);
        if json {
            options.push(lit("--json"));
        }
        let words = self.line(name, positional, options);
        Step { command: if json { Command::Json } else { Command::Text }, words, stdin: None }
    }

    fn ids(&mut self) -> Vec<Word> {
        let n = self.pick(&[1, 1, 2, 3]);
        (0..n).map(|_| self.job()).collect()
    }

    /// Mostly jobs that are likely dead, so that a retry of several finds
    /// several dead.
    fn retry(&mut self) -> Step {
        let mut positional = vec![Word::File];
        if self.dead.is_empty() || self.chance(20) {
            positional.extend(self.ids());
        } else {
            let n = self.pick(&[1, 2, 2, 3]);
            let dead = self.dead.clone();
            positional.extend(dead.choose_multiple(self.rng, n).map(|label| Word::Job(*label)));
        }
        let words = self.line("retry", positional, vec![]);
        Step { command: Command::Ids { dead_only: true }, words, stdin: None }
    }

    fn retry_all(&mut self) -> Step {
        let mut options = vec![lit("--all")];
        if self.chance(50) {
            let queue = self.queue();
            options.extend([lit("--queue"), Word::Lit(queue)]);
        }
        let words = self.line("retry", vec![Word::File], options);
        Step { command: Command::Counted, words, stdin: None }
    }

    fn purge(&mut self) -> Step {
        let state = self.pick(&["dead", "done", "dead", "done", "ready"]);
        let mut options = vec![lit("--state"), lit(state)];
        if self.chance(60) {
            let queue = self.queue();
            options.extend([lit("--queue"), Word::Lit(queue)]);
        }
        let words = self.line("purge", vec![Word::File], options);
        Step { command: Command::Counted, words, stdin: None }
    }

    fn delete(&mut self) -> Step {
        let mut positional = vec![Word::File];
        positional.extend(self.ids());
        let words = self.line("delete", positional, vec![]);
        Step { command: Command::Ids { dead_only: false }, words, stdin: None }
    }

    /// Mostly in a queue an add has used, so that there is work to do.
    fn work(&mut self) -> Step {
        self.works += 1;
        let queue = match self.queues_added.clone() {
            added if !added.is_empty() && self.chance(80) => self.pick(&added).to_string(),
            _ => self.queue(),
        };
        let worked = self.dying.iter().filter(|(_, q)| *q == queue).map(|(label, _)| *label);
        self.dead.extend(worked.collect::<Vec<_>>());
        self.dead.sort_unstable();
        self.dead.dedup();
        let mut words = vec![lit("work"), Word::File, Word::Lit(queue), lit("--poll"), lit("50ms")];
        if self.chance(50) {
            words.push(lit("--keep-done"));
        }
        if self.chance(30) {
            words.extend([lit("--concurrency"), lit("3")]);
        }
        words.extend(["--", "sh", "-c", WORK_SCRIPT].map(lit));
        Step { command: Command::Work, words, stdin: None }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_seed_makes_one_sequence() {
        let a = sequence(&mut StdRng::seed_from_u64(7), 40);
        let b = sequence(&mut StdRng::seed_from_u64(7), 40);
        assert_eq!(a, b);
        assert_ne!(a, sequence(&mut StdRng::seed_from_u64(8), 40));
    }

    #[test]
    fn every_command_comes_up_and_jobs_are_named_after_their_adds() {
        let mut rng = StdRng::seed_from_u64(1);
        let sequences: Vec<Vec<Step>> = (0..100).map(|_| sequence(&mut rng, 20)).collect();
        let all: Vec<&Step> = sequences.iter().flatten().collect();
        for name in ["add", "list", "show", "stats", "retry", "purge", "delete", "work"] {
            assert!(all.iter().any(|s| s.words[0] == lit(name)), "{name}");
        }
        for steps in &sequences {
            named_after_their_adds(steps);
        }
    }

    fn named_after_their_adds(steps: &[Step]) {
        let mut adds = 0;
        for step in steps {
            for word in &step.words {
                if let Word::Job(label) = word {
                    assert!(*label < adds, "job {label} named before its add");
                }
            }
            if let Command::Add(label) = step.command {
                assert_eq!(label, adds);
                adds += 1;
            }
        }
    }

    #[test]
    fn failing_jobs_have_one_attempt() {
        for step in sequence(&mut StdRng::seed_from_u64(3), 2000) {
            let payload = step.stdin.clone().or_else(|| match step.words.last() {
                Some(Word::Lit(text)) => Some(text.clone().into_bytes()),
                _ => None,
            });
            if matches!(step.command, Command::Add(_)) && payload.is_some_and(|p| p.starts_with(b"fail")) {
                let at = step.words.iter().position(|w| *w == lit("--attempts")).expect("--attempts");
                assert_eq!(step.words[at + 1], lit("1"));
            }
        }
    }
}
