//! `evolve --base REV`: the reference of another revision of this
//! repository, as the old program. Its sources come out of git
//! (`git archive`, so that the checkout's worktrees and index are left
//! alone) into a cache directory under the checkout's `target/`, where
//! cargo builds its `ukue`. A revision already built is taken from the
//! cache; the build directory is shared between revisions, so that only
//! the `ukue` crate is built again (cleaned first: cargo would take another
//! revision's build of it for fresh).

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
    let status = Command::new(&cargo)
        .args(["build", "--profile", profile, "--locked", "-p", "ukue", "--bin", "ukue", "--manifest-path"])
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
    // cargo's `dev` profile builds into `debug/`.
    let built = if profile == "dev" { "debug" } else { profile };
    std::fs::copy(target.join(built).join("ukue"), &base.program)
        .with_context(|| format!("the build of {} made no ukue", short(&commit)))?;
    Ok(base)
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
