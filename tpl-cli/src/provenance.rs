//! How an output records how it was made: the version of `tpl`, the warning that a seeded
//! run is reproducible (anyone with the seed can redraw its noise), hence not private, and
//! the warning that the float sampler is not release-grade.

use tpl_mechanisms::SamplerKind;

/// The version of `tpl` that made an output, recorded in releases and comparisons.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

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
