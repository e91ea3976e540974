//! The durable stream's promises, on scripted noise: idempotent keys, refused conflicts and
//! out-of-order keys, enforcement before noise, and resumption equal to an uninterrupted run.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tpl_core::{Correlation, TransitionMatrix};
use tpl_mechanisms::{MechError, NoiseSource, SchemeKind};
use tpl_stream::{ConfigError, DurableStream, Parameter, StreamConfig, StreamError, StreamOptions};

/// A fresh path in a fresh temporary folder (removed when the folder is dropped).
fn temp_db(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix(&format!("tpl-stream-test-{name}-")).tempdir().unwrap();
    let path = dir.path().join("s.db");
    (dir, path)
}

/// A new stream in a fresh temporary file `name`: `scheme` with ε = 1 per window of 4 steps,
/// in its own temporary folder, which lives as long as the returned guard.
fn created(name: &str, scheme: SchemeKind) -> (tempfile::TempDir, DurableStream) {
    let (dir, path) = temp_db(name);
    DurableStream::create(&path, &config(scheme, 1.0, 4)).unwrap();
    (dir, DurableStream::open(&path).unwrap())
}

fn config(scheme: SchemeKind, epsilon: f64, window: usize) -> StreamConfig {
    StreamConfig::new(scheme, epsilon, window)
}

/// [`config`] with ε = 1 under correlation: both matrices `smoothed_identity(3, smoothing)`
/// and the leakage cap `alpha`.
fn correlated(scheme: SchemeKind, window: usize, smoothing: f64, alpha: f64) -> StreamConfig {
    let p = TransitionMatrix::smoothed_identity(3, smoothing).unwrap();
    StreamConfig {
        correlation: Correlation::new(Some(p.clone()), Some(p)).unwrap(),
        alpha: Some(alpha),
        ..config(scheme, 1.0, window)
    }
}

/// Noise from one queue shared by every sampler made from it: a stream reopened any number
/// of times draws the same sequence as one kept open.
#[derive(Clone)]
struct Shared(Arc<Mutex<VecDeque<f64>>>);

impl NoiseSource for Shared {
    fn laplace(&mut self, _: f64) -> tpl_mechanisms::Result<f64> {
        self.0.lock().unwrap().pop_front().ok_or(MechError::ScriptExhausted)
    }
    fn integer_valued(&self) -> bool {
        true
    }
}

fn shared(seed: u64, n: usize) -> Shared {
    let mut x = seed;
    let values = (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) % 61) as f64 - 30.0
        })
        .collect();
    Shared(Arc::new(Mutex::new(values)))
}

fn open(path: &std::path::Path, noise: &Shared) -> DurableStream {
    let noise = noise.clone();
    StreamOptions::new().noise(move || Box::new(noise.clone())).open(path).unwrap()
}

fn counts(t: usize) -> Vec<f64> {
    vec![(t * 37 % 101) as f64, (t % 7) as f64 * 20.0, 50.0]
}

#[test]
fn a_retried_key_returns_the_stored_release_and_spends_nothing() {
    let (_dir, path) = temp_db("retry");
    DurableStream::create(&path, &config(SchemeKind::Bd, 1.0, 5)).unwrap();
    let mut s = open(&path, &shared(1, 100));
    let first = s.push(Some(10), &counts(1)).unwrap();
    let second = s.push(Some(11), &counts(2)).unwrap();
    drop(s);
    let mut s = DurableStream::open(&path).unwrap(); // fresh OS noise: a replay must not draw
    let again = s.push(Some(10), &counts(1)).unwrap();
    assert!(again.replayed);
    assert_eq!(again.record, first.record);
    assert_eq!(s.push(Some(11), &counts(2)).unwrap().record, second.record);
    assert_eq!(s.status().unwrap().budgets.len(), 2);
}

#[test]
fn the_same_key_with_other_counts_is_refused_and_changes_nothing() {
    let (_dir, mut s) = created("conflict", SchemeKind::Uniform);
    s.push(Some(0), &counts(0)).unwrap();
    let before = s.steps().unwrap();
    let e = s.push(Some(0), &counts(1)).unwrap_err();
    assert!(matches!(e, StreamError::KeyConflict { key: 0, step: 1 }), "{e}");
    assert_eq!(s.steps().unwrap(), before);
}

