//! `cli_args`: command lines made of the fuzzer's bytes (split at NUL),
//! run by the reference's command line in this process and compared with
//! a model of spec/COMMAND.md: the exit class (0, 1 or the usage error's
//! 2), the rows the command writes, and, for a refusal, that nothing was
//! written. FILE arguments are kept inside a scratch folder by their last
//! name, which chooses what is there: `jobs.ukue` a file with a job in
//! every state, `empty.ukue` a file without jobs, `text.ukue` a file that
//! is no ukue file, any other name nothing.
//!
//! A word `\x01 N REST` stands for REST repeated N times (N a byte): a
//! queue or payload of hundreds of bytes from a few (libFuzzer keeps no
//! dictionary entry over 64 bytes), as the limits of 200 characters need.
//!
//! `work` and `serve` (which run until stopped) and an `add` that reads its
//! payload from stdin are read, not run. With `UKUE_BROKEN=NAME` naming a
//! command-line bug of ukue-broken, the subject is the reference with that
//! bug, as `ukue-broken` runs it.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::Parser;
use ukue::cli::args::{Cli, Cmd};

use crate::subjects::broken::{self, CliEdit};
use crate::subjects::broken_cli::{read_edited, run_edited};
use crate::subjects::observe::file::{read_rows, Row};

/// The fixtures a FILE argument can name.
const JOBS: &str = "jobs.ukue";
const EMPTY: &str = "empty.ukue";
const TEXT: &str = "text.ukue";

/// The edit that `UKUE_BROKEN` names, if it names a command-line bug.
fn fuzzed_edit() -> Option<CliEdit> {
    static EDIT: OnceLock<Option<CliEdit>> = OnceLock::new();
    *EDIT.get_or_init(|| match std::env::var("UKUE_BROKEN") {
        Ok(name) if !name.is_empty() => match broken::cli_bug(&name) {
            Some(bug) => Some(bug.edit),
            None => panic!("UKUE_BROKEN={name} names no command-line bug of ukue-broken"),
        },
        _ => None,
    })
}

/// `cli_args`: see the module's comment.
pub fn cli_args(data: &[u8]) {
    super::fuzzing::in_scratch(|dir| cli_args_in(dir, data))
}

fn cli_args_in(dir: &Path, data: &[u8]) {
    let words: Vec<OsString> = std::iter::once(OsString::from("ukue"))
        .chain(data.split(|b| *b == 0).take(64).map(|a| OsString::from_vec(expanded(a))))
        .collect();
    lay_out(dir);
    let line = || format!("the command line: {:?}", &words[1..]);
    // The model reads the words as COMMAND.md says (the reference's parser).
    let parsed = Cli::try_parse_from(&words);
    let subject = read_edited(words.clone(), fuzzed_edit());
    let cmd = match (parsed, subject) {
        (Err(e), subject) => {
            let want = u8::try_from(e.exit_code()).unwrap_or(2);
            let got = subject.err();
            assert!(
                got == Some(want),
                "cli_args: exit {got:?} (None: read), COMMAND.md says {want}\n{}",
                line()
            );
            return;
        }
        (Ok(_), Err(code)) => {
            panic!("cli_args: the line was not read (exit {code}), COMMAND.md reads it\n{}", line())
        }
        (Ok(cli), Ok(cmd)) => {
            assert_eq!(cli.command.name(), cmd.name(), "cli_args: another command\n{}", line());
            (cli.command, cmd)
        }
    };
    let (model_cmd, mut subject_cmd) = cmd;
    if !runs_here(&model_cmd) {
        return;
    }
    let mut model_cmd = model_cmd;
    let file = jail(dir, &mut model_cmd);
    jail(dir, &mut subject_cmd);
    let before = Snapshot::of(&file);
    let start = now_ms();
    let mut out = Vec::new();
    let result = match fuzzed_edit() {
        Some(edit) => run_edited(subject_cmd, edit, &ukue::OpenOptions::default(), &mut out),
        None => ukue::cli::run(subject_cmd, &ukue::OpenOptions::default(), &mut out),
    };
    let end = now_ms();
    let code = match &result {
        Ok(()) => 0,
        Err(e) => ukue::cli::exit_status(e),
    };
    let after = Snapshot::of(&file);
    let expected = model(&model_cmd, &before);
    let why = || format!("{}\nits answer: {code} {result:?}", line());
    assert!(
        expected.exits.contains(&code),
        "cli_args: exit {code}, COMMAND.md says {:?}\n{}",
        expected.exits,
        why()
    );
    if expected.rows.is_empty() {
        assert!(after == before, "cli_args: a refusal (exit {code}) changed {}\n{}", file.display(), why());
        return;
    }
    let rows = after.rows.clone().unwrap_or_default();
    let matches = expected.rows.iter().any(|want| same_rows(want, &rows, start, end));
    assert!(
        matches,
        "cli_args: the rows after it differ from COMMAND.md's\n  got:  {rows:?}\n  want: {:?}\n{}",
        expected.rows,
        why()
    );
}

