//! The page of `tpl stream report` and Python's `Stream.report`: one self-contained HTML page of a stream ([`docs/stream.md`] §10) —
//! its parameters and provenance, the busiest cells' releases and estimates over time, the
//! spend of every window against ε, the realised and guaranteed leakage step by step, and the
//! refused steps. Long streams are summarised, never drawn point by point: every series has
//! at most [`POINTS`] points, so the page stays small and quick to make after every push.
//!
//! [`docs/stream.md`]: tpl_core::guide::stream

use tpl_core::Short;
use tpl_stream::{DurableStream, Status, StepRecord};

use crate::Result;
use crate::chart::{Band, TimeSeries, time_series_svg};
use crate::html::{Cell, Page, Section, Table};
use crate::text::human;

/// The most points a series of the page has: longer streams are summarised over buckets of
/// consecutive steps (the mean of each bucket's values, or its maximum for a spend or a
/// leakage, whose peaks matter).
pub const POINTS: usize = 400;

/// How many of the busiest cells get a chart of their own.
const BUSIEST: usize = 3;

/// How many refused steps are listed (all are counted).
const REFUSED_SHOWN: usize = 50;

/// Everything the page shows: the stream's status and steps, each step's release and stored
/// estimate cut to the cells shown.
pub struct StreamData {
    /// The stream file, as given.
    pub path: String,
    /// Where the stream stands.
    pub status: Status,
    /// Every recorded step, its release cut to `cells`.
    pub steps: Vec<StepRecord>,
    /// The cells shown (cell numbers of the stream), busiest first.
    pub cells: Vec<usize>,
    /// Each step's stored causal estimate and its interval, cut to `cells` (`None` for a step
    /// without one; empty without stored estimates).
    pub estimates: Vec<Option<Shown>>,
    /// The guaranteed max TPL and largest window leakage over every run the scheme could
    /// have produced, with matrices.
    pub guaranteed: Option<(f64, f64)>,
}

/// A step's stored estimate of the cells shown: values and the ends of their intervals.
pub struct Shown {
    estimate: Vec<f64>,
    interval: Option<Vec<(f64, f64)>>,
}

impl StreamData {
    /// Reads what the page shows from `stream` (file `path`), checking every record
    /// ([`DurableStream::snapshot_with`]) and keeping of each step only the cells shown: the
    /// three cells with the most people over the stream — by the stored estimates (they
    /// are not noisy), by the releases for steps without one. Memory: O(T) for T steps plus
    /// O(n) for n cells, not O(T·n).
    ///
    /// # Errors
    /// The stream's: a damaged record, SQLite's.
    pub fn read(stream: &mut DurableStream, path: String) -> tpl_stream::Result<Self> {
        let (mut sums, widths) = estimate_sums(stream, usize::MAX)?;
        // The width most rows have, until the releases say which is the stream's.
        let mut width =
            sums.iter().max_by_key(|(w, _)| widths.iter().filter(|&&x| x == *w).count()).map(|(w, _)| *w);
        let mut cells = chosen(&sums, width, &Totals::default());
        // With the releases of the steps without an estimate (every step, without estimates).
        let mut released = Totals::default();
        let mut n = None;
        let (mut status, mut steps) = stream.snapshot_with(|step| {
            if released.restarts(step.t) {
                n = None;
            }
            let n = *n.get_or_insert(step.release.len());
            if !(step.t >= 1 && widths.get(step.t - 1) == Some(&n)) {
                released.add(&step.release);
            }
            Some(cut(step, &cells))
        })?;
        let beyond = widths.len() > steps.len();
        if beyond {
            // Estimates of steps the stream does not have (a damaged table): left out.
            sums = estimate_sums(stream, steps.len())?.0;
        }
        if n != width || !released.sums.is_empty() || beyond {
            width = n;
            let busiest = chosen(&sums, width, &released);
            if busiest != cells {
                cells = busiest;
                (status, steps) = stream.snapshot_with(|step| Some(cut(step, &cells)))?;
            }
        }
        // Each step's estimate and interval (clipped to the population the step's whole
        // estimate sums to), at the step's place.
        let shown = stream.estimates_with(|e| {
            let x = e.estimate.as_ref().ok().filter(|x| Some(x.len()) == width)?;
            let interval =
                e.interval_of(&cells, LEVEL).ok().flatten().map(|(lo, hi)| lo.into_iter().zip(hi).collect());
            Some((e.t, Shown { estimate: cells.iter().map(|&c| x[c]).collect(), interval }))
        })?;
        let mut estimates: Vec<Option<Shown>> = std::iter::repeat_with(|| None).take(steps.len()).collect();
        for (t, e) in shown {
            if let Some(place) = t.checked_sub(1).and_then(|at| estimates.get_mut(at)) {
                *place = Some(e);
            }
        }
        if estimates.iter().all(Option::is_none) {
            estimates.clear();
        }
        let guaranteed = crate::output::guaranteed_pair(&status)?;
        Ok(Self { path, status, steps, cells, estimates, guaranteed })
    }
}

