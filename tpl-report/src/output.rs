//! The JSON objects of `tpl loss`, `supremum`, `leakage`, `allocate`, `release` (and `stream
//! push`/`export`), `postprocess`, `estimate` and `stream status` (docs/cli.md §2), as
//! `Serialize` types: the one definition of each output's fields, which the command line
//! prints and the Python package returns. Serialised with `serde_json::to_writer` they are
//! written number by number (a series of 10⁷ steps is never built as a JSON value), with a
//! progress hook called before each number.

use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use tpl_alloc::Allocation;
use tpl_core::{CompactSeries, Supremum};

use crate::text::human;

/// A progress hook: called with the number of per-step values written so far.
pub type Tick<'a> = &'a dyn Fn(usize);

/// The hook that does nothing.
pub const NO_TICK: Tick<'static> = &|_| {};

/// `value(0)`, …, `value(len − 1)` as a sequence, `tick(offset + t)` before each.
struct Numbers<'a, F> {
    len: usize,
    value: F,
    tick: Tick<'a>,
    offset: usize,
}

impl<F: Fn(usize) -> f64> Numbers<'static, F> {
    /// `value(0..len)` without progress.
    fn of(len: usize, value: F) -> Self {
        Self { len, value, tick: NO_TICK, offset: 0 }
    }
}

impl<F: Fn(usize) -> f64> Serialize for Numbers<'_, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((0..self.len).map(|t| {
            (self.tick)(self.offset + t);
            (self.value)(t)
        }))
    }
}

/// The steps 1..=len.
struct StepNumbers(usize);

impl Serialize for StepNumbers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(1..=self.0)
    }
}

/// The leakage of every window of `window` consecutive steps (TKDE Theorem 3), computed as
/// it is written, `tick(4·T + k)` before the k-th.
struct WindowNumbers<'a> {
    series: &'a CompactSeries,
    window: usize,
    tick: Tick<'a>,
}

impl Serialize for WindowNumbers<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let n = self.series.len();
        let values = self.series.window_leakage(self.window).map_err(S::Error::custom)?;
        let mut seq = serializer.serialize_seq(Some((n + 1).saturating_sub(self.window)))?;
        for (k, v) in values.enumerate() {
            (self.tick)(4 * n + k);
            seq.serialize_element(&v.map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// Writes the four per-step arrays of a series — `epsilon` (or `budgets`), `bpl`, `fpl`,
/// `tpl` — into `map`, ticking `4·T` values in all.
fn series_arrays<M: SerializeMap>(
    map: &mut M,
    budgets: &str,
    s: &CompactSeries,
    tick: Tick<'_>,
) -> Result<(), M::Error> {
    let n = s.len();
    let arrays: [(&str, &dyn Fn(usize) -> f64); 4] = [
        (budgets, &|t| s.budgets().get(t)),
        ("bpl", &|t| s.bpl()[t]),
        ("fpl", &|t| s.fpl()[t]),
        ("tpl", &|t| s.tpl_at(t)),
    ];
    for (i, (key, value)) in arrays.into_iter().enumerate() {
        map.serialize_entry(key, &Numbers { len: n, value, tick, offset: i * n })?;
    }
    Ok(())
}

/// The JSON of `tpl loss`: `{"alpha": [...], "loss": [...]}`, L(α) at each α (TKDE eq. 24).
#[derive(Debug, serde::Serialize)]
pub struct LossOutput<'a> {
    /// The α given.
    pub alpha: &'a [f64],
    /// L(α) at each.
    pub loss: &'a [f64],
}

/// The JSON of `tpl supremum`: `{"epsilon", "bounded", "supremum"}` (null when unbounded;
/// TKDE Theorem 11).
#[derive(Debug)]
pub struct SupremumOutput {
    /// The constant budget.
    pub epsilon: f64,
    /// The limit of BPL under it.
    pub supremum: Supremum,
}

impl Serialize for SupremumOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = self.supremum.value();
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("epsilon", &self.epsilon)?;
        map.serialize_entry("bounded", &value.is_some())?;
        map.serialize_entry("supremum", &value)?;
        map.end()
    }
}

