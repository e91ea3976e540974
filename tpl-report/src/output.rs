//! The JSON objects of `tpl loss`, `supremum`, `leakage` and `allocate` (docs/cli.md §2), as
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
