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
    Edit { name, exit, finds: header("finds"), hunks }
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
                "{}.patch, hunk {}, no longer applies to spec/FORMAT.md: its lines are found {} times, not once \
                 (make it again against the page as it is now):\n{}",
                edit.name,
                i + 1,
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
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let edits = catalogue();
    assert!(edits.len() >= 20, "the catalogue holds {} edits", edits.len());
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for edit in &edits {
        let edited = applied(edit, &page);
        let (code, stdout, stderr) = evolve(dir.path(), &page, &edited, "json");
        let json: serde_json::Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{}: {e}: {stdout}{stderr}", edit.name));
        let found: Vec<String> = json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                format!(
                    "{} {} {}",
                    d["verdict"].as_str().unwrap(),
                    d["rule"].as_str().unwrap(),
                    d["subject"].as_str().unwrap()
                )
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
fn a_changed_step_names_its_cases_and_markdown_is_a_table() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let edit = catalogue().into_iter().find(|e| e.name == "claim-order-changed").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (code, md, _) = evolve(dir.path(), &page, &applied(&edit, &page), "markdown");
    assert_eq!(code, 0, "{md}");
    assert!(md.starts_with("### ✅ FORMAT.md: keeps the promise"), "{md}");
    assert!(md.contains("| changes a step: run it | §2.4.10 What the steps do | `statement pick` |"), "{md}");
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
}

/// An edit of FORMAT.md elsewhere (a paragraph added near the top, which
/// moves every line) leaves each patch applying; an edit of a patch's own
/// lines makes it say which hunk no longer applies.
#[test]
fn patches_apply_after_unrelated_edits_and_say_when_they_do_not() {
    let page = std::fs::read_to_string(repo().join("spec/FORMAT.md")).unwrap();
    let moved = page.replacen("## 1. The file\n", "## 1. The file\n\nA paragraph\nof three\nlines.\n", 1);
    assert_ne!(moved, page);
    for edit in catalogue() {
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
/// Markdown verdict in the job summary.
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
    assert!(
        summary.contains("| needs a new version | §2.4.3 Columns removed, renamed or retyped |"),
        "{summary}"
    );
}
