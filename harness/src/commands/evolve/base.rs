//! `evolve --base REV`: the reference of another revision of this
//! repository, as the old program. Its sources come out of git
//! (`git archive`, so that the checkout's worktrees and index are left
//! alone) into a cache directory under the checkout's `target/`, where
//! cargo builds its `ukue`. A revision already built is taken from the
//! cache; the build directory is shared between revisions, so that only
//! the `ukue` crate is built again (cleaned first: cargo would take another
//! revision's build of it for fresh). The first time, that build directory
//! starts as a copy of the checkout's own build of the profile
//! ([`seed`]): the dependencies are built already, and only `ukue` is.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// The old side that `--base` makes: its FORMAT.md and its `ukue`.
pub struct Base {
    /// The commit REV names.
    pub commit: String,
    pub page: PathBuf,
    pub program: PathBuf,
}

/// The checkout the current directory is in: where the new FORMAT.md is,
/// and whose history REV is looked up in.
pub fn checkout() -> Result<PathBuf> {
    let top = git(Path::new("."), &["rev-parse", "--show-toplevel"])
        .context("--base needs the current directory to be in a checkout of ukue")?;
    Ok(PathBuf::from(top))
}

/// The reference of `rev`, built with cargo's `profile` (or found built)
/// in the cache of `checkout`.
pub fn build(checkout: &Path, rev: &str, profile: &str) -> Result<Base> {
    let commit = git(checkout, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
        .with_context(|| format!("--base {rev}: not a revision of {}", checkout.display()))?;
    let cache = checkout.join("target/evolve-base");
    let dir = cache.join(format!("{commit}-{profile}"));
    let base = Base { commit: commit.clone(), page: dir.join("FORMAT.md"), program: dir.join("ukue") };
    if base.page.is_file() && base.program.is_file() {
        eprintln!("ukue-conformance evolve: the reference of {rev} ({}) is built already", short(&commit));
        return Ok(base);
    }
    let src = dir.join("src");
    if src.exists() {
        std::fs::remove_dir_all(&src).with_context(|| format!("clearing {}", src.display()))?;
    }
    std::fs::create_dir_all(&src).with_context(|| format!("making {}", src.display()))?;
    extract(checkout, &commit, &src)?;
    let target = cache.join("target");
    seed(&checkout.join("target"), &target, profile)?;
    eprintln!(
        "ukue-conformance evolve: building the reference of {rev} ({}) in {}",
        short(&commit),
        dir.display()
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The build directory is shared, and cargo would take the `ukue` it
    // built from another revision's sources for fresh (their files have
    // not changed since): only the dependencies may be kept.
    let cleaned = Command::new(&cargo)
        .args(["clean", "--profile", profile, "-p", "ukue", "--manifest-path"])
        .arg(src.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {} clean", cargo.to_string_lossy()))?;
    if !cleaned.success() {
        bail!("clearing the last build of ukue from {} failed ({cleaned})", target.display());
    }
    // The workspace's default members, as `cargo build` selects them: the
    // dependencies' features are then those of the checkout's own builds,
    // and a seeded build finds them built (`-p ukue` alone leaves out the
    // harness's features of tokio, rusqlite and nix, and builds them again).
    let status = Command::new(&cargo)
        .args(["build", "--profile", profile, "--locked", "--bin", "ukue", "--manifest-path"])
        .arg(src.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("running {}", cargo.to_string_lossy()))?;
    if !status.success() {
        bail!("building the reference of {rev} ({}) failed ({status})", short(&commit));
    }
    let page = src.join("spec/FORMAT.md");
    std::fs::copy(&page, &base.page).with_context(|| format!("{} has no spec/FORMAT.md", short(&commit)))?;
    std::fs::copy(target.join(profile_dir(profile)).join("ukue"), &base.program)
        .with_context(|| format!("the build of {} made no ukue", short(&commit)))?;
    Ok(base)
}

/// The directory of a build directory that cargo's `profile` builds into.
fn profile_dir(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    }
}

/// Starts the shared build directory `target` as a copy of the checkout's
/// own, `built`, for `profile`, when it has none yet: the dependencies, as
/// the checkout's `cargo build` (or its test build, whose dependencies are
/// the same) built them, are then fresh there, and a fresh clone's first
/// `--base` builds the `ukue` crate alone instead of every dependency
/// (minutes of both cores). The libraries are hard links (rustc writes a
/// library anew and renames it into place, so a build never writes through
/// a link); fingerprints, dep-info and build scripts' outputs, which cargo
/// rewrites in place, are copies. Programs are left out. Each copy keeps
/// its time of modification, which cargo compares. Any trouble leaves a
/// build from nothing, not a failure.
fn seed(built: &Path, target: &Path, profile: &str) -> Result<()> {
    let (from, to) = (built.join(profile_dir(profile)), target.join(profile_dir(profile)));
    if to.exists() || !from.join(".fingerprint").is_dir() {
        return Ok(());
    }
    let partial = target.join(format!("{}.seeding", profile_dir(profile)));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).with_context(|| format!("clearing {}", partial.display()))?;
    }
    let copied =
        ["deps", "build", ".fingerprint"].iter().try_for_each(|d| seed_dir(&from.join(d), &partial.join(d)));
    match copied.and_then(|()| std::fs::rename(&partial, &to).map_err(Into::into)) {
        Ok(()) => {
            eprintln!("ukue-conformance evolve: {} starts from the build in {}", to.display(), from.display())
        }
        Err(e) => {
            eprintln!(
                "ukue-conformance evolve: building every dependency ({} could not be copied: {e:#})",
                from.display()
            );
            let _ = std::fs::remove_dir_all(&partial);
        }
    }
    Ok(())
}

fn seed_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("making {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let (source, dest) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() {
            seed_dir(&source, &dest)?;
        } else if from.file_name().is_some_and(|d| d == "deps") {
            let library = name.starts_with("lib")
                && [".rlib", ".rmeta", ".so", ".dylib"].iter().any(|ext| name.ends_with(ext));
            if library {
                if std::fs::hard_link(&source, &dest).is_err() {
                    copy_keeping_time(&source, &dest)?;
                }
            } else if name.ends_with(".d") {
                copy_keeping_time(&source, &dest)?;
            }
        } else if kind.is_file() {
            copy_keeping_time(&source, &dest)?;
        }
    }
    Ok(())
}

fn copy_keeping_time(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    let modified = std::fs::metadata(from)?.modified()?;
    std::fs::File::options().write(true).open(to)?.set_modified(modified)?;
    Ok(())
}

/// `git archive COMMIT | tar -x -C dest`.
fn extract(checkout: &Path, commit: &str, dest: &Path) -> Result<()> {
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(checkout)
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .spawn()
        .context("running git archive")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(archive.stdout.take().context("git archive's output")?)
        .status()
        .context("running tar")?;
    let archived = archive.wait().context("waiting for git archive")?;
    if !archived.success() || !tar.success() {
        bail!(
            "extracting {} into {} failed (git archive {archived}, tar {tar})",
            short(commit),
            dest.display()
        );
    }
    Ok(())
}

/// The trimmed output of `git -C dir args`, or an error with git's message.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().context("running git")?;
    if !out.status.success() {
        bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
