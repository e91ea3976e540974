//! Shared helpers of the integration tests ([`docs/w-event.md`](tpl_core::guide::w_event) §7): a
//! noise source the test keeps a handle on after the scheme owns it, a step-by-step driver that
//! logs every draw, stream generators, and an independent checker of a scheme's trace against
//! [`docs/w-event.md`](tpl_core::guide::w_event).

#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use tpl_mechanisms::{
    DiscreteLaplace, FloatLaplace, LaplaceMechanism, MechError, NoiseSource, PbaPool, SchemeKind, Scripted,
    StepOutcome, StreamScheme, WEventParams, WindowLedger,
};

/// Relative tolerance for exact rational expectations
/// ([`docs/w-event.md`](tpl_core::guide::w_event) §7).
pub const TOL: f64 = 1e-12;

/// a ≈ b within relative tolerance [`TOL`] (exact equality for zeros).
pub fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= TOL * a.abs().max(b.abs())
}

/// Asserts a ≈ b (relative 1e-12).
#[track_caller]
pub fn assert_close(got: f64, want: f64, what: &str) {
    assert!(close(got, want), "{what}: got {got:e}, want {want:e}");
}

/// A noise source shared between the scheme (which owns its mechanism) and the test.
#[derive(Debug)]
pub struct Shared<N>(pub Rc<RefCell<N>>);

impl<N> Clone for Shared<N> {
    fn clone(&self) -> Self {
        Self(Rc::clone(&self.0))
    }
}

impl<N: NoiseSource> NoiseSource for Shared<N> {
    fn laplace(&mut self, scale: f64) -> tpl_mechanisms::Result<f64> {
        self.0.borrow_mut().laplace(scale)
    }

    fn integer_valued(&self) -> bool {
        self.0.borrow().integer_valued()
    }
}

/// Wraps `n` for sharing: the source to hand to a mechanism and the test's handle.
pub fn shared<N>(n: N) -> (Shared<N>, Rc<RefCell<N>>) {
    let rc = Rc::new(RefCell::new(n));
    (Shared(Rc::clone(&rc)), rc)
}

/// Where a [`Probe`]'s draws come from.
pub enum Source {
    /// Any source (seeded samplers, `Zero`).
    Any(Box<dyn NoiseSource>),
    /// A queue of values; [`drive`] may refill it before each step (adversarial noise).
    Script(Scripted),
}

/// A noise source that logs (scale, value) of every draw.
pub struct Probe {
    pub source: Source,
    pub log: Vec<(f64, f64)>,
}

impl NoiseSource for Probe {
    fn laplace(&mut self, scale: f64) -> tpl_mechanisms::Result<f64> {
        let v = match &mut self.source {
            Source::Any(s) => s.laplace(scale)?,
            Source::Script(s) => s.laplace(scale)?,
        };
        self.log.push((scale, v));
        Ok(v)
    }

    fn integer_valued(&self) -> bool {
        match &self.source {
            Source::Any(s) => s.integer_valued(),
            Source::Script(_) => false,
        }
    }
}

/// A probe with its handle.
pub fn probe(source: Source) -> (Shared<Probe>, Rc<RefCell<Probe>>) {
    shared(Probe { source, log: Vec::new() })
}

/// The noise of a driven run.
#[derive(Debug, Clone, Copy)]
pub enum Noise {
    /// The exact discrete Laplace from `ChaCha12Rng::seed_from_u64(seed)` (integer counts only).
    Discrete(u64),
    /// The float Laplace from `ChaCha12Rng::seed_from_u64(seed)`.
    Float(u64),
    /// Adversarial scripted noise: every test draw is ±1e9 (sign at random), every cell draw
    /// uniform in (−spread, spread); refilled before each step.
    Adversarial { seed: u64, spread: f64 },
    /// Always 0.
    Zero,
}

/// A scheme driven over a stream, with every draw logged per step.
pub struct Trace {
    pub outcomes: Vec<StepOutcome>,
    /// (scale, value) of the draws of each step, in order.
    pub draws: Vec<Vec<(f64, f64)>>,
}

impl Trace {
    /// ε_t of every step.
    pub fn budgets(&self) -> Vec<f64> {
        self.outcomes.iter().map(|o| o.spent.total()).collect()
    }

    /// Whether each step published.
    pub fn published(&self) -> Vec<bool> {
        self.outcomes.iter().map(|o| o.published).collect()
    }
}

/// Whether a scheme named `name` runs a dissimilarity test at step t ≥ 2 (unless nullified;
/// dsat at the steps whose window may still publish).
pub fn tests_from_step_2(name: &str) -> bool {
    matches!(name, "bd" | "ba" | "pba" | "dsat") || name.starts_with("ba-")
}