/// The JSON of `tpl leakage`: `t`, `epsilon`, `bpl`, `fpl`, `tpl` (one number a step),
/// `max_tpl`, and with a window `window`, `window_leakage` (one number a window, TKDE
/// Theorem 3) and `max_window_leakage`.
pub struct LeakageOutput<'a> {
    /// The series.
    pub series: &'a CompactSeries,
    /// The window W and the largest leakage of W consecutive steps, when asked for.
    pub window: Option<(usize, f64)>,
    /// Called before each per-step number (5·T of them with a window, 4·T without).
    pub tick: Tick<'a>,
}

impl Serialize for LeakageOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.series;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("t", &StepNumbers(s.len()))?;
        series_arrays(&mut map, "epsilon", s, self.tick)?;
        map.serialize_entry("max_tpl", &s.max_tpl())?;
        if let Some((w, max)) = self.window {
            map.serialize_entry("window", &w)?;
            map.serialize_entry("window_leakage", &WindowNumbers { series: s, window: w, tick: self.tick })?;
            map.serialize_entry("max_window_leakage", &max)?;
        }
        map.end()
    }
}

/// The JSON of `tpl allocate` and the dict of Python's `allocate`: `strategy`, `alpha`, the
/// per-step `budgets`, `bpl`, `fpl`, `tpl`, then `max_tpl`, `sup_backward`, `sup_forward`
/// (null when unbounded), with a window `window` and `max_window_leakage`, the `guarantee`
/// (`quantity`, `bound`, `holds`), `steady_budget`, `limited_by` (the [`tpl_alloc::Cap`]
/// or null) and, when capped, a `note` saying why α is not reached.
pub struct AllocationOutput<'a> {
    /// The target α.
    pub alpha: f64,
    /// The allocation and its audit.
    pub allocation: &'a Allocation,
    /// The window W and the largest leakage of W consecutive steps, when asked for.
    pub window: Option<(usize, f64)>,
    /// Whether the per-step arrays are written (Python takes them as arrays, not JSON).
    pub arrays: bool,
    /// Called before each per-step number (4·T of them).
    pub tick: Tick<'a>,
}

impl Serialize for AllocationOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = self.allocation;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("strategy", a.strategy)?;
        map.serialize_entry("alpha", &self.alpha)?;
        if self.arrays {
            series_arrays(&mut map, "budgets", &a.audit.series, self.tick)?;
        }
        map.serialize_entry("max_tpl", &a.max_tpl())?;
        map.serialize_entry("sup_backward", &a.sup_backward.value())?;
        map.serialize_entry("sup_forward", &a.sup_forward.value())?;
        if let Some((w, m)) = self.window {
            map.serialize_entry("window", &w)?;
            map.serialize_entry("max_window_leakage", &m)?;
        }
        map.serialize_entry(
            "guarantee",
            &Guarantee {
                quantity: a.guarantee.quantity.name(),
                bound: a.guarantee.bound,
                holds: a.guarantee.holds(&a.audit),
            },
        )?;
        map.serialize_entry("steady_budget", &a.steady_budget)?;
        map.serialize_entry("limited_by", &a.limited_by)?;
        if let Some(cap) = &a.limited_by {
            map.serialize_entry("note", &cap_note(cap, self.alpha, a.max_tpl()))?;
        }
        map.end()
    }
}

/// The promise an allocation makes and whether its audit keeps it.
#[derive(serde::Serialize)]
struct Guarantee {
    quantity: &'static str,
    bound: f64,
    holds: bool,
}