/// The byte that starts a repeated word (see the module's comment).
const REPEAT: u8 = 1;

/// A word as the command line gets it: `\x01 N REST` is REST N times.
fn expanded(word: &[u8]) -> Vec<u8> {
    match word {
        [REPEAT, n, rest @ ..] => rest.repeat(usize::from(*n)),
        _ => word.to_vec(),
    }
}

/// Whether the command runs in this process: not `work` and `serve`,
/// which run until stopped, nor an `add` that reads stdin.
fn runs_here(cmd: &Cmd) -> bool {
    match cmd {
        Cmd::Work(_) | Cmd::Serve(_) => false,
        Cmd::Add(args) => args.payload.as_deref().is_some_and(|p| p != "-"),
        _ => true,
    }
}

/// The longest file name a command line of the fuzzer keeps, in bytes.
const NAME_MOST: usize = 200;

/// Puts the command's FILE in `dir`, by its last name; returns it.
fn jail(dir: &Path, cmd: &mut Cmd) -> PathBuf {
    let file = match cmd {
        Cmd::Init { file }
        | Cmd::Stats { file, .. }
        | Cmd::Show { file, .. }
        | Cmd::Retry { file, .. }
        | Cmd::Purge { file, .. }
        | Cmd::Delete { file, .. } => file,
        Cmd::Add(args) => &mut args.file,
        Cmd::List(args) => &mut args.file,
        Cmd::Work(args) => &mut args.file,
        Cmd::Serve(args) => &mut args.file,
        Cmd::Version => return dir.join("f"),
    };
    // A name of more than 255 bytes is one no file system takes
    // (ENAMETOOLONG, exit 1), which the model does not know; 200 leaves
    // room for SQLite's `-journal` and `-wal` beside it.
    let name = file
        .file_name()
        .filter(|n| !n.as_bytes().is_empty())
        .map(|n| PathBuf::from(std::ffi::OsStr::from_bytes(&n.as_bytes()[..n.len().min(NAME_MOST)])));
    *file = dir.join(name.unwrap_or_else(|| PathBuf::from("f")));
    file.clone()
}