#[test]
fn keys_must_increase() {
    let (_dir, mut s) = created("order", SchemeKind::Uniform);
    s.push(Some(5), &counts(0)).unwrap();
    let e = s.push(Some(3), &counts(1)).unwrap_err();
    assert!(matches!(e, StreamError::KeyOrder { key: 3, last: 5 }), "{e}");
    // Rows without a key follow the last one.
    assert_eq!(s.push(None, &counts(2)).unwrap().record.key, 6);
    assert_eq!(s.steps().unwrap().len(), 2);
}

#[test]
fn every_window_of_a_long_stream_stays_within_epsilon() {
    // The schemes keep (W) by construction; the stream checks it again before every draw
    // (unit test `guard::tests::a_draw_that_would_take_a_window_over_epsilon_is_refused`)
    // and on every stored step it resumes from.
    let (_dir, path) = temp_db("window");
    DurableStream::create(&path, &config(SchemeKind::Ba, 1.0, 4)).unwrap();
    let mut s = open(&path, &shared(3, 1000));
    for t in 0..60 {
        s.push(None, &counts(t)).unwrap();
    }
    let status = s.status().unwrap();
    assert!(status.max_window_spend <= 1.0);
    assert!(status.refused.is_empty());
}

#[test]
fn a_step_that_would_take_leakage_over_alpha_repeats_the_last_release_at_zero() {
    let (_dir, path) = temp_db("alpha");
    DurableStream::create(&path, &correlated(SchemeKind::Uniform, 2, 0.05, 1.5)).unwrap();
    let mut s = open(&path, &shared(4, 1000));
    let mut refused = 0;
    for t in 0..30 {
        let r = s.push(None, &counts(t)).unwrap().record;
        if let Some(reason) = &r.refused {
            refused += 1;
            assert!(!r.published && r.spent.total() == 0.0, "{r:?}");
            assert!(reason.contains("alpha"), "{reason}");
        }
        assert!(r.max_tpl.unwrap() <= 1.5, "{r:?}");
    }
    assert!(refused > 0, "uniform at 0.5 per step must reach α = 1.5 under strong correlation");
    let status = s.status().unwrap();
    assert!(status.realized.unwrap().0 <= 1.5);
    assert_eq!(status.refused.len(), refused);
}

#[test]
fn a_first_step_over_alpha_is_refused_at_create_and_at_push_nothing_is_recorded() {
    let (_dir, path) = temp_db("first");
    let p = TransitionMatrix::smoothed_identity(3, 0.05).unwrap();
    let mut c = config(SchemeKind::Sample, 1.0, 2);
    c.correlation = Correlation::new(Some(p), None).unwrap();
    c.alpha = Some(0.5);
    let e = DurableStream::create(&path, &c).unwrap_err();
    assert!(
        matches!(&e, StreamError::Config(ConfigError::FirstStepAlpha { alpha, .. }) if *alpha == 0.5),
        "{e}"
    );
    // Named by field in the library, by flag through `message`.
    assert!(e.to_string().starts_with("alpha 0.5: step 1 could never be released"), "{e}");
    assert!(e.message(Parameter::flag).starts_with("--alpha 0.5: step 1 could never be released"), "{e}");
    assert!(!path.exists());
    // A file whose α was lowered after its creation: the push refuses step 1 and records nothing.
    c.alpha = Some(1.5);
    DurableStream::create(&path, &c).unwrap();
    rusqlite::Connection::open(&path).unwrap().execute("UPDATE params SET alpha = 0.5", []).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    assert!(matches!(s.push(None, &counts(0)), Err(StreamError::FirstRefused { .. })));
    assert!(s.steps().unwrap().is_empty());
}