/// The sentence explaining a capped budget: why it is below what α calls for, and that α
/// is not reached.
pub fn cap_note(cap: &tpl_alloc::Cap, alpha: f64, max_tpl: f64) -> String {
    format!(
        "ε is capped at {} = log(1/{}): above it the {} leakage grows without bound (Theorem 11); \
         the target α = {} is not reached: max TPL {}",
        human(cap.epsilon),
        human(cap.q),
        cap.side,
        human(alpha),
        human(max_tpl),
    )
}

/// How a binary was built: the `build` object of the JSON outputs that record how they were
/// made (docs/cli.md §1.6): the version, the commit (null when unknown), the cargo features of
/// the libraries inside it, the compiler, and whether it is a debug build.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Build {
    /// The version of `tpl`.
    pub version: &'static str,
    /// The commit it was built from, when known.
    pub commit: Option<&'static str>,
    /// The features, as `crate/feature`.
    pub features: Vec<String>,
    /// `rustc --version`, when known.
    pub rustc: Option<&'static str>,
    /// Whether optimisations were off.
    pub debug_build: bool,
}

/// A correlation matrix a release was given (the pba scheme's pool depends on it): its size
/// and, for a file, its name and how it was read.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MatrixUsed {
    /// The file's name (`(stored in the stream)` for a stream's; `None` for an array).
    pub file: Option<String>,
    /// Its number of states.
    pub n: usize,
    /// Whether its rows were rescaled to sum to 1.
    pub normalize: bool,
    /// The Laplacian smoothing applied to it, if any.
    pub smoothing: Option<f64>,
}

/// The JSON of `tpl release` (and the steps of `tpl stream push` and `export`, with the
/// stream's fields beside) and the fields of Python's `release`: how the release was made
/// (`scheme`, `epsilon`, `window`, `sensitivity`, `sampler`, `seeded`, the `version` of
/// `tpl` and, from a binary, its `build`), `t` when given, then
/// per step `published`, `budget` (test + publication), `test_budget`, `publication_budget`
/// (0 at a repeat) and the raw `releases`, `max_window_budget`, the `backward` and `forward`
/// matrices used ([`MatrixUsed`] or null) and, with intervals, `interval` and the per-cell
/// `lower` and `upper` ends (docs/intervals.md).
pub struct ReleaseOutput<'a> {
    /// The scheme's name.
    pub scheme: &'a str,
    /// ε of every window (of every step for `laplace`).
    pub epsilon: f64,
    /// w.
    pub window: usize,
    /// Δ.
    pub sensitivity: f64,
    /// The noise sampler.
    pub sampler: tpl_mechanisms::SamplerKind,
    /// Whether the noise was seeded (reproducible, hence not private).
    pub seeded: bool,
    /// How the binary that made it was built (`None` from Python).
    pub build: Option<&'a Build>,
    /// The step numbers, when the output names them.
    pub t: Option<&'a [usize]>,
    /// The releases.
    pub run: &'a tpl_mechanisms::Run,
    /// The backward matrix used.
    pub backward: Option<&'a MatrixUsed>,
    /// The forward matrix used.
    pub forward: Option<&'a MatrixUsed>,
    /// The releases' intervals, when asked for.
    pub intervals: Option<&'a tpl_mechanisms::Intervals>,
    /// Whether the per-step arrays are written (Python takes them as arrays, not JSON).
    pub arrays: bool,
}

