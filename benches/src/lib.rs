//! Shared helpers for the criterion benches and the memory probe: inputs of fixed seeds, so
//! that every run measures the same matrices.
//!
//! Randomness comes from a self-written splitmix64 rather than `rand`: the bench inputs must
//! not change when a dependency's generator or its stream does.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, SamplingMode};
use tpl_core::TransitionMatrix;

/// Matrix sizes n of the cold paths and setups.
pub const SIZES: [usize; 4] = [10, 50, 200, 1000];

/// The α at which single evaluations of L are measured.
pub const ALPHA: f64 = 1.0;

/// The constant per-step budget of the series and supremum benches.
pub const EPSILON: f64 = 0.1;

/// Smoothing of the [`Family::SmoothedIdentity`] family (strong correlation, TKDE §6).
pub const SMOOTHING: f64 = 0.01;

/// Seed of the dense family; the matrix for size n uses stream `SEED ^ n`.
pub const SEED: u64 = 0x7470_6c5f_6265_6e63; // "tpl_benc"

/// splitmix64 (Steele, Lea, Flood 2014): 64 bits of state, passes BigCrush, five lines.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in the open interval (0, 1): the top 52 bits plus half an ulp, so neither 0
    /// nor 1 occurs (a 0 entry could make two rows' supports disjoint and L(α) = α).
    pub fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 12) as f64 + 0.5) * (1.0 / (1u64 << 52) as f64)
    }
}

/// Criterion's sampling settings for the benchmarks added to a group next: how iterations are
/// spread over samples, how many samples, and the warm-up and measurement times.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Criterion's sampling mode (`Flat` for iterations of a millisecond or more).
    pub mode: SamplingMode,
    /// Number of samples (criterion's minimum is 10).
    pub samples: usize,
    /// Warm-up time.
    pub warm_up: Duration,
    /// Measurement time (shorter than one sample takes: criterion warns and runs one
    /// iteration per sample, the cheapest setting it allows).
    pub measure: Duration,
}

impl Pace {
    /// `Flat` sampling with `samples` samples, `warm_up_ms` of warm-up and `measure_ms` of
    /// measurement.
    pub const fn flat(samples: usize, warm_up_ms: u64, measure_ms: u64) -> Self {
        Self {
            mode: SamplingMode::Flat,
            samples,
            warm_up: Duration::from_millis(warm_up_ms),
            measure: Duration::from_millis(measure_ms),
        }
    }

    /// `Auto` sampling (criterion picks linear or flat), otherwise as [`Pace::flat`].
    pub const fn auto(samples: usize, warm_up_ms: u64, measure_ms: u64) -> Self {
        Self { mode: SamplingMode::Auto, ..Self::flat(samples, warm_up_ms, measure_ms) }
    }

    /// Applies these settings to `group`.
    pub fn apply(self, group: &mut BenchmarkGroup<'_, WallTime>) {
        group
            .sampling_mode(self.mode)
            .sample_size(self.samples)
            .warm_up_time(self.warm_up)
            .measurement_time(self.measure);
    }
}

/// The matrix families measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Every entry uniform in (0, 1), rows rescaled to sum to 1: weak correlation, many
    /// pairs of comparable strength.
    Dense,
    /// The identity smoothed with [`SMOOTHING`]: strong correlation, every pair of rows
    /// alike up to a permutation.
    SmoothedIdentity,
}

impl Family {
    /// Both families.
    pub const ALL: [Family; 2] = [Family::Dense, Family::SmoothedIdentity];

    /// The name used in benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            Family::Dense => "dense",
            Family::SmoothedIdentity => "smoothed-identity",
        }
    }

    /// Parses [`Family::name`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == s)
    }

    /// The n×n matrix of this family.
    ///
    /// # Panics
    /// For n = 0 (the benches never ask for it).
    pub fn matrix(self, n: usize) -> TransitionMatrix {
        match self {
            Family::Dense => dense(n, SEED ^ n as u64),
            Family::SmoothedIdentity => TransitionMatrix::smoothed_identity(n, SMOOTHING)
                .expect("n >= 1 and a finite positive smoothing are valid"),
        }
    }
}

/// A dense random row-stochastic n×n matrix: entries uniform in (0, 1) from `seed`, rows
/// normalised.
///
/// # Panics
/// For n = 0 (the benches never ask for it).
pub fn dense(n: usize, seed: u64) -> TransitionMatrix {
    let mut rng = SplitMix64::new(seed);
    let rows = (0..n).map(|_| (0..n).map(|_| rng.next_open01()).collect()).collect();
    TransitionMatrix::normalized(rows).expect("n >= 1 rows of positive finite entries normalise")
}

/// Stay probability of the [`grid_walk`] matrices measured for city-sized grids.
pub const GRID_STAY: f64 = 0.6;

/// Laplacian smoothing of the [`grid_walk`] matrices measured for city-sized grids.
pub const GRID_SMOOTHING: f64 = 1e-4;