#[test]
fn parameters_under_which_step_one_cannot_be_released_or_stored_create_nothing() {
    let (_dir, path) = temp_db("never");
    // ε so small that Δ/ε_1 exceeds what the sampler takes.
    let e = DurableStream::create(&path, &config(SchemeKind::Bd, 1e-300, 2)).unwrap_err();
    assert!(matches!(&e, StreamError::Config(ConfigError::StepEpsilon { .. })), "{e}");
    assert!(e.to_string().starts_with("epsilon 1e-300 (with window 2 and sensitivity 2)"), "{e}");
    assert!(
        e.message(Parameter::flag).starts_with("--epsilon 1e-300 (with --window 2 and --sensitivity 2)"),
        "{e}"
    );
    // A window beyond what the file stores (i64).
    let e = DurableStream::create(&path, &config(SchemeKind::Uniform, 1.0, usize::MAX)).unwrap_err();
    assert!(matches!(&e, StreamError::Config(ConfigError::WindowTooLarge(w)) if *w == usize::MAX), "{e}");
    assert!(e.message(Parameter::flag).starts_with(&format!("--window {}", usize::MAX)), "{e}");
    // A plan the planned scheme refuses is a plan error.
    let mut c = config(SchemeKind::Planned, 1.0, 2);
    c.budgets = vec![0.6, 0.6];
    assert!(matches!(DurableStream::create(&path, &c), Err(StreamError::Plan(_))));
    assert!(!path.exists());
    let missing = path.with_file_name("no-such-folder").join("s.db");
    let e = DurableStream::create(&missing, &config(SchemeKind::Bd, 1.0, 2)).unwrap_err();
    assert!(matches!(&e, StreamError::NoFolder { .. }) && e.to_string().contains("does not exist"), "{e}");
    let dir = path.parent().unwrap();
    assert!(
        matches!(DurableStream::open(dir), Err(StreamError::Foreign { reason, .. }) if reason.contains("directory"))
    );
}

/// A stream of 24 steps of `bd` with matrices and α = 1.4, on scripted noise.
fn audited(name: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = temp_db(name);
    DurableStream::create(&path, &correlated(SchemeKind::Bd, 4, 0.1, 1.4)).unwrap();
    let mut s = open(&path, &shared(3, 1000));
    for t in 0..24 {
        s.push(Some(t), &counts(t as usize)).unwrap();
    }
    (dir, path)
}

/// Every record is checked when the stream is read: a tampered budget, parameter, step or
/// key makes `status`, `steps` and `snapshot` fail as damaged, also where a push (which
/// reads only the last w − 1 steps) would not notice. The history's chain names the first
/// step at or after the edit; an editor who recomputes the chain (`rechain`) is still caught
/// by the check of each record.
#[test]
fn reads_check_every_record() {
    let chain = "the history's chain breaks here";
    for (sql, first, needle) in [
        ("UPDATE steps SET publication = 5.0 WHERE t = 1", "step 1: ", "stored step 1"),
        ("UPDATE steps SET test = 0.9 WHERE t = 6", "step 6: ", "stored step 6"),
        ("UPDATE params SET epsilon = 0.5", "step 1: ", "stored step"),
        ("DELETE FROM steps WHERE t = 3", "step 3 is missing", "step 3 is missing"),
        ("UPDATE steps SET key = 100 WHERE t = 2", "step 2: ", "key"),
        ("UPDATE params SET alpha = 0.6", "step 1: ", "over alpha"),
        ("UPDATE params SET scheme = 'laplace'", "step 1: ", "stored step"),
        (
            "UPDATE steps SET release = x'000000000000e03f000000000000f03f0000000000000040' WHERE t = 1",
            "step 1: ",
            "not an integer",
        ),
        (
            "UPDATE steps SET counts_mac = x'01' WHERE t = 4",
            "step 4: its counts digest",
            "step 4: its counts digest",
        ),
    ] {
        for forged in [false, true] {
            let (_dir, path) = audited("tamper");
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(&format!("PRAGMA ignore_check_constraints = ON; {sql}")).unwrap();
            drop(conn);
            if forged {
                tpl_stream::rechain(&path).unwrap();
            }
            let mut s = DurableStream::open(&path).unwrap();
            for e in [s.status().map(drop), s.steps().map(drop), s.snapshot().map(drop)] {
                match e {
                    Err(StreamError::Corrupt { reason, .. }) if forged => {
                        assert!(reason.contains(needle) && !reason.contains(chain), "{sql}: {reason}")
                    }
                    Err(StreamError::Corrupt { reason, .. }) => {
                        assert!(reason.starts_with(first), "{sql}: {reason}")
                    }
                    other => panic!("{sql} (forged: {forged}): {other:?}"),
                }
            }
        }
    }
}

