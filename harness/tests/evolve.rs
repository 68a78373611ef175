//! `ukue-conformance evolve`: a catalogue of realistic edits of
//! spec/FORMAT.md (harness/tests/fixtures/evolve/*.patch), each applied to
//! the page as it is now and judged, with the exit status and the findings
//! its header expects:
//!
//! ```text
//! # evolve: what the edit is
//! # exit: 1
//! # finds: needs_new_version 2.4.3 ukue_jobs.last_error
//! ```
//!
//! A `finds` line is a verdict, a rule of FORMAT.md §2.4 and what differs;
//! an edit with none must find no difference at all. The patches carry one
//! line of context, and a hunk applies wherever its lines are found, so
//! that unrelated edits of FORMAT.md leave them applying.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{conformance, repo};

/// One edit of the catalogue.
struct Edit {
    name: String,
    /// The page it edits, under spec/.
    page: String,
    exit: i32,
    finds: Vec<String>,
    hunks: Vec<Hunk>,
}

/// A hunk: the lines it expects (context and removed), and what it puts
/// in their place (context and added).
struct Hunk {
    before: Vec<String>,
    after: Vec<String>,
}

fn catalogue() -> Vec<Edit> {
    let dir = repo().join("harness/tests/fixtures/evolve");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "patch"))
        .collect();
    paths.sort();
    paths.iter().map(|p| parse(p)).collect()
}

fn parse(path: &Path) -> Edit {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let header = |key: &str| -> Vec<String> {
        text.lines().filter_map(|l| l.strip_prefix(&format!("# {key}: ")).map(str::to_string)).collect()
    };
    let exit = header("exit").first().unwrap_or_else(|| panic!("{name}: no `# exit:` line")).parse().unwrap();
    let mut hunks: Vec<Hunk> = Vec::new();
    for line in text.lines().skip_while(|l| !l.starts_with("@@")) {
        if line.starts_with("@@") {
            hunks.push(Hunk { before: Vec::new(), after: Vec::new() });
            continue;
        }
        let hunk = hunks.last_mut().unwrap();
        // `diff` shows an empty context line as an empty line, or a space.
        match line.split_at(line.len().min(1)) {
            ("-", rest) => hunk.before.push(rest.to_string()),
            ("+", rest) => hunk.after.push(rest.to_string()),
            ("\\", _) => {}
            (_, rest) => {
                hunk.before.push(rest.to_string());
                hunk.after.push(rest.to_string());
            }
        }
    }
    assert!(!hunks.is_empty(), "{name}: no hunk");
    let page = header("page").first().cloned().unwrap_or_else(|| "FORMAT.md".to_string());
    Edit { name, page, exit, finds: header("finds"), hunks }
}

/// The page with the edit applied: each hunk where its lines are, once;
/// or which hunk no longer applies, and why.
fn apply(edit: &Edit, page: &str) -> Result<String, String> {
    let mut lines: Vec<String> = page.lines().map(str::to_string).collect();
    for (i, hunk) in edit.hunks.iter().enumerate() {
        let at: Vec<usize> = (0..=lines.len().saturating_sub(hunk.before.len()))
            .filter(|&start| lines[start..start + hunk.before.len()] == hunk.before[..])
            .collect();
        if at.len() != 1 {
            return Err(format!(
                "{}.patch, hunk {}, no longer applies to spec/{}: its lines are found {} times, not once \
                 (make it again against the page as it is now):\n{}",
                edit.name,
                i + 1,
                edit.page,
                at.len(),
                hunk.before.join("\n")
            ));
        }
        lines.splice(at[0]..at[0] + hunk.before.len(), hunk.after.iter().cloned());
    }
    Ok(lines.join("\n") + "\n")
}

fn applied(edit: &Edit, page: &str) -> String {
    apply(edit, page).unwrap_or_else(|e| panic!("{e}"))
}

