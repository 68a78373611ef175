//! The cases `ukue-conformance evolve` runs with an old and a new program
//! on one file (FORMAT.md §2.4), in two directions: the old program's
//! files with the new one beside it (the run's subject is the old one, its
//! reference the new), and the new program's files with the old one beside
//! it (the other way round). The subject makes each file.
//!
//! Within one version they are the families where two implementations
//! share a file ([`mixed`]). When the new program writes a higher
//! `format_version`, the old one must refuse its files instead, and the new
//! one must either work the old files or refuse them as well: both are
//! what a new version's page may say. These cases are not in
//! [`crate::cases::all`]: against programs of one version they test
//! nothing.

use std::path::{Path, PathBuf};

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::{Failure, Subject};

use super::interop::{hand_off, Producer};
use super::refusal::{expect_refused, init_add, non_creating};

/// The cases of the default run where the subject and the reference add
/// and work on one file.
const MIXED: &[&str] = &[
    "interop/reference-adds-subject-works",
    "interop/subject-adds-reference-works",
    "concurrency/",
    "crash/",
];

/// The cases of [`crate::cases::all`] that mix two implementations on one file.
pub fn mixed() -> Vec<Case> {
    crate::cases::all().into_iter().filter(|c| MIXED.iter().any(|m| c.id.starts_with(m))).collect()
}

/// What both cases need: the other program, as the run's reference.
const TWO_PROGRAMS: Needs =
    Needs { reference: true, python: false, strace: false, serve: false, slow: false, generated: false };

/// Run with the new program as the subject, when it writes a higher version.
pub const OLD_REFUSES_NEW_FILE: Case = Case {
    id: "evolve/old-refuses-new-file",
    rule: "2.3",
    summary: "the old program refuses a file the new one made (a higher format_version) with every command, \
              leaving it byte for byte",
    needs: TWO_PROGRAMS,
    level: Level::Must,
    run: old_refuses_new_file,
};

/// Run with the old program as the subject, when the new one writes a higher version.
pub const NEW_MEETS_OLD_FILE: Case = Case {
    id: "evolve/new-meets-old-file",
    rule: "2.4",
    summary:
        "the new program (a higher format_version) either works a file the old one made, each job once, \
              or refuses it with every command, leaving it byte for byte",
    needs: TWO_PROGRAMS,
    level: Level::Must,
    run: new_meets_old_file,
};

/// The file and the files beside it that SQLite may have left, with their
/// bytes.
fn placed(file: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, Failure> {
    let mut placed = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let path = PathBuf::from(format!("{}{suffix}", file.display()));
        if path.exists() {
            let bytes = std::fs::read(&path)?;
            placed.push((path, bytes));
        }
    }
    Ok(placed)
}

/// `who` refuses `file` with every command, each leaving it as `placed`
/// holds it.
fn refuses_everything(ctx: &Ctx, who: &Subject, file: &Path, placed: &[(PathBuf, Vec<u8>)]) -> CaseResult {
    let originals: Vec<(PathBuf, &[u8])> = placed.iter().map(|(p, b)| (p.clone(), b.as_slice())).collect();
    for args in non_creating(ctx, file).into_iter().chain(init_add(file)) {
        expect_refused(ctx, who, &args, file, Some(&originals), None)?;
    }
    Ok(())
}

fn old_refuses_new_file(ctx: &mut Ctx) -> CaseResult {
    let (new, old) = (ctx.subject().clone(), ctx.reference().clone());
    // Not tracked: the run's checks of a file are version 1's.
    let file = ctx.path("new.ukue");
    ctx.ok(&new, &["init", path_str(&file)])?;
    for payload in ["one", "two", "three"] {
        ctx.add(&new, &file, "q", payload, &[])?;
    }
    let placed = placed(&file)?;
    refuses_everything(ctx, &old, &file, &placed)
}

fn new_meets_old_file(ctx: &mut Ctx) -> CaseResult {
    let (old, new) = (ctx.subject().clone(), ctx.reference().clone());
    let probe = ctx.tracked_file("old.ukue");
    ctx.ok(&old, &["init", path_str(&probe)])?;
    ctx.add(&old, &probe, "q", "one", &[])?;
    let before = placed(&probe)?;
    let stats = ctx.run(&new, &["stats", path_str(&probe)])?;
    if stats.status.success() {
        ctx.notes.push(format!("{} works the old program's files", new.name));
        // It takes old files: it must work them, each job once.
        return hand_off(ctx, &old, Producer::Program(old.clone()), &new);
    }
    ctx.notes.push(format!("{} refuses the old program's files", new.name));
    refuses_everything(ctx, &new, &probe, &before)
}
