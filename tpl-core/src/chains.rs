//! Candidate generation from a matrix: for every ordered pair of rows (q, d), the chain of
//! prefix sums over the states sorted by q_i/d_i (TKDE Theorem 8 and Algorithm 2), with the
//! pruning that keeps time and memory small.
//!
//! For a fixed pair the optimal S at any α is a prefix of the states with q_i > d_i sorted
//! by q_i/d_i descending (Corollary 2, Theorem 8). In the (d, δ) plane those prefixes form a
//! concave chain from the origin whose edge slopes s_i = q_i/d_i − 1 decrease, ending at the
//! total-variation point (Σ d_i, Σ (q_i − d_i)).
//!
//! **Pruning without sorting.** Most pairs are settled before anything else by their
//! support function at a grid of slopes, one vectorised pass ([`support::outline_is_under`],
//! [`docs/model.md`](crate::guide::model) §8). For the others, one O(n) pass puts each state into a
//! half-octave bin of its slope, read off the slope's exponent and top mantissa bit (no logarithm).
//! Cumulative bin sums are exact chain points (the prefix of all states steeper than a bin
//! boundary), and between two consecutive ones the chain stays inside the thin triangle spanned by
//! the bin's two slope limits. If every such triangle lies under the hull of candidates seen so
//! far, no point of the pair's chain can ever be the maximum, and the pair is never sorted. The
//! hull grows block by block from the bin points and the full chains of the pairs that survive;
//! pruning against part of the final hull is valid because the hull only grows. The authors'
//! Algorithm 2 stores all n(n−1) chains (≈190 MB at n = 200).

use crate::candidate::Candidate;
use crate::envelope::{Envelope, Heights};
use crate::matrix::TransitionMatrix;
use std::ops::Range;

use crate::matrix::Form;
use crate::par;
use crate::structure::{Bulk, PairBuf, PairClasses, PairList, Rows};
use crate::support::{self, Grid, SLOPES};

/// Slopes at or above 2^16 (and infinite ones, d_i = 0) share the first bin.
const SLOPE_TOP: f64 = 65536.0;
/// Slopes below 2^−16 share the last bin.
const SLOPE_BOTTOM: f64 = 1.0 / 65536.0;
/// `key(s)` orders positive slopes; it steps at 2^e and 1.5·2^e.
const fn key(s: f64) -> u64 {
    s.to_bits() >> 51
}
const KEY_TOP: u64 = key(SLOPE_TOP);
const KEY_BOTTOM: u64 = key(SLOPE_BOTTOM);
/// Number of bins: the top one, one per key in [KEY_BOTTOM, KEY_TOP), the bottom one.
const BINS: usize = (KEY_TOP - KEY_BOTTOM) as usize + 2;
/// Pairs with a chain scanned between two rebuilds of the hull used for pruning.
const BLOCK: usize = 512;
/// Pairs whose outline tests run in parallel before the first rebuild of the hull that the
/// tests use; each later batch is twice as large, up to [`MAX_BATCH`].
const FIRST_BATCH: usize = 1024;
/// The largest batch of outline tests.
const MAX_BATCH: usize = 16384;
/// Pairs per parallel work item of a batch.
const ITEM: usize = 256;
/// Binning and sorting a pair costs about this many times its outline (in work for
/// [`par::map`]).
const BINNING_COST: usize = 8;
/// Open pairs per parallel work item.
const ITEM_OPEN: usize = 32;
/// The outline test costs about a sixth of what binning a pair costs: it pays while it
/// settles at least one pair in [`OUTLINE_PAYS`] of those it tries.
const OUTLINE_PAYS: usize = 4;
/// When it does not (all pairs alike and on the hull, as for the smoothed identity), the next
/// round tries it on one pair in this many only, to notice when it starts paying again.
const OUTLINE_SAMPLE: usize = 16;

/// What the candidate generation found for a matrix.
#[derive(Debug, Clone)]
pub(crate) enum Candidates {
    /// Two rows with disjoint supports: q_S = 1 and d_S = 0 for some S, so L(α) = α
    /// (Theorem 7, generalised from one column to a set of columns).
    Identity,
    /// The relevant hull of all candidates, and (when asked for) the full chains of the
    /// pairs that were not pruned or own a hull vertex.
    Found { envelope: Envelope, chains: Vec<Vec<Candidate>> },
}