fn evolve(dir: &Path, old: &str, new: &str, format: &str) -> (i32, String, String) {
    let (old_path, new_path) = (dir.join("OLD.md"), dir.join("NEW.md"));
    std::fs::write(&old_path, old).unwrap();
    std::fs::write(&new_path, new).unwrap();
    let out = Command::new(conformance())
        .arg("evolve")
        .args([&old_path, &new_path])
        .args(["--format", format])
        .output()
        .expect("ukue-conformance runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn each_edit_of_the_catalogue_gets_its_verdict() {
    let edits = catalogue();
    assert!(edits.len() >= 20, "the catalogue holds {} edits", edits.len());
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for edit in &edits {
        let page = std::fs::read_to_string(repo().join("spec").join(&edit.page)).unwrap();
        let edited = applied(edit, &page);
        let (code, stdout, stderr) = evolve(dir.path(), &page, &edited, "json");
        let json: serde_json::Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{}: {e}: {stdout}{stderr}", edit.name));
        let found: Vec<String> = json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| match d["verdict"].as_str() {
                Some(verdict) => {
                    format!("{verdict} {} {}", d["rule"].as_str().unwrap(), d["subject"].as_str().unwrap())
                }
                None => format!("{} {}", d["change"].as_str().unwrap(), d["id"].as_str().unwrap()),
            })
            .collect();
        let missing: Vec<&String> = edit.finds.iter().filter(|f| !found.contains(f)).collect();
        if code != edit.exit || !missing.is_empty() || (edit.finds.is_empty() && !found.is_empty()) {
            wrong.push(format!(
                "{}: exit {code} (expected {}), found {found:?}, expected {:?}",
                edit.name, edit.exit, edit.finds
            ));
        }
    }
    assert!(wrong.is_empty(), "edits judged otherwise than their patch expects:\n{}", wrong.join("\n"));
}

/// Issue 33's three edits of the table get three answers: a rename and a
/// default changed break the promise, naming their rule; a column with a
/// default keeps it. The human output says which, and why.
#[test]
fn the_three_edits_of_the_table_get_three_answers() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let edits = catalogue();
    let dir = tempfile::tempdir().unwrap();
    let judge = |name: &str| {
        let edit = edits.iter().find(|e| e.name == name).unwrap();
        evolve(dir.path(), &page, &applied(edit, &page), "human")
    };
    let (code, rename, _) = judge("column-renamed");
    assert_eq!(code, 1, "{rename}");
    assert!(
        rename.contains("needs a new version")
            && rename.contains("§2.4.3")
            && rename.contains("renamed to error"),
        "{rename}"
    );
    assert!(rename.contains("Columns removed, renamed or retyped") && rename.contains("BREAKS"), "{rename}");
    let (code, tags, _) = judge("column-added-with-default");
    assert_eq!(code, 0, "{tags}");
    assert!(
        tags.contains("allowed within version 1")
            && tags.contains("§2.4.2")
            && tags.contains("keeps the promise"),
        "{tags}"
    );
    let (code, fewer, _) = judge("default-changed");
    assert_eq!(code, 1, "{fewer}");
    assert!(fewer.contains("§2.4.4") && fewer.contains("default 10 → 5"), "{fewer}");
    assert!(rename != tags && tags != fewer && fewer != rename);
}

#[test]
fn a_changed_step_names_its_cases_and_markdown_is_a_changelog() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let edit = catalogue().into_iter().find(|e| e.name == "claim-order-changed").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (code, md, _) = evolve(dir.path(), &page, &applied(&edit, &page), "markdown");
    assert_eq!(code, 0, "{md}");
    assert!(md.starts_with("### ✅ FORMAT.md: keeps the promise"), "{md}");
    assert!(md.contains("#### 🔁 Changes a step: run its cases (1)"), "{md}");
    assert!(md.contains("| §2.4.10 What the steps do | programs that write | `statement pick` |"), "{md}");
    assert!(md.contains("`steps/claim-order-priority`"), "the pick's cases: {md}");
    assert!(md.contains("--cases 'steps/claim-order-priority'"), "{md}");
}