/// The estimates of one width (number of cells) summed per cell.
type WidthSums = (usize, Totals);

/// The [`BUSIEST`] cells by the releases summed in `released` plus the estimates of width
/// `width` summed in `sums`.
fn chosen(sums: &[WidthSums], width: Option<usize>, released: &Totals) -> Vec<usize> {
    let mut totals = Totals::of(&released.sums);
    if let Some((_, estimated)) = sums.iter().find(|(w, _)| Some(*w) == width) {
        totals.add(&estimated.sums);
    }
    totals.busiest()
}

/// The stored estimates of steps 1..=`last` summed per cell, apart by width (a row of another
/// width than the releases' is not an estimate of the stream's cells), and each step's width
/// (0: no estimate).
fn estimate_sums(
    stream: &mut DurableStream,
    last: usize,
) -> tpl_stream::Result<(Vec<WidthSums>, Vec<usize>)> {
    let (mut sums, mut widths): (Vec<WidthSums>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut previous = 0;
    stream.estimates_with(|e| {
        if e.t <= previous {
            // Read again from the first row.
            sums.clear();
            widths.clear();
        }
        previous = e.t;
        if let (Ok(x), Some(at)) = (&e.estimate, e.t.checked_sub(1).filter(|&at| at < last)) {
            match sums.iter_mut().find(|(w, _)| *w == x.len()) {
                Some((_, totals)) => totals.add(x),
                None => sums.push((x.len(), Totals::of(x))),
            }
            widths.resize(widths.len().max(at + 1), 0);
            widths[at] = x.len();
        }
        None::<()>
    })?;
    Ok((sums, widths))
}

/// Per-cell sums of the rows added, summed a row at a time.
#[derive(Default)]
struct Totals {
    sums: Vec<f64>,
    /// The last step added (to see a read that starts again from step 1).
    last: usize,
}

impl Totals {
    /// The sums of one row.
    fn of(row: &[f64]) -> Self {
        Self { sums: row.to_vec(), last: 0 }
    }

    /// Starts again when step `t` does not follow the last one (a read that is read again);
    /// says whether it did.
    fn restarts(&mut self, t: usize) -> bool {
        let again = t <= self.last;
        if again {
            self.sums.clear();
        }
        self.last = t;
        again
    }

    fn add(&mut self, row: &[f64]) {
        if self.sums.len() < row.len() {
            self.sums.resize(row.len(), 0.0);
        }
        self.sums.iter_mut().zip(row).for_each(|(sum, v)| *sum += v);
    }

    /// The [`BUSIEST`] cells with the largest sums, largest first (ties: lower cell first).
    fn busiest(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.sums.len()).collect();
        order.sort_by(|&a, &b| self.sums[b].total_cmp(&self.sums[a]).then(a.cmp(&b)));
        order.truncate(BUSIEST);
        order
    }
}

/// `step` with its release cut to `cells`.
fn cut(mut step: StepRecord, cells: &[usize]) -> StepRecord {
    step.release = cells.iter().map(|&c| step.release.get(c).copied().unwrap_or(f64::NAN)).collect();
    step
}

/// Consecutive steps summarised as one point: `first..first + len`, x at their middle step.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    first: usize,
    len: usize,
}

impl Bucket {
    /// The step (from 1) the bucket's point stands at.
    fn x(self) -> f64 {
        self.first as f64 + 1.0 + (self.len as f64 - 1.0) / 2.0
    }
}

/// `steps` steps cut into at most [`POINTS`] buckets of equal length (the last shorter).
fn buckets(steps: usize) -> Vec<Bucket> {
    let len = steps.div_ceil(POINTS).max(1);
    (0..steps).step_by(len).map(|first| Bucket { first, len: len.min(steps - first) }).collect()
}