fn bin_of(slope: f64) -> usize {
    if slope >= SLOPE_TOP {
        0
    } else if slope < SLOPE_BOTTOM {
        BINS - 1
    } else {
        (KEY_TOP - key(slope)) as usize
    }
}

/// The smallest slope of bin `b` (the largest is the smallest of bin `b − 1`, ∞ for b = 0).
fn bin_floor(b: usize) -> f64 {
    match b {
        0 => SLOPE_TOP,
        b if b == BINS - 1 => 0.0,
        b => f64::from_bits((KEY_TOP - b as u64) << 51),
    }
}

/// Per-pair scratch: sums of d_i and q_i − d_i per slope bin.
struct Bins {
    d: Vec<f64>,
    delta: Vec<f64>,
}

/// The outcome of binning one ordered pair.
enum Binned {
    /// q_i ≤ d_i everywhere: the rows are equal (both sum to 1).
    Empty,
    /// Disjoint supports (Theorem 7).
    Disjoint,
    /// Bins filled.
    Chain,
}

impl Bins {
    fn new() -> Self {
        Self { d: vec![0.0; BINS], delta: vec![0.0; BINS] }
    }

    fn fill(&mut self, q: &[f64], d: &[f64], bulk: Bulk) -> Binned {
        self.d.iter_mut().for_each(|v| *v = 0.0);
        self.delta.iter_mut().for_each(|v| *v = 0.0);
        let (mut any, mut d_total, mut q_outside) = (false, 0.0, false);
        // Each state, or the bulk, as (q_i, d_i) and its masses (d_i, q_i − d_i).
        let bulk_state = (bulk.count > 0.0).then(|| ((bulk.q, bulk.d), bulk.masses()));
        let states = q.iter().zip(d).map(|(&qi, &di)| ((qi, di), (di, qi - di))).chain(bulk_state);
        for ((qi, di), (mass_d, gap)) in states {
            if qi > di {
                let b = if di == 0.0 { 0 } else { bin_of((qi - di) / di) };
                self.d[b] += mass_d;
                self.delta[b] += gap;
                d_total += mass_d;
                any = true;
            } else if qi > 0.0 {
                q_outside = true;
            }
        }
        match (any, d_total == 0.0 && !q_outside) {
            (false, _) => Binned::Empty,
            (true, true) => Binned::Disjoint,
            (true, false) => Binned::Chain,
        }
    }

    /// Calls `visit(corner, is_chain_point)` with every cumulative bin point (an exact chain
    /// point, `true`) and with the third corner of every bin's triangle (`false`).
    fn corners(&self, mut visit: impl FnMut(Candidate, bool)) {
        let mut prev = Candidate { d: 0.0, delta: 0.0 };
        for b in 0..BINS {
            if self.delta[b] == 0.0 {
                continue;
            }
            let cur = Candidate { d: prev.d + self.d[b], delta: prev.delta + self.delta[b] };
            let low = bin_floor(b);
            let corner = if b == 0 {
                // Between the vertical through the origin and the line of slope 2^16 through cur.
                Candidate { d: 0.0, delta: cur.delta - low * cur.d }
            } else {
                // Line through prev with the bin's largest slope meets the line through cur
                // with its smallest one, at t along d from prev.
                let high = bin_floor(b - 1);
                let t = (cur.delta - prev.delta - low * (cur.d - prev.d)) / (high - low);
                Candidate { d: prev.d + t, delta: prev.delta + high * t }
            };
            visit(cur, true);
            visit(corner, false);
            prev = cur;
        }
    }
}