#[test]
fn a_path_or_a_page_it_cannot_read_is_a_usage_error() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out =
        Command::new(conformance()).args(["evolve", "/no/such/OLD.md", "/no/such/NEW.md"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/OLD.md"));
    let broken = page.replacen("CREATE TABLE ukue_jobs (", "CREATE TABLE ukue_jobs ((", 1);
    let (code, _, stderr) = evolve(dir.path(), &page, &broken, "human");
    assert_eq!(code, 2);
    assert!(stderr.contains("NEW.md") && stderr.contains("create_jobs"), "{stderr}");
    let no_version = page.replacen("This page is\nversion `1`.", "This page is the first.", 1);
    let (code, _, stderr) = evolve(dir.path(), &no_version, &page, "human");
    assert_eq!(code, 2);
    assert!(stderr.contains("OLD.md") && stderr.contains("§2.1 names no version"), "{stderr}");
    let command = std::fs::read_to_string(repo().join("spec/COMMAND.md")).unwrap();
    let (code, _, stderr) = evolve(dir.path(), &page, &command, "human");
    assert_eq!(code, 2);
    assert!(stderr.contains("a FORMAT.md") && stderr.contains("a COMMAND.md"), "{stderr}");
}

/// An edit of FORMAT.md elsewhere (a paragraph added near the top, which
/// moves every line) leaves each patch applying; an edit of a patch's own
/// lines makes it say which hunk no longer applies.
#[test]
fn patches_apply_after_unrelated_edits_and_say_when_they_do_not() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let moved = page.replacen("## 1. The file\n", "## 1. The file\n\nA paragraph\nof three\nlines.\n", 1);
    assert_ne!(moved, page);
    for edit in catalogue().into_iter().filter(|e| e.page == "FORMAT.md") {
        let edited = apply(&edit, &moved).unwrap_or_else(|e| panic!("after an unrelated edit: {e}"));
        assert!(edited.contains("A paragraph\nof three\nlines."), "{}", edit.name);
    }
    let edit = catalogue().into_iter().find(|e| e.name == "default-changed").unwrap();
    let touched = page.replacen("NOT NULL DEFAULT 10 CHECK", "NOT NULL DEFAULT 20 CHECK", 1);
    let error = apply(&edit, &touched).unwrap_err();
    assert!(error.starts_with("default-changed.patch, hunk 1, no longer applies"), "{error}");
}