impl Serialize for ReleaseOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.run;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("scheme", self.scheme)?;
        map.serialize_entry("epsilon", &self.epsilon)?;
        map.serialize_entry("window", &self.window)?;
        map.serialize_entry("sensitivity", &self.sensitivity)?;
        map.serialize_entry("sampler", self.sampler.name())?;
        map.serialize_entry("seeded", &self.seeded)?;
        map.serialize_entry("version", crate::VERSION)?;
        if let Some(build) = self.build {
            map.serialize_entry("build", build)?;
        }
        if let Some(t) = self.t {
            map.serialize_entry("t", t)?;
        }
        if self.arrays {
            let n = r.published.len();
            map.serialize_entry("published", &r.published)?;
            let spent = &r.spent;
            map.serialize_entry("budget", &Numbers::of(n, |t| spent[t].total()))?;
            map.serialize_entry("test_budget", &Numbers::of(n, |t| spent[t].test))?;
            let publication = Numbers::of(n, |t| if r.published[t] { spent[t].publication } else { 0.0 });
            map.serialize_entry("publication_budget", &publication)?;
            map.serialize_entry("releases", &r.releases)?;
        }
        map.serialize_entry("max_window_budget", &r.max_window_budget)?;
        map.serialize_entry("backward", &self.backward)?;
        map.serialize_entry("forward", &self.forward)?;
        if let Some(i) = self.intervals {
            map.serialize_entry("interval", &i.level)?;
            if self.arrays {
                map.serialize_entry("lower", &i.lower)?;
                map.serialize_entry("upper", &i.upper)?;
            }
        }
        map.end()
    }
}

/// The JSON of `tpl postprocess` (and of `tpl stream export --estimates`/`--smoothed`) and
/// the fields of Python's `postprocess`: the `estimator`, `t` when given, the `estimates`
/// (T × n; integers for `map-integer`), `estimator_default` and `causal` when it is said
/// whether the estimator was the default (not for a stream's stored estimates), and with
/// intervals `interval`, the per-cell `lower`
/// and `upper` ends and the `interval_method` (docs/intervals.md).
pub struct EstimatesOutput<'a> {
    /// The estimates.
    pub estimates: &'a tpl_postprocess::Estimates,
    /// The step numbers, when the output names them.
    pub t: Option<&'a [usize]>,
    /// Whether the estimator was the default rather than named (`None`: not said).
    pub by_default: Option<bool>,
    /// The intervals and how they were made (`model` or `bootstrap`), when asked for.
    pub intervals: Option<(&'a tpl_mechanisms::Intervals, &'a str)>,
    /// Whether the T × n arrays are written (Python takes them as arrays, not JSON).
    pub arrays: bool,
}

impl Serialize for EstimatesOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let e = self.estimates;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("estimator", e.estimator.name())?;
        if let Some(t) = self.t {
            map.serialize_entry("t", t)?;
        }
        if self.arrays {
            match e.integers() {
                Some(ints) => map.serialize_entry("estimates", &ints)?,
                None => map.serialize_entry("estimates", &e.estimates)?,
            }
        }
        if let Some(by_default) = self.by_default {
            map.serialize_entry("estimator_default", &by_default)?;
            map.serialize_entry("causal", &e.estimator.is_filter())?;
        }
        if let Some((i, method)) = self.intervals {
            map.serialize_entry("interval", &i.level)?;
            if self.arrays {
                map.serialize_entry("lower", &i.lower)?;
                map.serialize_entry("upper", &i.upper)?;
            }
            map.serialize_entry("interval_method", method)?;
        }
        map.end()
    }
}

/// The fields `tpl estimate` and Python's `estimate` share: `users`, `horizon` (the steps
/// estimated from), `cells`, `cell_ids`, `transitions` (moves counted), `smoothing`,
/// `forward_identity_rows` and `backward_identity_rows` (rows without a move, set to the
/// identity) and `steps` (`[first, last]`, from 1).
pub struct EstimationOutput<'a> {
    /// The people.
    pub users: usize,
    /// The steps estimated from.
    pub steps: tpl_core::Steps,
    /// The original cell id of each row.
    pub cell_ids: &'a [u64],
    /// The moves counted.
    pub counts: &'a tpl_core::TransitionCounts,
    /// P_F and its rows without a move.
    pub forward: &'a tpl_core::EstimatedMatrix,
    /// P_B and its rows without a move.
    pub backward: &'a tpl_core::EstimatedMatrix,
    /// The Laplacian smoothing applied, if any.
    pub smoothing: Option<f64>,
}