/// The full prefix chain of one ordered pair (its explicit states and its bulk), in order of
/// decreasing q_i/d_i; the bulk's states, which share one ratio, enter it together.
pub(crate) fn pair_chain(
    q: &[f64],
    d: &[f64],
    bulk: Bulk,
    buf: &mut Vec<(f64, Candidate)>,
) -> Vec<Candidate> {
    buf.clear();
    let mut zero_d = 0.0;
    let bulk_state = (bulk.count > 0.0).then(|| ((bulk.q, bulk.d), bulk.masses()));
    let states = q.iter().zip(d).map(|(&qi, &di)| ((qi, di), (di, qi - di))).chain(bulk_state);
    for ((qi, di), (mass_d, gap)) in states {
        if qi > di {
            if di == 0.0 {
                zero_d += mass_d + gap;
            } else {
                buf.push((qi / di, Candidate { d: mass_d, delta: gap }));
            }
        }
    }
    buf.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut chain = Vec::with_capacity(buf.len() + 1);
    let mut acc = Candidate { d: 0.0, delta: zero_d };
    if zero_d > 0.0 {
        chain.push(acc);
    }
    for (_, c) in buf.iter() {
        acc = Candidate { d: acc.d + c.d, delta: acc.delta + c.delta };
        chain.push(acc);
    }
    chain
}

/// Generates the candidates of `matrix` (see the module documentation). With `keep_chains`,
/// also returns the full chains needed by the pair-table evaluator. O(n³) for the outlines
/// and the binning plus O(n log n) for each pair that survives pruning. Calls
/// `progress(a, n)` after the pairs of each of the n rows a, in order (an early return for
/// Theorem 7 skips the rest).
///
/// The ordered pairs are scanned in order, and the hull used for pruning is rebuilt after
/// every [`BLOCK`] pairs with a chain. Before that, each pair meets the test of
/// [`support::outline_is_under`], in parallel batches (feature `parallel`) against the hull
/// as it is when the batch starts: one vectorised pass proves most pairs to lie strictly
/// under that hull, hence under the later ones ([`docs/model.md`](crate::guide::model) §8), and
/// only the others are binned as described above. A pair the test settles would have left no point
/// for the hull, so the hull, and with it every value of L, is bit for bit that of the scan without
/// the test.
pub(crate) fn candidates(
    matrix: &TransitionMatrix,
    keep_chains: bool,
    progress: &dyn Fn(usize, usize),
) -> Candidates {
    let form = matrix.form();
    let classes = match &form {
        Form::Structured(rows) => PairClasses::new(rows),
        Form::Dense(_) => None,
    };
    scan_pairs(Rows::new(&form, classes.as_ref()), keep_chains, true, progress)
}

/// [`candidates`] of the n×n matrix whose pairs `rows` gives, with the outline test
/// (`outline`) or without it.
fn scan_pairs(
    rows: Rows<'_>,
    keep_chains: bool,
    outline: bool,
    progress: &dyn Fn(usize, usize),
) -> Candidates {
    let n = rows.n();
    let tests = OutlineTests::new(rows, n);
    let mut envelope = Envelope::default();
    let mut pending: Vec<(Candidate, u32)> = Vec::new();
    let mut kept: Vec<(u32, Vec<Candidate>)> = Vec::new();
    let mut chain_buf = PairBuf::default();
    // Outcomes of the outline tests of the pairs batch_start.., and the next batch's size.
    let (mut outcomes, mut batch_start, mut batch) = (Vec::new(), 0, FIRST_BATCH);
    // Every pair meets the outline test while it settles enough of them to pay for itself.
    let mut sample = 1;
    let list = rows.pairs();
    let (total, mut next, mut scanned, mut reported) = (list.len(), 0, 0usize, 0);
    while next < total {
        // The pairs up to the one that completes a block of BLOCK pairs with a chain: all are
        // scanned against the same hull, the open ones here (in parallel when they are many).
        let mut open = Vec::new();
        let mut with_chain = 0;
        while next < total && with_chain < BLOCK - scanned % BLOCK {
            let (k, p) = (next, list.get(next));
            next += 1;
            if outline && k >= batch_start + outcomes.len() && !envelope.is_empty() {
                let end = (k + batch).min(total);
                let (tried, settled);
                (outcomes, tried, settled) = tests.run(&list, k..end, &envelope, sample);
                sample = if OUTLINE_PAYS * settled >= tried { 1 } else { OUTLINE_SAMPLE };
                (batch_start, batch) = (k, (2 * batch).min(MAX_BATCH));
            }
            match outcomes.get(k.wrapping_sub(batch_start)).copied().unwrap_or(Outcome::Open) {
                Outcome::Empty => {}
                Outcome::Settled => with_chain += 1,
                Outcome::Open if tests.needs_scan(p, &mut chain_buf) => {
                    open.push(p);
                    with_chain += 1;
                }
                Outcome::Open => {}
            }
        }
        let scan = |pairs: &[usize]| scan_open(rows, n, pairs, &envelope, keep_chains);
        let found = par::map(0..open.len().div_ceil(ITEM_OPEN), BINNING_COST * open.len() * n, |k| {
            scan(&open[k * ITEM_OPEN..((k + 1) * ITEM_OPEN).min(open.len())])
        });
        for part in found {
            if part.identity {
                return Candidates::Identity;
            }
            pending.extend(part.pending);
            kept.extend(part.kept);
        }
        scanned += with_chain;
        if scanned.is_multiple_of(BLOCK) && !pending.is_empty() {
            envelope = rebuild(&envelope, &mut pending);
        }
        // Rows whose pairs are all behind: those before the next pair's row.
        let done = if next < total { list.get(next) / n } else { n };
        while reported < done {
            reported += 1;
            progress(reported, n);
        }
    }
    envelope = rebuild(&envelope, &mut pending);
    let mut chains = Vec::new();
    if keep_chains {
        // Pairs whose bin points made it onto the final hull without their chain being kept.
        kept.sort_unstable_by_key(|(tag, _)| *tag);
        let mut owners: Vec<u32> = envelope.tags().to_vec();
        owners.sort_unstable();
        owners.dedup();
        let (mut sort_buf, mut pair_buf) = (Vec::with_capacity(n), PairBuf::default());
        for tag in owners {
            if kept.binary_search_by_key(&tag, |(t, _)| *t).is_err() {
                let (q, d, bulk) = rows.pair(tag as usize / n, tag as usize % n, &mut pair_buf);
                kept.push((tag, pair_chain(q, d, bulk, &mut sort_buf)));
            }
        }
        chains = kept.into_iter().map(|(_, c)| c).collect();
    }
    Candidates::Found { envelope, chains }
}

