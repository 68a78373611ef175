//! The docs' commands run, and their links lead somewhere.
//!
//! Every fenced block of README.md and docs/*.md whose info string is
//! `sh run` is run with `bash -euo pipefail`, each in a fresh temporary
//! directory of its own, as docs/README.md says:
//! - `./target/release/` and `target/release/` in the block become the
//!   directory of the binaries this test run built (`target/debug/` under
//!   `cargo test`), and that directory comes first on PATH, so that
//!   `ukue`, `ukue-conformance`, `ukue-broken` and `ukue-driver` are this
//!   build's;
//! - the repository's clients/, spec/, fixtures/, fuzz/ and
//!   .clusterfuzzlite/ are linked into the directory, so that a block reads
//!   them as from the repository's root;
//! - TMPDIR is a folder of the test's own, removed with it.
//!
//! A block that exits non-zero, or runs past [`DEADLINE`], fails the test,
//! which names its file and line and shows its output; every process it
//! started is killed when it ends. A block that names a program the
//! machine may lack (python3 or a Python client, curl, chromium) is
//! skipped when it is missing, and says so (under `CI` it fails instead:
//! `support::have`).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;
use ukue_harness::subjects::process::Procs;

/// The longest a block may run: a block past it has hung. The blocks marked
/// `sh run` are the quick ones (seconds each, up to a minute for the model
/// run of the Python driver); the long ones stay unmarked. Generous: the
/// tests run side by side, and a loaded machine makes the busiest blocks
/// several times slower (90 s killed two of them at a load of 45).
const DEADLINE: Duration = Duration::from_secs(300);

/// Blocks run at once: most of a block's time is spent waiting on the
/// processes it starts.
const THREADS: usize = 2;

/// The info string that marks a block as runnable.
const MARKER: [&str; 2] = ["sh", "run"];

/// README.md and docs/*.md, by their path from the repository's root.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| Path::new("docs").join(path.file_name().unwrap()))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fenced block of a page.
struct Block {
    page: PathBuf,
    /// The line of its opening fence, counting from 1.
    line: usize,
    info: String,
    body: String,
}

impl Block {
    fn runnable(&self) -> bool {
        self.info.split_whitespace().eq(MARKER)
    }

    fn place(&self) -> String {
        format!("{}:{}", self.page.display(), self.line)
    }
}

/// Every fenced block of `page` (backtick fences, as the docs write them).
fn blocks(page: &Path) -> Vec<Block> {
    let text =
        std::fs::read_to_string(repo().join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, String, Vec<&str>)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence = trimmed.len() - trimmed.trim_start_matches('`').len();
        match &mut open {
            None if fence >= 3 => {
                open = Some((i + 1, fence, trimmed[fence..].trim().to_string(), Vec::new()))
            }
            Some((_, width, _, _)) if fence >= *width && trimmed[fence..].trim().is_empty() => {
                let (line, _, info, body) = open.take().unwrap();
                blocks.push(Block { page: page.to_path_buf(), line, info, body: body.join("\n") + "\n" });
            }
            Some((_, _, _, body)) => body.push(line),
            None => {}
        }
    }
    assert!(open.is_none(), "{}: a fenced block is never closed", page.display());
    blocks
}

/// The programs a block needs that a machine may lack.
fn needs(body: &str) -> Vec<&'static str> {
    let mut tools = Vec::new();
    if body.contains("python3") || body.contains("clients/python/") {
        tools.push("python3");
    }
    for tool in ["curl", "chromium"] {
        if body.contains(tool) {
            tools.push(tool);
        }
    }
    tools
}

/// The block as it runs here: this build's binaries for the release ones.
fn with_this_build(body: &str, bin: &Path) -> String {
    const HERE: &str = "\u{0}BIN\u{0}";
    let bin = format!("{}/", bin.display());
    body.replace("./target/release/", HERE).replace("target/release/", HERE).replace(HERE, &bin)
}