/// The source for a [`Noise`] choice.
pub fn source_for(noise: Noise) -> Source {
    match noise {
        Noise::Discrete(seed) => Source::Any(Box::new(DiscreteLaplace::seeded(seed))),
        Noise::Float(seed) => Source::Any(Box::new(FloatLaplace::seeded(seed))),
        Noise::Adversarial { .. } => Source::Script(Scripted::new([])),
        Noise::Zero => Source::Any(Box::new(tpl_mechanisms::Zero)),
    }
}

/// Builds scheme `kind` over a [`Probe`] for `noise`.
pub fn build(
    kind: SchemeKind,
    params: WEventParams,
    corr: PbaPool,
    noise: Noise,
) -> (Box<dyn StreamScheme>, Rc<RefCell<Probe>>) {
    let (src, handle) = probe(source_for(noise));
    (kind.build(params, LaplaceMechanism::new(src), corr).expect("the six schemes always build"), handle)
}

/// Feeds `stream` to `scheme` step by step, logging the draws of each step. For
/// [`Noise::Adversarial`] the probe's script is replaced before each step by: one test draw
/// ±1e9 if the scheme may test at that step (t ≥ 2 for bd/ba/pba/dsat), then d cell draws.
pub fn drive(
    scheme: &mut dyn StreamScheme,
    handle: &Rc<RefCell<Probe>>,
    stream: &[Vec<f64>],
    noise: Noise,
) -> Result<Trace, MechError> {
    let testing = tests_from_step_2(scheme.name());
    let mut adversary = match noise {
        Noise::Adversarial { seed, spread } => Some((ChaCha12Rng::seed_from_u64(seed), spread)),
        _ => None,
    };
    let mut trace = Trace { outcomes: Vec::new(), draws: Vec::new() };
    for (i, counts) in stream.iter().enumerate() {
        let t = i + 1;
        if let Some((rng, spread)) = adversary.as_mut() {
            let mut plan = Vec::with_capacity(counts.len() + 1);
            if testing && t >= 2 {
                plan.push(if rng.random::<bool>() { 1e9 } else { -1e9 });
            }
            for _ in 0..counts.len() {
                plan.push(rng.random_range(-*spread..*spread));
            }
            handle.borrow_mut().source = Source::Script(Scripted::new(plan));
        }
        let mark = handle.borrow().log.len();
        let outcome = scheme.step(counts)?;
        trace.draws.push(handle.borrow().log[mark..].to_vec());
        trace.outcomes.push(outcome);
    }
    Ok(trace)
}

/// A fresh scheme `kind` (always correlated, for PBA) driven over the whole of `stream`;
/// every step must succeed.
#[track_caller]
pub fn drive_fresh(kind: SchemeKind, params: WEventParams, stream: &[Vec<f64>], noise: Noise) -> Trace {
    let (mut scheme, handle) = build(kind, params, PbaPool::Always, noise);
    drive(scheme.as_mut(), &handle, stream, noise).unwrap()
}

mod trace;

// Not every test binary that includes this module checks traces.
#[allow(unused_imports)]
pub use trace::check_trace;

pub use tpl_mechanisms::test_util::exact_windows_within;

/// [`exact_windows_within`] for a trace: the printed totals ε_t, and the parts test and
/// publication as real numbers.
pub fn trace_exactly_within(w: usize, trace: &Trace, eps: f64) -> Result<(), String> {
    let totals: Vec<Vec<f64>> = trace.budgets().into_iter().map(|b| vec![b]).collect();
    exact_windows_within(w, &totals, eps, Some(ledger_max(w, &trace.budgets())))
        .map_err(|e| format!("totals: {e}"))?;
    let parts: Vec<Vec<f64>> =
        trace.outcomes.iter().map(|o| vec![o.spent.test, o.spent.publication]).collect();
    exact_windows_within(w, &parts, eps, None).map_err(|e| format!("test + publication: {e}"))
}

/// The max window sum of `budgets` by the independent [`WindowLedger`].
pub fn ledger_max(w: usize, budgets: &[f64]) -> f64 {
    let mut l = WindowLedger::new(w);
    budgets.iter().for_each(|&e| {
        l.push(e);
    });
    l.max_window_budget()
}

/// Kinds of synthetic integer streams ([`docs/w-event.md`](tpl_core::guide::w_event) §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    Constant,
    RandomWalk,
    Spikes,
    Random,
}

pub const STREAM_KINDS: [StreamKind; 4] =
    [StreamKind::Constant, StreamKind::RandomWalk, StreamKind::Spikes, StreamKind::Random];