/// The mean of `value(t)` over each bucket (t from 0), skipping `None`.
fn means(buckets: &[Bucket], value: impl Fn(usize) -> Option<f64>) -> Vec<(f64, f64)> {
    buckets
        .iter()
        .filter_map(|b| {
            let values: Vec<f64> = (b.first..b.first + b.len).filter_map(&value).collect();
            (!values.is_empty()).then(|| (b.x(), values.iter().sum::<f64>() / values.len() as f64))
        })
        .collect()
}

/// The largest `value(t)` over each bucket (t from 0), skipping `None`.
fn maxima(buckets: &[Bucket], value: impl Fn(usize) -> Option<f64>) -> Vec<(f64, f64)> {
    buckets
        .iter()
        .filter_map(|b| {
            let top = (b.first..b.first + b.len).filter_map(&value).fold(f64::NEG_INFINITY, f64::max);
            top.is_finite().then(|| (b.x(), top))
        })
        .collect()
}

/// ln 10: a Laplace noise of scale b stays within ±b·ln 10 with probability 0.9.
const LAPLACE_90: f64 = std::f64::consts::LN_10;

/// The level of the estimates' intervals drawn (that of the releases' band).
const LEVEL: f64 = 0.9;

/// The page of `data`; `made_by` are the first (term, value) pairs of its provenance (the
/// command line and the version of what wrote it), before the stream's format and chain head.
///
/// # Errors
/// A chart that cannot be drawn.
pub fn stream_page(data: &StreamData, made_by: &[(&str, String)]) -> Result<String> {
    let status = &data.status;
    let config = &status.config;
    let steps = &data.steps;
    let mut page = Page::new(&format!("Stream {}", data.path));
    let published = status.published.iter().filter(|&&p| p).count();
    page.lead(&format!(
        "{} steps released by {} (ε = {} per window of {} steps): {} published afresh, {} repeated the last release{}.",
        steps.len(),
        config.scheme.name(),
        human(config.epsilon),
        config.window,
        published,
        steps.len() - published,
        match status.refused.len() {
            0 => String::new(),
            n => format!(", {n} of them refused by the stream's own checks"),
        }
    ));
    for (term, value) in made_by {
        page.provenance(term, value.clone());
    }
    page.provenance("stream format", status.format_version.to_string())
        .provenance("history chain head", status.chain_head.clone().unwrap_or_else(|| "(no step)".into()));
    page.section(parameters(data));
    if !steps.is_empty() {
        let b = buckets(steps.len());
        page.section(cells(data, &b)?);
        page.section(spend(data, &b)?);
        if let Some(section) = leakage(data, &b)? {
            page.section(section);
        }
    }
    page.section(refused(data));
    Ok(page.render())
}

/// The stream's parameters and where it stands.
fn parameters(data: &StreamData) -> Section {
    let s = &data.status;
    let c = &s.config;
    let matrix = |m: Option<&tpl_core::TransitionMatrix>| {
        m.map_or("none".to_string(), |m| format!("{} × {} states", m.n(), m.n()))
    };
    let mut items = vec![
        ("scheme", c.scheme.name().to_string()),
        ("ε per window", human(c.epsilon)),
        ("window w", c.window.to_string()),
        ("sensitivity Δ", human(c.sensitivity)),
        ("sampler", c.sampler.name().to_string()),
        ("backward matrix", matrix(c.correlation.backward())),
        ("forward matrix", matrix(c.correlation.forward())),
        ("α (leakage cap)", c.alpha.map_or("none".to_string(), human)),
        ("last key", s.last_key.map_or("none".to_string(), |k| k.to_string())),
        ("largest window spend", format!("{} of ε = {}", human(s.max_window_spend), human(c.epsilon))),
    ];
    if let Some(e) = c.estimation {
        items.push((
            "estimates",
            format!("{} (causal filter), population N = {}", e.estimator.name(), e.total),
        ));
    }
    if let Some((tpl, window)) = s.realized {
        items
            .push(("realised max TPL", format!("{} (largest window leakage {})", human(tpl), human(window))));
    }
    if let Some((tpl, window)) = data.guaranteed {
        items.push((
            "guaranteed max TPL",
            format!(
                "{} (largest window leakage {}), over every run the scheme could have produced",
                human(tpl),
                human(window)
            ),
        ));
    }
    let mut section = Section::new("Parameters");
    section.definitions(&items);
    section
}

