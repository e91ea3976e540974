//! How an output records how it was made: the version of `tpl`, the warning that a seeded
//! run is reproducible (anyone with the seed can redraw its noise), hence not private, and
//! the warning that the float sampler is not release-grade.

use serde::Serialize;
use serde_json::Value;
use tpl_mechanisms::SamplerKind;
use tpl_report::output::Build;

/// The version of `tpl` that made an output, recorded in releases and comparisons.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from (`build.rs`: `TPL_BUILD_COMMIT`, the packaged
/// crate's `.cargo_vcs_info.json`, or `git rev-parse HEAD`); `None` when none of them knew
/// (an empty `TPL_BUILD_COMMIT` in the builder's environment says nothing either).
pub const COMMIT: Option<&str> = match option_env!("TPL_BUILD_COMMIT") {
    Some(commit) if !commit.is_empty() => Some(commit),
    _ => None,
};

/// `rustc --version` of the compiler that built the binary, when `build.rs` could ask it.
const RUSTC: Option<&str> = option_env!("TPL_BUILD_RUSTC");

/// The cargo features the libraries inside this binary were compiled with, as
/// `crate/feature` (each crate's `FEATURES`).
pub fn features() -> Vec<String> {
    let crates: [(&str, &[&str]); 6] = [
        ("tpl-core", tpl_core::FEATURES),
        ("tpl-alloc", tpl_alloc::FEATURES),
        ("tpl-mechanisms", tpl_mechanisms::FEATURES),
        ("tpl-postprocess", tpl_postprocess::FEATURES),
        ("tpl-compare", tpl_compare::FEATURES),
        ("tpl-stream", tpl_stream::FEATURES),
    ];
    crates.iter().flat_map(|(name, features)| features.iter().map(move |f| format!("{name}/{f}"))).collect()
}

/// Whether the binary was compiled with optimisations off (a debug build): timings from
/// it mean nothing.
const DEBUG_BUILD: bool = cfg!(debug_assertions);

/// How this binary was built: the `build` object of the JSON outputs that record it.
pub fn build() -> Build {
    Build { version: VERSION, commit: COMMIT, features: features(), rustc: RUSTC, debug_build: DEBUG_BUILD }
}

/// The JSON object of `output` followed by the `version` and `build` of this binary (the
/// outputs that record how they were made: releases, comparisons, stream exports).
pub fn with_build<T: Serialize>(output: &T) -> Value {
    #[derive(Serialize)]
    struct WithBuild<'a, T> {
        #[serde(flatten)]
        output: &'a T,
        version: &'static str,
        build: Build,
    }
    crate::render::json_of(&WithBuild { output, version: VERSION, build: build() })
}

/// One line for a report's provenance and `tpl -V`: the version and the commit.
pub fn version_line() -> String {
    match COMMIT {
        Some(commit) => format!("{VERSION} (commit {})", short(commit)),
        None => format!("{VERSION} (commit unknown)"),
    }
}

/// The text of `tpl --version`: the version, then one line each for the commit, the
/// features, the compiler and the kind of build, as a bug report needs them.
pub fn long_version() -> String {
    let features = features();
    format!(
        "{VERSION}\ncommit:   {}\nfeatures: {}\nrustc:    {}\nbuild:    {}",
        COMMIT.unwrap_or("unknown (built outside a git checkout; set TPL_BUILD_COMMIT when packaging)"),
        if features.is_empty() { "none".to_string() } else { features.join(", ") },
        RUSTC.unwrap_or("unknown"),
        if DEBUG_BUILD { "debug (unoptimised: do not time it)" } else { "release" },
    )
}

/// The first 12 characters of a commit id (all of it when shorter).
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The command line of this process as a shell would take it back: `tpl` and its
/// arguments, each quoted in single quotes unless it is made of characters a shell leaves
/// alone (for the provenance of a report).
pub fn command_line() -> String {
    let args = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned());
    std::iter::once("tpl".to_string()).chain(args.map(|a| shell_quoted(&a))).collect::<Vec<_>>().join(" ")
}

/// `word` as a shell reads it back: itself when it is made of letters, digits and
/// `-_./,:=+@%`, else in single quotes (a quote inside written `'\''`).
fn shell_quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./,:=+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Tells stderr that `--seed` made `what` (e.g. "this release") reproducible, hence NOT
/// private; nothing when no seed was given. Said once the output exists, so that an error
/// stays one line.
pub fn note_seeded(seed: Option<u64>, what: &str) {
    if let Some(seed) = seed {
        eprintln!("tpl: note: --seed {seed} makes {what} reproducible, hence NOT private");
    }
}

/// Tells stderr, once per process, that releases drawn with `sampler` are NOT release-grade
/// when it is the float sampler ([`docs/cli.md`](tpl_core::guide::cli) §1.1); nothing for the
/// discrete sampler. Said once the releases exist, so that an error stays one line.
pub fn warn_float_sampler(sampler: SamplerKind) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if sampler == SamplerKind::Float {
        ONCE.call_once(|| {
            eprintln!(
                "tpl: warning: --sampler float is NOT release-grade: the low-order bits of float Laplace noise can \
                 reveal the counts; release with the default discrete sampler"
            );
        });
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quoted;

    #[test]
    fn words_are_quoted_only_when_a_shell_would_change_them() {
        assert_eq!(shell_quoted("--counts"), "--counts");
        assert_eq!(shell_quoted("data/c.csv"), "data/c.csv");
        assert_eq!(shell_quoted("a b"), "'a b'");
        assert_eq!(shell_quoted(""), "''");
        assert_eq!(shell_quoted("it's"), "'it'\\''s'");
        assert_eq!(shell_quoted("$HOME"), "'$HOME'");
    }
}