/// A stream of T integer count vectors with d cells.
pub fn make_stream(kind: StreamKind, t_len: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let start: Vec<f64> = (0..d).map(|_| rng.random_range(0..1000u32) as f64).collect();
    let mut cur = start.clone();
    (0..t_len)
        .map(|_| match kind {
            StreamKind::Constant => start.clone(),
            StreamKind::RandomWalk => {
                for v in cur.iter_mut() {
                    *v = (*v + rng.random_range(-5i32..=5) as f64).max(0.0);
                }
                cur.clone()
            }
            StreamKind::Spikes => {
                let mut row: Vec<f64> = (0..d).map(|j| (start[j] / 10.0).floor()).collect();
                if rng.random_bool(0.05) {
                    let j = rng.random_range(0..d);
                    row[j] += rng.random_range(1_000u32..100_000) as f64;
                }
                row
            }
            StreamKind::Random => (0..d).map(|_| rng.random_range(0..10_000u32) as f64).collect(),
        })
        .collect()
}

/// A correlation predicate for PBA chosen by `pick` (Schedule entries from `seed`).
pub fn pool(pick: u8, t_len: usize, seed: u64) -> PbaPool {
    match pick % 5 {
        0 => PbaPool::Always,
        1 => PbaPool::Never,
        2 => PbaPool::Detected(true),
        3 => PbaPool::Detected(false),
        _ => {
            let mut rng = ChaCha12Rng::seed_from_u64(seed);
            PbaPool::Schedule((0..t_len).map(|_| rng.random()).collect())
        }
    }
}

/// Step kinds of a scripted decision pattern.
///
/// `F` first step (publish, no test), `P` test then publish, `S` test then skip,
/// `N` nullified (no draw), `U` publish without test (uniform/sample/laplace),
/// `R` repeat without test (sample).
pub fn script(pattern: &str, d: usize, test_publish: f64, test_skip: f64, cell: f64) -> Vec<f64> {
    let mut q = Vec::new();
    for ch in pattern.chars() {
        match ch {
            'F' | 'U' => q.extend(std::iter::repeat_n(cell, d)),
            'P' => {
                q.push(test_publish);
                q.extend(std::iter::repeat_n(cell, d));
            }
            'S' => q.push(test_skip),
            'N' | 'R' => {}
            ' ' => {}
            other => panic!("bad pattern char {other}"),
        }
    }
    q
}

/// Reads a counts file of [`docs/formats.md`](tpl_core::guide::formats) with the `csv` crate
/// (quoting, blank lines and `#` comments as that format allows): the header starts with
/// `timestamp_bucket` and the cells are the columns named `c` followed by digits; other columns
/// (labels) are skipped.
pub fn load_counts(path: &str) -> Vec<Vec<f64>> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_path(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let header = reader.headers().unwrap_or_else(|e| panic!("{path}: {e}")).clone();
    assert_eq!(&header[0], "timestamp_bucket", "{path}: header");
    let is_cell = |h: &str| h.len() > 1 && h.starts_with('c') && h[1..].bytes().all(|b| b.is_ascii_digit());
    let cols: Vec<usize> = header.iter().enumerate().filter(|(_, h)| is_cell(h)).map(|(i, _)| i).collect();
    assert!(!cols.is_empty(), "{path}: no c<digits> columns");
    reader
        .records()
        .map(|record| {
            let record = record.unwrap_or_else(|e| panic!("{path}: {e}"));
            cols.iter()
                .map(|&i| record[i].parse::<f64>().unwrap_or_else(|e| panic!("{path}: {}: {e}", &record[i])))
                .collect()
        })
        .collect()
}

/// A mechanism whose releases ignore the answer: value i of draw k is a fixed function of
/// (seed, k, i). What a scheme decides over it can depend on the counts only through
/// something other than a draw.
#[derive(Debug)]
pub struct Oblivious {
    pub seed: u64,
    pub draws: u64,
}

impl tpl_mechanisms::Mechanism for Oblivious {
    fn name(&self) -> &str {
        "oblivious"
    }

    fn validate(&self, _: &[f64]) -> tpl_mechanisms::Result<()> {
        Ok(())
    }

    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<f64> {
        Ok(d_in * budget / sensitivity)
    }

    fn sample(&mut self, answer: &[f64], _: f64, _: f64) -> tpl_mechanisms::Result<Vec<f64>> {
        self.draws += 1;
        let mut x = self.seed ^ self.draws.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Ok((0..answer.len())
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2000) as f64
            })
            .collect())
    }
}

/// Asserts that a rule's constructor refused a parameter, naming it.
#[track_caller]
pub fn assert_refused_by_name<T: std::fmt::Debug>(built: Result<T, MechError>, name: &str) {
    match built {
        Err(e @ MechError::BadSchemeParameter { .. }) => assert!(e.to_string().contains(name), "{e}"),
        other => panic!("{name}: {other:?}"),
    }
}
