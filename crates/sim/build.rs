//! Build script of braid-sim: sets `BRAID_BUILD_VERSION` = the crate version plus the git
//! commit the crate is built from (`0.1.0+g0123456789ab`) if git and a repository are at
//! hand, plus a digest of the uncommitted changes to the sources the simulator is built from
//! when there are any (`0.1.0+g0123456789ab.dirty.5e1f0c2a9b3d`); it is part of every run
//! id (`campaign::VERSION`). `BRAID_GIT_COMMIT` set in the environment wins (for builds
//! without a repository, e.g. from a source tarball); without either the version is the
//! crate version alone.

use std::path::{Path, PathBuf};
use std::process::Command;

include!("build/version.rs");

/// What the simulator's results depend on, relative to the repository's root: braid-sim and
/// the crates it is built from, and the locked dependencies.
const SOURCES: [&str; 4] = ["crates/sim", "crates/proto", "crates/wire", "Cargo.lock"];

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rerun-if-env-changed=BRAID_GIT_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(c) = std::env::var("BRAID_GIT_COMMIT") {
        println!(
            "cargo:rustc-env=BRAID_BUILD_VERSION={}",
            build_version(&version, Some(&c), None)
        );
        return;
    }
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        // No repository: the version alone.
        println!(
            "cargo:rustc-env=BRAID_BUILD_VERSION={}",
            build_version(&version, None, None)
        );
        return;
    };
    let root = git(&["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    // Uncommitted edits make their own run ids, so stored runs of the commit are not reused
    // for results of other code. Untracked files are left out (results, scratch files).
    let mut diff = vec!["diff", "HEAD", "--no-ext-diff", "--binary", "--"];
    diff.extend(SOURCES);
    let dirty = root.as_ref().and_then(|r| {
        let out = Command::new("git")
            .current_dir(r)
            .args(&diff)
            .output()
            .ok()?;
        (out.status.success() && !out.stdout.is_empty()).then(|| digest12(&out.stdout))
    });
    println!(
        "cargo:rustc-env=BRAID_BUILD_VERSION={}",
        build_version(&version, Some(&commit), dirty.as_deref())
    );
    // Rerun (a git diff, cheap) when a source changes, so the digest follows the tree.
    if let Some(r) = &root {
        for s in SOURCES {
            watch(&r.join(s));
        }
    }
    // Rebuild when HEAD moves: HEAD itself, the branch it points at, packed refs.
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        let (dir, common) = (PathBuf::from(dir), PathBuf::from(common));
        watch(&dir.join("HEAD"));
        if let Ok(head) = std::fs::read_to_string(dir.join("HEAD"))
            && let Some(r) = head.trim().strip_prefix("ref: ")
        {
            watch(&dir.join(r));
            watch(&common.join(r));
        }
        watch(&common.join("packed-refs"));
    }
}