/// How a block ended: None when it passed, or what went wrong and its output.
fn run(block: &Block, bin: &Path, index: usize) -> Option<String> {
    let root = tempfile::Builder::new().prefix("ukue-docs-").tempdir().unwrap();
    let (work, tmp) = (root.path().join("work"), root.path().join("tmp"));
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    for shared in ["clients", "spec", "fixtures", "fuzz", ".clusterfuzzlite"] {
        std::os::unix::fs::symlink(repo().join(shared), work.join(shared)).unwrap();
    }
    let output_path = root.path().join("output");
    let output = std::fs::File::create(&output_path).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();

    let procs = Procs::new(format!("docs-{}-{index}", std::process::id()));
    let started = Instant::now();
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &with_this_build(&block.body, bin)])
        .current_dir(&work)
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(output.try_clone().unwrap())
        .stderr(output);
    let mut spawned = procs.spawn(&mut bash).expect("bash runs");
    let status = spawned.wait_timeout(DEADLINE).unwrap();
    // Whatever the block left running (a server, a worker) goes with it.
    procs.kill_all();
    let elapsed = started.elapsed();
    eprintln!("{}: {:.1} s", block.place(), elapsed.as_secs_f64());
    let verdict = match status {
        Some(status) if status.success() => return None,
        Some(status) => format!("{status} after {:.1} s", elapsed.as_secs_f64()),
        None => format!("still running after {DEADLINE:?}: killed"),
    };
    let output = std::fs::read_to_string(&output_path).unwrap_or_default();
    let tail = output.char_indices().rev().nth(6000).map_or(&output[..], |(i, _)| &output[i..]);
    Some(format!(
        "{}: {verdict}\n--- the block ---\n{}--- its output (the end) ---\n{tail}",
        block.place(),
        block.body
    ))
}

#[test]
fn every_runnable_block_of_the_docs_runs() {
    let bin = conformance().parent().unwrap().to_path_buf();
    reference(); // `ukue`, beside the harness's binaries
    let all: Vec<Block> = pages().iter().flat_map(|page| blocks(page)).collect();
    let unknown: Vec<String> = all
        .iter()
        .filter(|b| !b.runnable() && b.info.split_whitespace().any(|w| w == "run"))
        .map(|b| format!("{}: `{}`", b.place(), b.info))
        .collect();
    assert!(unknown.is_empty(), "blocks marked `run` that are not `sh run`: {unknown:?}");
    let runnable: Vec<&Block> = all.iter().filter(|b| b.runnable()).collect();
    assert!(
        runnable.iter().any(|b| b.page == Path::new("README.md")),
        "the README has no `sh run` block: the parser or the marker changed"
    );

    // Each tool looked for once: have() says when one is missing (and
    // fails under CI); the blocks that need it are named, and the rest run.
    let mut tools: Vec<&str> = runnable.iter().flat_map(|block| needs(&block.body)).collect();
    tools.sort();
    tools.dedup();
    let missing: Vec<&str> = tools.into_iter().filter(|tool| !have(tool)).collect();
    let (to_run, skipped): (Vec<_>, Vec<_>) = runnable
        .into_iter()
        .enumerate()
        .partition(|(_, block)| needs(&block.body).iter().all(|tool| !missing.contains(tool)));
    for (_, block) in &skipped {
        eprintln!("SKIPPED: {}, which needs {}", block.place(), needs(&block.body).join(" and "));
    }
    let failures: Vec<String> =
        each_in_parallel(&to_run, THREADS, |(i, block)| run(block, &bin, *i)).into_iter().flatten().collect();
    assert!(
        failures.is_empty(),
        "{} of {} runnable blocks failed:\n{}",
        failures.len(),
        to_run.len(),
        failures.join("\n")
    );
}

/// A heading's anchor, as GitHub makes it: lower case, punctuation but
/// `-` and `_` dropped, spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (outside fenced blocks).
fn anchors(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap_or_default();
    let mut in_fence = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_link_of_the_docs_leads_to_a_file_and_heading() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(repo().join(&page)).unwrap();
        for (i, line) in text.lines().enumerate() {
            for link in line.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
                if link.contains("://") || link.starts_with("mailto:") {
                    continue;
                }
                let (file, heading) = link.split_once('#').unwrap_or((link, ""));
                let target = if file.is_empty() {
                    repo().join(&page)
                } else {
                    repo().join(&page).with_file_name(file)
                };
                let place = format!("{}:{}: {link}", page.display(), i + 1);
                if !target.exists() {
                    broken.push(format!("{place}: no such file"));
                } else if !heading.is_empty() && !anchors(&target).iter().any(|a| a == heading) {
                    broken.push(format!("{place}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The README's two commands for a fresh machine are the ones CI runs:
/// `bash .ci/run` runs the tests with cargo nextest, and the README
/// still fits on two screens.
#[test]
fn the_readme_gives_what_ci_runs_and_fits_on_two_screens() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for command in ["cargo build --release && ./target/release/ukue-conformance\n", "bash .ci/run\n"] {
        assert!(readme.contains(command), "the README no longer gives `{}`", command.trim());
    }
    let ci = std::fs::read_to_string(repo().join(".ci/run")).expect(".ci/run exists");
    assert!(
        ci.lines().any(|l| l.trim_start().starts_with("cargo nextest run")),
        ".ci/run no longer runs `cargo nextest run`, which the README says it does"
    );
    let lines = readme.lines().count();
    assert!(lines <= 120, "README.md has {lines} lines: keep it to two screens, and move the rest to docs/");
}