/// The script of .github/workflows/format-change.yml's step `name`: the
/// lines of its `run: |` block, unindented.
fn workflow_step(name: &str) -> String {
    let workflow = std::fs::read_to_string(repo().join(".github/workflows/format-change.yml")).unwrap();
    let lines: Vec<&str> = workflow.lines().collect();
    let step = lines.iter().position(|l| l.trim() == format!("- name: {name}")).expect("the step");
    let run = step + lines[step..].iter().position(|l| l.trim() == "run: |").expect("its run block");
    let indent = lines[run + 1].len() - lines[run + 1].trim_start().len();
    lines[run + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The example workflow's script, run as a pull request's job would run
/// it: in a clone whose target branch (`origin/main`) has the page as it
/// is, and whose own page renames a column. It fails the job and leaves the
/// Markdown verdict in the job summary: the text's, and the programs'. The
/// target branch's reference is found built in the clone's cache (the
/// reference of this build), so that the test does not build one.
#[test]
fn the_workflow_puts_the_verdict_in_the_job_summary() {
    if !support::have("git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("clone");
    std::fs::create_dir_all(clone.join("spec")).unwrap();
    std::fs::create_dir_all(clone.join("target/release")).unwrap();
    std::os::unix::fs::symlink(conformance(), clone.join("target/release/ukue-conformance")).unwrap();
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    std::fs::write(clone.join("spec/FORMAT.md"), &page).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(&clone).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "spec/FORMAT.md"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"]);
    git(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&clone).output().unwrap();
    let cached =
        clone.join(format!("target/evolve-base/{}-release", String::from_utf8_lossy(&head.stdout).trim()));
    std::fs::create_dir_all(&cached).unwrap();
    std::fs::copy(support::reference(), cached.join("ukue")).unwrap();
    std::fs::write(cached.join("FORMAT.md"), &page).unwrap();
    let edit = catalogue().into_iter().find(|e| e.name == "column-renamed").unwrap();
    std::fs::write(clone.join("spec/FORMAT.md"), applied(&edit, &page)).unwrap();
    let summary = dir.path().join("summary.md");
    let out = Command::new("bash")
        .args(["-eo", "pipefail", "-c", &workflow_step("Judge the edit of FORMAT.md")])
        .current_dir(&clone)
        .env("BASE", "main")
        .env("RUNNER_TEMP", dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.starts_with("### ❌ FORMAT.md: BREAKS the promise of version 1"), "{summary}");
    assert!(summary.contains("#### ❌ Needs a new version"), "{summary}");
    assert!(
        summary.contains(
            "| §2.4.3 Columns removed, renamed or retyped | every program | `ukue_jobs.last_error` |"
        ),
        "{summary}"
    );
    assert!(summary.contains("### ✅ Old and new programs on one file"), "{summary}");
    assert!(summary.contains("| `old-files`: ") && summary.contains("| `new-files`: "), "{summary}");
}

/// A new program: the reference running `page` whole (ukue-broken with
/// `UKUE_BROKEN_PAGE`), adding the page's columns to older files when
/// `upgrade` says so; a script in `dir`, so that a replay line names it.
fn page_program(dir: &Path, name: &str, page: &str, upgrade: bool) -> PathBuf {
    let page_path = dir.join(format!("{name}.md"));
    std::fs::write(&page_path, page).unwrap();
    program(
        dir,
        name,
        &format!("UKUE_BROKEN_PAGE={} UKUE_BROKEN_UPGRADE={}", page_path.display(), u8::from(upgrade)),
    )
}

/// `env ukue-broken "$@"` as a script named `name` in `dir`.
fn program(dir: &Path, name: &str, env: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{env} exec {} \"$@\"\n", support::broken().display())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `evolve --old-impl old --new-impl new`, with fewer kills than a default
/// run's, as the tests' runs of the crash family are.
fn run_programs(old: &Path, new: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(conformance())
        .args(["evolve", "--old-impl"])
        .arg(old)
        .arg("--new-impl")
        .arg(new)
        .args(["--seed", "33", "--crash-kills", "24"])
        .args(extra)
        .output()
        .expect("ukue-conformance runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The lines of a human report that run a case again.
fn replay_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("to replay"))
        .skip(1)
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Issue 33's "Done when", with the reference running an edited page as
/// the new release: a release whose page adds a column with a default and
/// writes it in `add` shares files both ways with the reference when it
/// adds the column to older files; the same release that forgets older
/// files lack it fails, in the direction of the old program's files, with
/// a replay line that fails again. The text alone finds nothing wrong.
#[test]
fn a_release_that_adds_a_column_must_handle_old_files_and_the_run_says_which_way_it_fails() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let edit = catalogue().into_iter().find(|e| e.name == "column-added-and-used").unwrap();
    let edited = applied(&edit, &page);
    let dir = tempfile::tempdir().unwrap();
    let (code, text, _) = evolve(dir.path(), &page, &edited, "human");
    assert_eq!(code, 0, "the text alone lets it through: {text}");

    let upgrades = page_program(dir.path(), "new-upgrades", &edited, true);
    let (code, stdout, stderr) = run_programs(&support::reference(), &upgrades, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("old-files: 7 passed") && stdout.contains("new-files: 7 passed"), "{stdout}");
    assert!(stdout.contains("share their files both ways"), "{stdout}");

    let forgets = page_program(dir.path(), "new-forgets", &edited, false);
    let (code, stdout, stderr) = run_programs(&support::reference(), &forgets, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("do not share their files: old-files fails"), "{stdout}");
    assert!(stdout.contains("new-files: 7 passed, 0 skipped, 0 failed"), "{stdout}");
    assert!(stdout.contains("has no column named tags"), "the failure says why: {stdout}");
    let replays = replay_lines(&stdout);
    assert!(
        !replays.is_empty()
            && replays
                .iter()
                .all(|l| l.contains(" evolve --old-impl ") && l.contains("--direction old-files --cases '")),
        "{replays:?}"
    );
    let again = Command::new("sh").args(["-c", &replays[0]]).output().unwrap();
    assert_eq!(
        again.status.code(),
        Some(1),
        "the replay fails again: {}",
        String::from_utf8_lossy(&again.stdout)
    );
}

/// A raised version keeps the programs apart: the reference refuses the
/// new release's files, byte for byte, and the release works the old
/// files. An old program that takes any version for 1 fails the new
/// files' direction; a release of version 2 that renames a column but
/// still opens version 1 files (and cannot work them) fails the old ones'.
#[test]
fn a_raised_version_is_refused_by_the_old_program_and_met_by_the_new_one() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let raised = page.replacen("This page is\nversion `1`.", "This page is\nversion `2`.", 1);
    assert_ne!(raised, page, "§2.1's words moved: find the version another way");
    let v2 = page_program(dir.path(), "new-v2", &raised, true);
    let (code, stdout, stderr) = run_programs(&support::reference(), &v2, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("format_version 1") && stdout.contains("format_version 2"), "{stdout}");
    assert!(stdout.contains("works the old program's files") && stdout.contains("kept apart"), "{stdout}");

    let accepts = program(dir.path(), "old-accepts", "UKUE_BROKEN=accepts-version-2");
    let (code, stdout, stderr) = run_programs(&accepts, &v2, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("FAIL evolve/old-refuses-new-file") && stdout.contains("new-files fails"),
        "{stdout}"
    );

    let rename = catalogue().into_iter().find(|e| e.name == "rename-with-version-2").unwrap();
    let renamed = page_program(dir.path(), "new-renamed", &applied(&rename, &page), true);
    let (code, stdout, stderr) = run_programs(&support::reference(), &renamed, &["--direction", "old-files"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    // Its `work` reports each failed claim and goes on, so the case ends
    // at its deadline.
    assert!(stdout.contains("TIMEOUT evolve/new-meets-old-file (must)"), "{stdout}");
    assert!(
        stdout.contains("works the old program's files") && stdout.contains("old-files fails"),
        "{stdout}"
    );
}

/// `--base REV` builds the reference of a revision of this checkout (here
/// HEAD, with the `dev` profile, to be quick) into target/evolve-base/, and
/// runs it as the old program beside the current build, both ways; the
/// page of that revision is the old page.
#[test]
fn base_builds_a_revision_s_reference_and_runs_it_beside_the_current_build() {
    let repo = repo();
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&repo).output();
    let Some(head) = head.ok().filter(|o| o.status.success()) else {
        eprintln!("SKIP: {} is not a git checkout with a HEAD", repo.display());
        return;
    };
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    support::reference();
    let out = Command::new(conformance())
        .args(["evolve", "--base", "HEAD", "--base-profile", "dev", "--cases", "interop/*", "--seed", "7"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let built = repo.join(format!("target/evolve-base/{head}-dev"));
    assert!(built.join("ukue").is_file() && built.join("FORMAT.md").is_file(), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "{}/FORMAT.md → {}",
            built.display(),
            repo.join("spec/FORMAT.md").display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("programs: old {}", built.join("ukue").display())), "{stdout}");
    assert!(stdout.contains("old-files: 2 passed") && stdout.contains("new-files: 2 passed"), "{stdout}");
}