/// The realised leakage of `status` is the audit of the stored budgets (as `tpl leakage
/// --budgets` computes it), not the number stored with the last step.
#[test]
fn realized_leakage_is_the_audit_of_the_stored_budgets() {
    let (_dir, path) = audited("realized");
    let mut s = DurableStream::open(&path).unwrap();
    let before = s.status().unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE steps SET max_tpl = 99, max_window_leakage = 99", [])
        .unwrap();
    tpl_stream::rechain(&path).unwrap();
    let status = s.status().unwrap();
    assert_eq!(status.realized, before.realized);
    let corr = status.config.correlation.clone();
    let effective: Vec<f64> = status
        .budgets
        .iter()
        .map(|&b| tpl_mechanisms::effective_budget(b, status.config.sensitivity))
        .collect();
    let audit = tpl_alloc::audit(&corr, tpl_core::Budgets::PerStep(effective), Some(4)).unwrap();
    assert_eq!(status.realized, Some((audit.max_tpl, audit.max_window_leakage.unwrap())));
}

/// A new handle per chunk of steps (a process per push) skips all but the last w − 1
/// recorded steps when it opens (every step is read back for dsat): its releases, spends and audited leakage (bit for bit) are
/// those of one handle kept open — with and without α, for windows of 1, 3 and 5 steps.
#[test]
fn a_resumed_stream_spends_and_releases_as_an_uninterrupted_one() {
    for (window, chunk, alpha) in [(5, 7, None), (1, 1, None), (3, 1, Some(1.2)), (5, 2, Some(1.1))] {
        let mut refused = false;
        // Every built-in scheme but planned (its own test); dsat reads every step back.
        for scheme in SchemeKind::BUILT_IN.into_iter().filter(|k| *k != SchemeKind::Planned) {
            let mut c = config(scheme, 1.0, window);
            let p = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
            let backward = alpha.is_some().then(|| p.clone());
            c.correlation = Correlation::new(backward, Some(p)).unwrap();
            c.alpha = alpha;
            let name = format!("resume-{}-{window}-{chunk}", scheme.name());
            let ((_dir_a, a), (_dir_b, b)) = (temp_db(&format!("{name}-a")), temp_db(&format!("{name}-b")));
            DurableStream::create(&a, &c).unwrap();
            DurableStream::create(&b, &c).unwrap();
            let (na, nb) = (shared(9, 2000), shared(9, 2000));
            let mut whole = open(&a, &na);
            let uninterrupted: Vec<_> =
                (0..40).map(|t| whole.push(Some(t as i64), &counts(t)).unwrap().record).collect();
            let mut resumed = Vec::new();
            for steps in (0..40).collect::<Vec<usize>>().chunks(chunk) {
                let mut s = open(&b, &nb); // a new process per chunk
                for &t in steps {
                    resumed.push(s.push(Some(t as i64), &counts(t)).unwrap().record);
                }
            }
            assert_eq!(resumed, uninterrupted, "{name}");
            refused |= uninterrupted.iter().any(|r| r.refused.is_some());
        }
        assert_eq!(refused, alpha.is_some(), "w = {window}: α must refuse steps of some scheme");
    }
}

#[test]
fn bad_parameters_create_nothing() {
    let (_dir, path) = temp_db("params");
    let mut c = config(SchemeKind::Pba, 1.0, 5);
    assert!(matches!(DurableStream::create(&path, &c), Err(StreamError::Config(_))));
    c.scheme = SchemeKind::Bd.into();
    c.alpha = Some(1.0);
    assert!(matches!(DurableStream::create(&path, &c), Err(StreamError::Config(_))));
    assert!(!path.exists());
    c.alpha = None;
    DurableStream::create(&path, &c).unwrap();
    assert!(matches!(DurableStream::create(&path, &c), Err(StreamError::Exists { .. })));
}

/// Regression: when a publication's draw failed after the step's test was drawn, the
/// stream recorded nothing, so a retry drew a fresh test on the same counts, uncounted.
/// Now the step is recorded as a repeat that spent its test, with the reason; a retry of
/// its key returns it and draws nothing. (The publication's draw happened too — its noise
/// was out of range — so the step counts it.)
#[test]
fn a_draw_that_fails_after_the_test_is_recorded_with_what_the_test_spent() {
    let (_dir, path) = temp_db("after-draw");
    DurableStream::create(&path, &config(SchemeKind::Bd, 1.0, 4)).unwrap();
    let noise = Shared(Arc::new(Mutex::new(VecDeque::from([0.0, 0.0, 2f64.powi(53)]))));
    let mut s = open(&path, &noise);
    s.push(Some(1), &[0.0]).unwrap();
    let step = s.push(Some(2), &[1000.0]).unwrap();
    assert!(!step.record.published && !step.replayed);
    // The test (1/8) and the publication's draw (1/8), which happened: both are counted.
    assert_eq!(step.record.spent.total(), 0.25);
    assert_eq!(step.record.release, vec![0.0]);
    assert!(step.record.refused.as_deref().is_some_and(|r| r.contains("a draw failed")), "{:?}", step.record);
    assert!(noise.0.lock().unwrap().is_empty());
    let again = s.push(Some(2), &[1000.0]).unwrap();
    assert!(again.replayed && again.record == step.record);
    assert_eq!(s.status().unwrap().budgets, vec![0.25, 0.25]);
}