/// The fixtures, laid out anew for each input.
fn lay_out(dir: &Path) {
    static MADE: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    let (jobs, empty) = MADE.get_or_init(|| {
        let scratch = super::run::scratch_dir("ukue-fuzz-cli-").expect("a scratch folder");
        let path = scratch.path().join("jobs.ukue");
        {
            let mut f = ukue::Ukue::create(&path).expect("a ukue file");
            let add =
                |f: &mut ukue::Ukue, queue: &str| f.add(&ukue::NewJob::new(queue, b"p".to_vec())).unwrap();
            let gone = add(&mut f, "a");
            f.delete(gone).expect("deleting a job");
            for queue in ["a", "b", "a", "b"] {
                add(&mut f, queue);
            }
            f.add(&ukue::NewJob::new("a", b"later".to_vec()).delay(std::time::Duration::from_secs(86_400)))
                .unwrap();
            let lease = std::time::Duration::from_secs(3600);
            for (queue, end) in [("a", 0), ("b", 0), ("a", 1), ("b", 2)] {
                let job = f.claim(queue, lease).unwrap().expect("a due job");
                match end {
                    0 => f.fail(job.id, &job.token, "failed", ukue::Retry::Never).map(drop).unwrap(),
                    1 => f.finish(job.id, &job.token, true).unwrap(),
                    _ => {}
                }
            }
        }
        let jobs = std::fs::read(&path).expect("reading the file");
        let empty_path = scratch.path().join("empty.ukue");
        drop(ukue::Ukue::create(&empty_path).expect("a ukue file"));
        (jobs, std::fs::read(&empty_path).expect("reading the file"))
    });
    for (name, bytes) in
        [(JOBS, jobs.as_slice()), (EMPTY, empty.as_slice()), (TEXT, b"no ukue file\n".as_slice())]
    {
        std::fs::write(dir.join(name), bytes).expect("laying out a fixture");
    }
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A file as the checks see it: its bytes (None: no file), and its rows
/// when it is a ukue file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    bytes: Option<Vec<u8>>,
    rows: Option<Vec<Row>>,
    /// The largest id ever used (`sqlite_sequence`).
    seq: i64,
}

impl Snapshot {
    fn of(path: &Path) -> Snapshot {
        let bytes = std::fs::read(path).ok();
        let conn = bytes.as_ref().and_then(|_| crate::subjects::observe::file::open_read_only(path).ok());
        let rows = conn.as_ref().and_then(|c| read_rows(c).ok());
        let seq = conn
            .as_ref()
            .and_then(|c| {
                c.query_row("SELECT seq FROM sqlite_sequence WHERE name = 'ukue_jobs'", [], |r| r.get(0)).ok()
            })
            .unwrap_or(0);
        Snapshot { bytes, rows, seq }
    }
}

/// What COMMAND.md allows: the exit statuses, and the rows after the
/// command (any one of them; a run_at or created_at of [`NOW`] is the
/// time of the command); none for a refusal, which leaves the file byte
/// for byte as it was.
struct Expected {
    exits: Vec<u8>,
    rows: Vec<Vec<Row>>,
}

/// A time the command itself takes: compared with when it ran.
const NOW: i64 = i64::MIN;

fn refused(exits: &[u8]) -> Expected {
    Expected { exits: exits.to_vec(), rows: Vec::new() }
}

fn done(rows: Vec<Vec<Row>>) -> Expected {
    Expected { exits: vec![0], rows }
}