/// The busiest cells: releases (with the 90 % band of their noise) and estimates over time.
fn cells(data: &StreamData, b: &[Bucket]) -> Result<Section> {
    let steps = &data.steps;
    // Position k of a step's release and estimate is cell data.cells[k].
    let estimate = |t: usize, k: usize| data.estimates.get(t)?.as_ref()?.estimate.get(k).copied();
    let mut section = Section::new("Busiest cells");
    let sensitivity = data.status.config.sensitivity;
    section.paragraph(&format!(
        "The {} cells with the most people, step by step: the release (what was published), its 90 % noise \
         band (release ± Δ/ε_t·ln 10 where the step published afresh) and, when the stream stores them, the \
         causal estimate (from the releases up to each step only) with its stored 90 % interval.{}",
        data.cells.len(),
        if b.first().is_some_and(|x| x.len > 1) {
            format!(" Each point is the mean of {} consecutive steps.", b[0].len)
        } else {
            String::new()
        }
    ));
    let mut table = Table::new(&["cell", "mean release", "mean estimate", "mean |release − estimate|"]);
    for (k, &c) in data.cells.iter().enumerate() {
        let release = |t: usize| steps[t].release.get(k).copied();
        let half = |t: usize| {
            let s = &steps[t];
            (s.published && s.spent.publication > 0.0).then(|| sensitivity / s.spent.publication * LAPLACE_90)
        };
        let mut bands = vec![Band {
            name: "release 90 % band".into(),
            lower: means(b, |t| Some(release(t)? - half(t)?)),
            upper: means(b, |t| Some(release(t)? + half(t)?)),
        }];
        let mut series = vec![TimeSeries::line("release", means(b, release))];
        let estimated = means(b, |t| estimate(t, k));
        if !estimated.is_empty() {
            series.push(TimeSeries::line("estimate", estimated));
            let end = |t: usize| data.estimates.get(t)?.as_ref()?.interval.as_ref()?.get(k).copied();
            let estimate_band = Band {
                name: "estimate 90 % interval".into(),
                lower: means(b, |t| end(t).map(|e| e.0)),
                upper: means(b, |t| end(t).map(|e| e.1)),
            };
            if !estimate_band.lower.is_empty() {
                bands.push(estimate_band);
            }
        }
        let svg =
            time_series_svg(&format!("Cell {c}"), ("step t", "people in the cell"), &series, &bands, &[])?;
        section.chart(&svg, &format!("Cell {c}: releases and estimates over time"))?;
        // The whole stream as one bucket: its mean.
        let whole = [Bucket { first: 0, len: steps.len() }];
        let mean = |f: &dyn Fn(usize) -> Option<f64>| means(&whole, f).first().map(|p| p.1);
        let shown = |v: Option<f64>| v.map_or(Cell::text("—"), Cell::number);
        table.row(vec![
            Cell::text(c.to_string()),
            shown(mean(&release)),
            shown(mean(&|t| estimate(t, k))),
            shown(mean(&|t| Some((release(t)? - estimate(t, k)?).abs()))),
        ]);
    }
    section.table(&table);
    Ok(section)
}

/// The spend of every window of w steps against ε.
fn spend(data: &StreamData, b: &[Bucket]) -> Result<Section> {
    let c = &data.status.config;
    let budgets = &data.status.budgets;
    // Window ending at step t (from 0): steps t − w + 1 ..= t; one running sum.
    let mut window = Vec::with_capacity(budgets.len());
    let mut sum = 0.0;
    for (t, &e) in budgets.iter().enumerate() {
        sum += e;
        if t >= c.window {
            sum -= budgets[t - c.window];
        }
        window.push(sum.max(0.0));
    }
    let mut section = Section::new("Budget");
    section.paragraph(&format!(
        "The budget spent by each window of w = {} steps ending at step t, against ε = {}: the stream refuses \
         any draw that would take a window over ε, before the noise is drawn. Largest: {}.",
        c.window,
        human(c.epsilon),
        human(data.status.max_window_spend)
    ));
    let series = [
        TimeSeries::line("window spend", maxima(b, |t| Some(window[t]))),
        TimeSeries::line("step budget ε_t", maxima(b, |t| Some(budgets[t]))),
    ];
    let svg = time_series_svg(
        "Spend per window",
        ("step t (window end)", "budget (ε units)"),
        &series,
        &[],
        &[("ε", c.epsilon)],
    )?;
    section.chart(&svg, "Budget spent by every window against ε")?;
    Ok(section)
}