/// Regression: `init` accepted bd/pba/ba windows whose test share s = ε/(2w) the exact
/// sampler cannot draw at (scale 2Δw/ε beyond 2^46), and every push then failed at step 2.
#[test]
fn a_window_whose_test_cannot_be_drawn_is_refused_at_creation() {
    for scheme in [SchemeKind::Bd, SchemeKind::Pba, SchemeKind::Ba] {
        let (_dir, path) = temp_db("test-scale");
        let matrix = (scheme == SchemeKind::Pba).then(|| TransitionMatrix::new(vec![vec![1.0]]).unwrap());
        let config = |w| StreamConfig {
            correlation: Correlation::new(matrix.clone(), None).unwrap(),
            ..config(scheme, 1.0, w)
        };
        let e = DurableStream::create(&path, &config(1 << 45)).unwrap_err();
        // ba publishes step 1 with one share s: it fails there already.
        let step = if scheme == SchemeKind::Ba { 1 } else { 2 };
        assert!(
            matches!(e, StreamError::Config(ConfigError::StepEpsilon { step: s, .. }) if s == step),
            "{e}"
        );
        assert!(!path.exists());
        DurableStream::create(&path, &config(1 << 40)).unwrap();
    }
    let (_dir, path) = temp_db("plan-scale");
    let planned = StreamConfig { budgets: vec![0.5, 1e-20], ..config(SchemeKind::Planned, 1.0, 2) };
    let e = DurableStream::create(&path, &planned).unwrap_err();
    assert!(e.to_string().contains("step 2 could never be released"), "{e}");
}

/// Regression: a stream with 2-state matrices took 3-cell counts and audited its α on the
/// wrong model. Every push must have one count per state; nothing is recorded otherwise.
#[test]
fn counts_of_another_width_than_the_matrices_are_refused() {
    let (_dir, path) = temp_db("width");
    let p = TransitionMatrix::new(vec![vec![0.9, 0.1], vec![0.2, 0.8]]).unwrap();
    let c = StreamConfig {
        correlation: Correlation::new(Some(p), None).unwrap(),
        alpha: Some(5.0),
        ..config(SchemeKind::Uniform, 1.0, 3)
    };
    DurableStream::create(&path, &c).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    let e = s.push(Some(1), &[1.0, 2.0, 3.0]).unwrap_err();
    assert!(matches!(e, StreamError::Width { step: 1, cells: 3, states: 2 }), "{e}");
    assert!(s.steps().unwrap().is_empty());
    s.push(Some(1), &[1.0, 2.0]).unwrap();
    assert!(matches!(s.push(Some(2), &[1.0]), Err(StreamError::Width { step: 2, cells: 1, states: 2 })));
    assert_eq!(s.steps().unwrap().len(), 1);
}

/// Messages that used to mislead: the key after 2^63 − 1 (was "key … is not after the last
/// stored key …", the same number twice), a path holding a NUL byte (was "read-only"), and a
/// negative key.
#[test]
fn edge_messages_say_what_is_wrong() {
    let (_dir, mut s) = created("edges", SchemeKind::Uniform);
    s.push(Some(i64::MAX), &counts(0)).unwrap();
    let e = s.push(None, &counts(1)).unwrap_err();
    assert!(matches!(e, StreamError::KeysExhausted { last: i64::MAX }), "{e}");
    assert!(matches!(s.push(Some(-3), &counts(1)), Err(StreamError::NegativeKey { key: -3 })));
    let nul = std::path::Path::new("bad\0name.db");
    assert!(matches!(DurableStream::open(nul), Err(StreamError::BadPath { .. })));
    assert!(matches!(
        DurableStream::create(nul, &config(SchemeKind::Uniform, 1.0, 2)),
        Err(StreamError::BadPath { .. })
    ));
}