/// What the binning of some pairs contributed.
#[derive(Default)]
struct Found {
    /// Points that may lie on the hull, tagged with their pair a·n + b, in the pairs' order.
    pending: Vec<(Candidate, u32)>,
    /// Full chains of the pairs that may matter (with `keep_chains`).
    kept: Vec<(u32, Vec<Candidate>)>,
    /// Two rows with disjoint supports were found.
    identity: bool,
}

/// Bins the ordered pairs a·n + b of `pairs` (each with a chain) and sorts those whose bins
/// may reach above `envelope` (see the module documentation).
fn scan_open(rows: Rows<'_>, n: usize, pairs: &[usize], envelope: &Envelope, keep_chains: bool) -> Found {
    let mut found = Found::default();
    let mut bins = Bins::new();
    let (mut sort_buf, mut pair_buf) = (Vec::new(), PairBuf::default());
    for &p in pairs {
        let (q, d, bulk) = rows.pair(p / n, p % n, &mut pair_buf);
        match bins.fill(q, d, bulk) {
            Binned::Empty => continue,
            Binned::Disjoint => {
                found.identity = true;
                return found;
            }
            Binned::Chain => {}
        }
        let tag = p as u32;
        let mut matters = false;
        bins.corners(|c, is_chain_point| {
            if envelope.may_matter(c) {
                matters = true;
                if is_chain_point {
                    found.pending.push((c, tag));
                }
            }
        });
        if matters {
            let chain = pair_chain(q, d, bulk, &mut sort_buf);
            found.pending.extend(chain.iter().filter(|&&c| envelope.may_matter(c)).map(|&c| (c, tag)));
            if keep_chains {
                found.kept.push((tag, chain));
            }
        }
    }
    found
}

/// What the outline test found about one ordered pair.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// Not tested, or not settled: the pair is binned.
    Open,
    /// q_i ≤ d_i everywhere: no chain (the binning would say [`Binned::Empty`]).
    Empty,
    /// A chain, strictly under the hull: it leaves no point.
    Settled,
}

/// The outline tests of pairs of one matrix.
struct OutlineTests<'m> {
    rows: Rows<'m>,
    /// Number of states.
    n: usize,
    /// max_i q_i of every row.
    row_max: Vec<f64>,
    /// min_i {d_i : d_i > 0} of every row (∞ for none): with `row_max`, a bound on the
    /// largest finite ratio q_i/d_i of a pair.
    row_min_positive: Vec<f64>,
}