impl Serialize for EstimationOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("users", &self.users)?;
        map.serialize_entry("horizon", &self.steps.len())?;
        map.serialize_entry("cells", &self.counts.n())?;
        map.serialize_entry("cell_ids", self.cell_ids)?;
        map.serialize_entry("transitions", &self.counts.total())?;
        map.serialize_entry("smoothing", &self.smoothing)?;
        map.serialize_entry("forward_identity_rows", &self.forward.empty_rows)?;
        map.serialize_entry("backward_identity_rows", &self.backward.empty_rows)?;
        map.serialize_entry("steps", &[self.steps.first(), self.steps.last()])?;
        map.end()
    }
}

/// The JSON of `tpl stream status` and the dict of Python's `Stream.status`: `steps`, the
/// parameters (`scheme`, `epsilon`, `window`, `sensitivity`, `sampler`, `alpha`), the
/// per-step `budgets` and `published`, the `refused` steps, `last_key`,
/// `max_window_spend`, `leakage` (`realized` and `guaranteed`, each `{"max_tpl",
/// "max_window_leakage"}` or null without matrices; docs/model.md §9), `format_version`,
/// `chain_head`, and the stored estimates' `estimator` and `total` (null without).
pub struct StatusOutput<'a> {
    /// Where the stream stands.
    pub status: &'a tpl_stream::Status,
    /// The guaranteed (max TPL, largest window leakage) over every run the scheme could have
    /// produced, with matrices.
    pub guaranteed: Option<(f64, f64)>,
    /// Whether the per-step arrays are written (Python takes them as arrays, not JSON).
    pub arrays: bool,
}

/// The guaranteed (max TPL, largest window leakage) of a stream with matrices and steps, over
/// every run its scheme could have produced ([`tpl_stream::Status::guaranteed`]; the window's
/// is the max TPL when the scheme has no window bound of its own).
///
/// # Errors
/// The audit's, as [`tpl_stream::Status::guaranteed`].
pub fn guaranteed_pair(status: &tpl_stream::Status) -> tpl_stream::Result<Option<(f64, f64)>> {
    Ok(status.guaranteed()?.map(|g| (g.max_tpl, g.max_window_leakage.unwrap_or(g.max_tpl))))
}

impl Serialize for StatusOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Leakage {
            max_tpl: f64,
            max_window_leakage: f64,
        }
        #[derive(serde::Serialize)]
        struct Both {
            realized: Option<Leakage>,
            guaranteed: Option<Leakage>,
        }
        let pair = |p: Option<(f64, f64)>| {
            p.map(|(max_tpl, max_window_leakage)| Leakage { max_tpl, max_window_leakage })
        };
        let s = self.status;
        let c = &s.config;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("steps", &s.budgets.len())?;
        map.serialize_entry("scheme", c.scheme.name())?;
        map.serialize_entry("epsilon", &c.epsilon)?;
        map.serialize_entry("window", &c.window)?;
        map.serialize_entry("sensitivity", &c.sensitivity)?;
        map.serialize_entry("sampler", c.sampler.name())?;
        map.serialize_entry("alpha", &c.alpha)?;
        if self.arrays {
            map.serialize_entry("budgets", &s.budgets)?;
            map.serialize_entry("published", &s.published)?;
        }
        map.serialize_entry("refused", &s.refused)?;
        map.serialize_entry("last_key", &s.last_key)?;
        map.serialize_entry("max_window_spend", &s.max_window_spend)?;
        map.serialize_entry(
            "leakage",
            &Both { realized: pair(s.realized), guaranteed: pair(self.guaranteed) },
        )?;
        map.serialize_entry("format_version", &s.format_version)?;
        map.serialize_entry("chain_head", &s.chain_head)?;
        map.serialize_entry("estimator", &c.estimation.map(|e| e.estimator.name()))?;
        map.serialize_entry("total", &c.estimation.map(|e| e.total))?;
        map.end()
    }
}
