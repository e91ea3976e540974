//! How an output records how it was made: the version of `tpl`, and the warning that a
//! seeded run is reproducible (anyone with the seed can redraw its noise), hence not private.

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