impl<'m> OutlineTests<'m> {
    /// Whether the ordered pair a·n + b needs its own scan: a ≠ b and q_i > d_i for some i (it
    /// has a chain).
    fn needs_scan(&self, p: usize, buf: &mut PairBuf) -> bool {
        let (a, b) = (p / self.n, p % self.n);
        if a == b {
            return false;
        }
        let (q, d, bulk) = self.rows.pair(a, b, buf);
        bulk.gains() || q.iter().zip(d).any(|(q, d)| q > d)
    }

    fn new(rows: Rows<'m>, n: usize) -> Self {
        let (row_max, row_min_positive) = (0..n).map(|j| rows.extremes(j)).unzip();
        Self { rows, n, row_max, row_min_positive }
    }

    /// The outcomes of the pairs at the positions `range` of `list` against `envelope`, in
    /// parallel; only the pairs a·n + b with (a·n + b) % `sample` = 0 are tested. Also the
    /// number tested and the number settled.
    fn run(
        &self,
        list: &PairList,
        range: Range<usize>,
        envelope: &Envelope,
        sample: usize,
    ) -> (Vec<Outcome>, usize, usize) {
        let (grid, heights) = (Grid::new(envelope), Heights::new(envelope));
        let start = range.start;
        let parts = par::map(0..range.len().div_ceil(ITEM), range.len() * self.n, |k| {
            let from = start + k * ITEM;
            let mut buf = PairBuf::default();
            (from..(from + ITEM).min(range.end))
                .map(|position| {
                    let p = list.get(position);
                    if p.is_multiple_of(sample) {
                        self.outcome(p, &heights, &grid, &mut buf)
                    } else {
                        Outcome::Open
                    }
                })
                .collect::<Vec<_>>()
        });
        let outcomes: Vec<Outcome> = parts.concat();
        let tried = range.filter(|&position| list.get(position).is_multiple_of(sample)).count();
        let settled = outcomes.iter().filter(|&&o| o == Outcome::Settled).count();
        (outcomes, tried, settled)
    }

    /// Whether the pair p = a·n + b provably lies under the envelope of `heights`, by its
    /// support at the slopes of `grid` and, unless it comes close to the envelope there, at
    /// the finer slopes too ([`support::outline_is_under`]).
    fn outcome(&self, p: usize, heights: &Heights, grid: &Grid, buf: &mut PairBuf) -> Outcome {
        let n = self.n;
        let (a, b) = (p / n, p % n);
        if a == b {
            return Outcome::Open;
        }
        let (q, d, bulk) = self.rows.pair(a, b, buf);
        let (first, tv) = support::outline(q, d, bulk, &grid.slopes);
        if tv == 0.0 {
            return Outcome::Empty; // no q_i − d_i > 0
        }
        // h constant in σ (all mass of q where d is 0, as for disjoint supports): left to the
        // binning, which recognises Theorem 7.
        if first[0].1 == tv || grid.near_hull(&first) {
            return Outcome::Open;
        }
        // q_i/d_i − 1 ≤ ratio − 1, rounded up.
        let ratio = self.row_max[a] / self.row_min_positive[b];
        let steepest = (ratio - 1.0) + ratio * f64::EPSILON;
        if support::outline_is_under(heights, &first, tv, steepest, n) {
            return Outcome::Settled;
        }
        let (second, _) = support::outline(q, d, bulk, &grid.finer);
        let mut samples = [(0.0, 0.0); 2 * SLOPES];
        samples[..SLOPES].copy_from_slice(&first);
        samples[SLOPES..].copy_from_slice(&second);
        if support::outline_is_under(heights, &samples, tv, steepest, n) {
            Outcome::Settled
        } else {
            Outcome::Open
        }
    }
}

fn rebuild(envelope: &Envelope, pending: &mut Vec<(Candidate, u32)>) -> Envelope {
    pending.extend(envelope.vertices().iter().copied().zip(envelope.tags().iter().copied()));
    Envelope::from_tagged(std::mem::take(pending))
}

#[cfg(test)]
mod tests;