/// The rows of a random walk on a `side` × `side` grid of cells (n = side², cell r·side + c):
/// a person stays with probability `stay`, and the rest goes in equal parts to the cells
/// north, south, east and west that exist (two or three at the edges). Each row has at most
/// five non-zero entries; smoothing (see [`grid_walk`]) makes it dense.
///
/// # Panics
/// For side = 0 (the benches never ask for it).
pub fn grid_walk_rows(side: usize, stay: f64) -> Vec<Vec<(usize, f64)>> {
    assert!(side > 0, "a grid has at least one cell");
    let n = side * side;
    (0..n)
        .map(|cell| {
            let (r, c) = (cell / side, cell % side);
            let mut near = Vec::with_capacity(4);
            if r > 0 {
                near.push(cell - side);
            }
            if c > 0 {
                near.push(cell - 1);
            }
            if c + 1 < side {
                near.push(cell + 1);
            }
            if r + 1 < side {
                near.push(cell + side);
            }
            let mut row = vec![(cell, if near.is_empty() { 1.0 } else { stay })];
            row.extend(near.iter().map(|&j| (j, (1.0 - stay) / near.len() as f64)));
            row.sort_unstable_by_key(|&(j, _)| j);
            row
        })
        .collect()
}

/// The dense matrix of [`grid_walk_rows`] with Laplacian smoothing s: (p + s)/(1 + n·s)
/// ([`TransitionMatrix::smoothed`]).
///
/// # Panics
/// For side = 0 or a smoothing [`TransitionMatrix::smoothed`] refuses.
pub fn grid_walk(side: usize, stay: f64, smoothing: f64) -> TransitionMatrix {
    let n = side * side;
    let rows = grid_walk_rows(side, stay)
        .into_iter()
        .map(|entries| {
            let mut row = vec![0.0; n];
            entries.into_iter().for_each(|(j, p)| row[j] = p);
            row
        })
        .collect();
    TransitionMatrix::normalized(rows)
        .and_then(|m| m.smoothed(smoothing))
        .expect("grid rows are stochastic and the smoothing valid")
}

/// Peak resident set size of this process so far, in KiB (`VmHWM` of `/proc/self/status`);
/// `None` where that file does not exist (not Linux).
pub fn peak_rss_kib() -> Option<u64> {
    status_field("VmHWM:")
}

/// Current resident set size of this process, in KiB (`VmRSS`).
pub fn rss_kib() -> Option<u64> {
    status_field("VmRSS:")
}

/// Resets the peak RSS to the current RSS (writes `5` to `/proc/self/clear_refs`, Linux ≥
/// 4.0), so that a later [`peak_rss_kib`] measures only what happens after. Returns whether
/// the reset worked.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn status_field(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_and_stays_open() {
        // First output for seed 0 (reference implementation by Vigna).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        let mut rng = SplitMix64::new(1);
        assert!((0..10_000).map(|_| rng.next_open01()).all(|u| u > 0.0 && u < 1.0));
    }

    #[test]
    fn grid_walks_have_five_entries_inside_and_fewer_at_the_edges() {
        let rows = grid_walk_rows(4, GRID_STAY);
        assert_eq!(rows.len(), 16);
        assert_eq!(rows[5].len(), 5, "an inner cell moves to four neighbours");
        assert_eq!(rows[0].len(), 3, "a corner to two");
        assert_eq!(rows[1].len(), 4, "an edge cell to three");
        for row in &rows {
            assert!((row.iter().map(|e| e.1).sum::<f64>() - 1.0).abs() < 1e-12);
        }
        let m = grid_walk(4, GRID_STAY, GRID_SMOOTHING);
        assert_eq!(m.n(), 16);
        assert!(m.row(0).iter().all(|&p| p > 0.0), "smoothing fills every entry");
    }

    #[test]
    fn matrices_are_deterministic_and_stochastic() {
        assert_eq!(Family::Dense.matrix(7), Family::Dense.matrix(7));
        let m = Family::Dense.matrix(7);
        for row in m.rows() {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!(row.iter().all(|&v| v > 0.0));
        }
        assert_eq!(Family::parse("smoothed-identity"), Some(Family::SmoothedIdentity));
    }
}

/// The Rust examples of the repository's README and of each library crate's README,
/// compiled and run as doctests (`cargo test -p tpl-benches --doc`). They live here, in a
/// crate that is never published, because an `include_str!` reaching outside a crate's own
/// folder breaks `cargo package` of that crate.
#[cfg(doctest)]
pub mod readme_doctests {
    #[doc = include_str!("../../README.md")]
    pub struct Repository;
    #[doc = include_str!("../../tpl-core/README.md")]
    pub struct TplCore;
    #[doc = include_str!("../../tpl-alloc/README.md")]
    pub struct TplAlloc;
    #[doc = include_str!("../../tpl-mechanisms/README.md")]
    pub struct TplMechanisms;
    #[doc = include_str!("../../tpl-postprocess/README.md")]
    pub struct TplPostprocess;
    #[doc = include_str!("../../tpl-compare/README.md")]
    pub struct TplCompare;
    #[doc = include_str!("../../tpl-stream/README.md")]
    pub struct TplStream;
}