/// The model of the command line (spec/COMMAND.md §2 to §11).
fn model(cmd: &Cmd, before: &Snapshot) -> Expected {
    let is_ukue = before.rows.is_some();
    let exists = before.bytes.is_some();
    let rows = before.rows.clone().unwrap_or_default();
    match cmd {
        Cmd::Version => done(vec![rows]),
        // file.create, init.existing: a file that is no ukue file is refused.
        Cmd::Init { .. } if exists && !is_ukue => refused(&[1]),
        Cmd::Init { .. } => done(vec![rows]),
        Cmd::Add(_) if exists && !is_ukue => refused(&[1]),
        Cmd::Add(args) => {
            let delay = args.delay.map(|d| d.as_millis() as i64);
            if delay.is_some_and(|d| d != 0) && args.at.is_some() {
                return refused(&[1, 2]);
            }
            let run_at = |at: Option<i64>| match (at, delay) {
                (Some(at), _) => vec![at, NOW],
                (None, Some(d)) if d > 0 => vec![NOW + d],
                _ => vec![NOW],
            };
            let payload = args.payload.as_ref().map(|p| p.as_bytes().to_vec()).unwrap_or_default();
            let row = |run_at: i64| Row {
                id: before.seq.max(rows.iter().map(|r| r.id).max().unwrap_or(0)) + 1,
                queue: args.queue.clone(),
                state: "ready".into(),
                priority: args.priority.unwrap_or(0),
                attempts: 0,
                max_attempts: args.attempts.unwrap_or(10),
                run_at,
                lease_until: None,
                token: None,
                last_error: None,
                created_at: NOW,
                updated_at: 0,
                payload: payload.clone(),
            };
            done(run_at(args.at).into_iter().map(|r| [rows.clone(), vec![row(r)]].concat()).collect())
        }
        // file.missing, file.not-ukue.
        _ if !is_ukue => refused(&[1]),
        Cmd::Stats { .. } | Cmd::List(_) => done(vec![rows]),
        Cmd::Show { id, .. } if rows.iter().any(|r| r.id == *id) => done(vec![rows]),
        Cmd::Show { .. } => refused(&[1]),
        Cmd::Retry { all: true, queue, .. } => {
            let mut rows = rows;
            for row in rows.iter_mut() {
                if row.state == "dead" && queue.as_ref().is_none_or(|q| *q == row.queue) {
                    retried(row);
                }
            }
            done(vec![rows])
        }
        Cmd::Retry { ids, .. } => each_id(rows, ids, |rows, id| {
            let row = rows.iter_mut().find(|r| r.id == id && r.state == "dead").ok_or(())?;
            retried(row);
            Ok(())
        }),
        Cmd::Delete { ids, .. } => each_id(rows, ids, |rows, id| {
            let at = rows.iter().position(|r| r.id == id).ok_or(())?;
            rows.remove(at);
            Ok(())
        }),
        Cmd::Purge { state, queue, .. } => {
            let mut rows = rows;
            rows.retain(|r| !(r.state == *state && queue.as_ref().is_none_or(|q| *q == r.queue)));
            done(vec![rows])
        }
        Cmd::Work(_) | Cmd::Serve(_) => unreachable!("not run here"),
    }
}

/// FORMAT.md §5.9: a dead job back to ready, due now, attempts 0.
fn retried(row: &mut Row) {
    row.state = "ready".into();
    row.attempts = 0;
    row.run_at = NOW;
}

/// A command over several ids, each by `step`: all done, exit 0; one that
/// fails, exit 1, and the rows as they are when the command stops there
/// (the published command) or goes on through the rest (the reference)
/// (retry.not-dead, delete.missing).
fn each_id(rows: Vec<Row>, ids: &[i64], step: impl Fn(&mut Vec<Row>, i64) -> Result<(), ()>) -> Expected {
    let (mut stopped, mut went_on, mut failed) = (rows.clone(), rows, false);
    for id in ids {
        if step(&mut went_on, *id).is_err() {
            failed = true;
        } else if !failed {
            stopped = went_on.clone();
        }
    }
    match failed {
        true => Expected { exits: vec![1], rows: vec![stopped, went_on] },
        false => done(vec![went_on]),
    }
}

/// Whether `got` is `want`, a time of [`NOW`] (plus a delay) taken as any
/// time from `start` to `end`, and updated_at not compared.
fn same_rows(want: &[Row], got: &[Row], start: i64, end: i64) -> bool {
    let time = |want: i64, got: i64| match want.checked_sub(NOW) {
        Some(delay) if want < NOW / 2 => (start + delay..=end + delay).contains(&got),
        _ => want == got,
    };
    want.len() == got.len()
        && want.iter().zip(got).all(|(w, g)| {
            let fixed =
                Row { run_at: g.run_at, created_at: g.created_at, updated_at: g.updated_at, ..w.clone() };
            fixed == *g && time(w.run_at, g.run_at) && time(w.created_at, g.created_at)
        })
}