/// The realised leakage step by step and the guaranteed bound, with matrices.
fn leakage(data: &StreamData, b: &[Bucket]) -> Result<Option<Section>> {
    let steps = &data.steps;
    if steps.iter().all(|s| s.max_tpl.is_none()) {
        return Ok(None);
    }
    let series = [
        TimeSeries::line("realised max TPL so far", maxima(b, |t| steps[t].max_tpl)),
        TimeSeries::line("realised largest window leakage", maxima(b, |t| steps[t].max_window_leakage)),
    ];
    let mut references = Vec::new();
    if let Some((tpl, _)) = data.guaranteed {
        references.push(("guaranteed max TPL", tpl));
    }
    if let Some(alpha) = data.status.config.alpha {
        references.push(("α", alpha));
    }
    let mut section = Section::new("Leakage under temporal correlation");
    section.paragraph(
        "The temporal privacy leakage of the budgets spent, as audited at each step against an adversary who \
         knows the stream's matrices (max TPL over the steps so far, and the largest leakage of a window), \
         beside the bound that holds for every run the scheme could have produced.",
    );
    let svg = time_series_svg("Leakage", ("step t", "leakage (ε units)"), &series, &[], &references)?;
    section.chart(&svg, "Realised and guaranteed leakage over time")?;
    Ok(Some(section))
}

/// The steps the stream's own checks refused.
fn refused(data: &StreamData) -> Section {
    let mut section = Section::new("Refused steps");
    let refused: Vec<&StepRecord> = data.steps.iter().filter(|s| s.refused.is_some()).collect();
    if refused.is_empty() {
        section.paragraph("None: every draw the scheme asked for was within ε (and α).");
        return section;
    }
    section.paragraph(&format!(
        "{} steps were refused and repeated the last release{}.",
        refused.len(),
        if refused.len() > REFUSED_SHOWN {
            format!("; the first {REFUSED_SHOWN} are listed")
        } else {
            String::new()
        }
    ));
    let mut table = Table::new(&["t", "key", "spent", "why"]);
    for s in refused.iter().take(REFUSED_SHOWN) {
        table.row(vec![
            Cell::numeric(s.t.to_string()),
            Cell::numeric(s.key.to_string()),
            Cell::numeric(Short(s.spent.total()).to_string()),
            Cell::text(s.refused.clone().unwrap_or_default()),
        ]);
    }
    section.table(&table);
    section
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_start_again_when_a_read_starts_again_and_rank_the_busiest() {
        let mut totals = Totals::default();
        for (t, row) in [(1, [1.0, 5.0, 0.0, 2.0]), (2, [1.0, 0.0, 0.0, 9.0])] {
            assert!(!totals.restarts(t));
            totals.add(&row);
        }
        // A read from step 1 again (a snapshot read twice) forgets what the first read added.
        assert!(totals.restarts(1));
        totals.add(&[0.0, 1.0, 3.0, 1.0]);
        assert_eq!(totals.sums, [0.0, 1.0, 3.0, 1.0]);
        // Largest first, ties to the lower cell, at most BUSIEST.
        assert_eq!(totals.busiest(), [2, 1, 3]);
    }

    #[test]
    fn buckets_cover_every_step_once_in_at_most_points_buckets() {
        for steps in [1, 2, 399, 400, 401, 1000, 100_000] {
            let b = buckets(steps);
            assert!(b.len() <= POINTS, "{steps}");
            assert_eq!(b.iter().map(|x| x.len).sum::<usize>(), steps);
            assert!(b.windows(2).all(|w| w[0].first + w[0].len == w[1].first));
        }
        assert_eq!(buckets(0).len(), 0);
    }

    #[test]
    fn means_and_maxima_summarise_each_bucket() {
        let b = [Bucket { first: 0, len: 2 }, Bucket { first: 2, len: 2 }];
        let v = [1.0, 3.0, 5.0, f64::NAN];
        assert_eq!(means(&b, |t| (t < 3).then(|| v[t])), vec![(1.5, 2.0), (3.5, 5.0)]);
        assert_eq!(maxima(&b, |t| (t < 3).then(|| v[t])), vec![(1.5, 3.0), (3.5, 5.0)]);
    }
}
