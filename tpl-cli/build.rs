//! Records how the binary is built, for `tpl --version` and the `build` object of every JSON
//! output's provenance: the commit it was built from and the compiler.
//!
//! The commit is, in this order: `TPL_BUILD_COMMIT` (for a packager building from a source
//! archive), the `sha1` cargo wrote into `.cargo_vcs_info.json` when it packaged the crate (a
//! `cargo install tpl-cli`), or `git rev-parse HEAD` in a git checkout. Outside all three the
//! binary says it does not know.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TPL_BUILD_COMMIT");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = std::env::var("TPL_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.trim().to_string())
        .or_else(|| packaged_commit(&dir))
        .or_else(|| git_commit(&dir));
    if let Some(commit) = commit {
        println!("cargo:rustc-env=TPL_BUILD_COMMIT={commit}");
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    if let Some(version) = output(Command::new(rustc).arg("--version")) {
        println!("cargo:rustc-env=TPL_BUILD_RUSTC={version}");
    }
}

/// The commit cargo recorded when it packaged this crate (`"sha1": "…"` in
/// `.cargo_vcs_info.json`), read without a JSON parser: the file is cargo's, one field.
fn packaged_commit(dir: &Path) -> Option<String> {
    let path = dir.join(".cargo_vcs_info.json");
    // Watched only when present: cargo takes a missing watched file for a changed one and
    // would rerun this script, and rebuild the binary, on every build.
    let text = std::fs::read_to_string(&path).ok()?;
    println!("cargo:rerun-if-changed={}", path.display());
    let rest = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = rest.find('"')? + 1;
    let sha: String = rest[start..].chars().take_while(char::is_ascii_hexdigit).collect();
    (sha.len() >= 7).then_some(sha)
}

/// `git rev-parse HEAD` when the crate's folder is in this workspace's own checkout (not a
/// source archive unpacked inside some other repository), and the files that move when HEAD
/// does (so that a new commit, checkout or reset rebuilds the version text).
fn git_commit(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| output(Command::new("git").current_dir(dir).args(args));
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    let workspace = dir.parent()?;
    if top.canonicalize().ok()? != workspace.canonicalize().ok()? {
        return None;
    }
    let commit = git(&["rev-parse", "HEAD"])?;
    let mut watched = vec!["HEAD".to_string(), "logs/HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = if Path::new(&path).is_absolute() { PathBuf::from(path) } else { dir.join(path) };
            // Only files that exist: a missing one would rerun this script on every build.
            if path.is_file() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some(commit)
}

/// The first line of a command's standard output when it succeeds.
fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.lines().next()?.trim().to_string()).filter(|l| !l.is_empty())
}
