//! A durable stream of a custom scheme or mechanism: created with its builder, reopened with
//! it (the recorded steps restored into the rebuilt scheme), refused without it; a scheme that
//! draws elsewhere than through the mechanism it is handed is refused as such.

use std::sync::{Arc, Mutex};

use tpl_mechanisms::{
    Bd, DecisionRule, DiscreteLaplace, LaplaceMechanism, Mechanism, NamedMechanism, NamedScheme, NoiseSource,
    Scheme, SchemeKind, Step, StepBudget, StepOutcome, WEventParams, mechanism_builder, scheme_builder,
};
use tpl_stream::{DurableStream, SchemeChoice, StreamConfig, StreamError, StreamOptions};

/// Publishes every `every`-th step with ε/⌈w/every⌉ (a sampled scheme of another period).
struct Every {
    every: usize,
}

impl Every {
    fn share(&self, params: &WEventParams) -> f64 {
        let grid = params.grid();
        grid.share(grid.epsilon(), params.window().div_ceil(self.every))
    }
}

impl DecisionRule for Every {
    fn name(&self) -> &str {
        "every"
    }

    fn spends_its_caps(&self) -> bool {
        true
    }

    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> tpl_mechanisms::Result<StepOutcome> {
        if (cx.t() - 1).is_multiple_of(self.every) {
            let p = self.share(cx.params());
            cx.publish(StepBudget::fresh(p))
        } else {
            cx.repeat(StepBudget::default())
        }
    }

    /// Stateless: step t publishes when t − 1 is a multiple of the period.
    fn restore(&mut self, _: &WEventParams, _: usize, _: &StepOutcome) {}

    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        if (t - 1).is_multiple_of(self.every) { self.share(params) } else { 0.0 }
    }

    fn max_step_budget(&self, params: &WEventParams) -> f64 {
        self.share(params)
    }
}

/// The builder of the `every` rule, under `name`.
fn every(name: &str) -> Arc<NamedScheme> {
    Arc::new(scheme_builder(name, |params, _, mechanism| {
        Ok(Box::new(Scheme::with_rule(params, mechanism, Every { every: 3 })))
    }))
}

#[test]
fn a_custom_scheme_stream_reopens_with_its_builder_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("custom.db");
    let builder = every("every");
    let options = StreamOptions::new().scheme(Arc::clone(&builder));
    options.create(&path, &StreamConfig::new(&*builder, 1.0, 6)).unwrap();
    let mut first = options.open(&path).unwrap();
    for t in 1..=4 {
        let pushed = first.push(Some(t), &[10.0, 20.0]).unwrap();
        assert_eq!(pushed.record.published, (t - 1) % 3 == 0, "step {t}");
    }
    drop(first);
    // Another handle, as another process would: the recorded steps restore into a fresh scheme.
    let mut second = StreamOptions::new().scheme(every("every")).open(&path).unwrap();
    let published: Vec<bool> =
        (7..=9).map(|key| second.push(Some(key), &[11.0, 19.0]).unwrap().record.published).collect();
    assert_eq!(published, [false, false, true], "steps 5–7 continue the period of steps 1–4");
    let status = second.status().unwrap();
    assert_eq!(status.config.scheme, SchemeChoice::Custom("every".into()));
    assert_eq!(status.config.mechanism, None);
    assert_eq!(status.budgets.len(), 7);
    assert!(status.max_window_spend <= 1.0);

    match DurableStream::open(&path) {
        Err(e @ StreamError::NeedsScheme { .. }) => assert!(e.to_string().contains("\"every\""), "{e}"),
        other => panic!("{:?}", other.err()),
    }
    match StreamOptions::new().scheme(every("another")).open(&path) {
        Err(e) => assert!(e.to_string().contains("the builder given builds \"another\""), "{e}"),
        Ok(_) => panic!("opened with another scheme's builder"),
    }
}

/// Laplace noise whose every draw adds its budget to a shared total.
struct Counted {
    inner: LaplaceMechanism<Box<dyn NoiseSource + Send>>,
    drawn: Arc<Mutex<f64>>,
}

impl Mechanism for Counted {
    fn name(&self) -> &str {
        "counted"
    }
    fn validate(&self, answer: &[f64]) -> tpl_mechanisms::Result<()> {
        self.inner.validate(answer)
    }
    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<f64> {
        self.inner.privacy_map(d_in, sensitivity, budget)
    }
    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<Vec<f64>> {
        *self.drawn.lock().unwrap() += budget;
        self.inner.sample(answer, sensitivity, budget)
    }
}

fn counted(drawn: &Arc<Mutex<f64>>) -> NamedMechanism {
    let drawn = Arc::clone(drawn);
    mechanism_builder("counted", move |noise| {
        Box::new(Counted { inner: LaplaceMechanism::new(noise), drawn: Arc::clone(&drawn) })
    })
}

/// Regression (issue 40): a stream could not release through an application's mechanism; a
/// builder that used one made the first push fail as a damaged file.
#[test]
fn a_stream_releases_through_an_applications_mechanism_and_records_its_draws() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.db");
    let drawn = Arc::new(Mutex::new(0.0));
    let options = StreamOptions::new().mechanism(counted(&drawn));
    options.create(&path, &StreamConfig::new(SchemeKind::Bd, 1.0, 5)).unwrap();
    // The dry run of `create` goes through the mechanism too, with noise that draws nothing.
    *drawn.lock().unwrap() = 0.0;
    let mut s = options.open(&path).unwrap();
    let mut recorded = 0.0;
    for key in 1..=12 {
        recorded += s.push(Some(key), &[(key % 4 * 9) as f64, 3.0]).unwrap().record.spent.total();
    }
    assert!(recorded > 0.0);
    assert_eq!(*drawn.lock().unwrap(), recorded, "the ledger records what the mechanism drew");
    let status = s.status().unwrap();
    assert_eq!(status.config.mechanism.as_deref(), Some("counted"));
    assert_eq!(status.format_version, tpl_stream::FORMAT_VERSION);
    drop(s);
    // The stored name binds the stream to its mechanism.
    match DurableStream::open(&path) {
        Err(e @ StreamError::NeedsMechanism { .. }) => assert!(e.to_string().contains("\"counted\""), "{e}"),
        other => panic!("{:?}", other.err()),
    }
    let other = mechanism_builder("other", |noise| Box::new(LaplaceMechanism::new(noise)));
    assert!(matches!(
        StreamOptions::new().mechanism(other).open(&path),
        Err(StreamError::NeedsMechanism { .. })
    ));
    // The chain covers the name: an edit of it is damage.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE meta SET value = 'other' WHERE name = 'mechanism'", []).unwrap();
    drop(conn);
    let other = mechanism_builder("other", |noise| Box::new(LaplaceMechanism::new(noise)));
    let edited = StreamOptions::new().mechanism(other).open(&path).and_then(|mut s| s.status());
    assert!(matches!(edited, Err(StreamError::Corrupt { .. })), "{edited:?}");
    // So does the format: read as format 3, which has no mechanism, the chain breaks.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE meta SET value = 'counted' WHERE name = 'mechanism'", []).unwrap();
    conn.pragma_update(None, "user_version", 3).unwrap();
    drop(conn);
    let downgraded = DurableStream::open(&path).and_then(|mut s| s.status());
    assert!(matches!(downgraded, Err(StreamError::Corrupt { .. })), "{downgraded:?}");
}

/// Regression (issue 40): a scheme that draws from a mechanism of its own, not the one the
/// stream hands it, was reported as a damaged file at its first push.
#[test]
fn a_scheme_that_draws_elsewhere_is_refused_with_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("liar.db");
    let liar = scheme_builder("own-noise", |params, _, _handed| {
        Ok(Box::new(Bd::new(params, LaplaceMechanism::new(DiscreteLaplace::seeded(1)))))
    });
    let config = StreamConfig::new(&liar, 1.0, 5);
    match StreamOptions::new().scheme(liar).create(&path, &config) {
        Err(StreamError::SchemeSpend { scheme, step: 1, reported, drawn }) => {
            assert_eq!(scheme, "own-noise");
            assert!(reported > 0.0 && drawn == 0.0, "{reported} {drawn}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!path.exists());
}

/// A stream handle may move to another thread (a pool, a Python object) with its scheme.
#[test]
fn a_stream_handle_is_send() {
    fn send<T: Send>() {}
    send::<DurableStream>();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("moved.db");
    DurableStream::create(&path, &StreamConfig::new(tpl_mechanisms::SchemeKind::Bd, 1.0, 4)).unwrap();
    let mut stream = DurableStream::open(&path).unwrap();
    stream.push(Some(1), &[3.0, 4.0]).unwrap();
    let steps = std::thread::spawn(move || {
        stream.push(Some(2), &[3.0, 5.0]).unwrap();
        stream.status().unwrap().budgets.len()
    });
    assert_eq!(steps.join().unwrap(), 2);
}

#[test]
fn a_custom_scheme_may_not_take_a_built_in_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let config = StreamConfig::new(SchemeChoice::Custom("bd".into()), 1.0, 6);
    let e = StreamOptions::new().scheme(every("bd")).create(&path, &config).unwrap_err();
    assert!(e.to_string().contains("built-in"), "{e}");
    let laplace = mechanism_builder("laplace", |noise| Box::new(LaplaceMechanism::new(noise)));
    let e = StreamOptions::new().mechanism(laplace).create(&path, &StreamConfig::new(SchemeKind::Bd, 1.0, 6));
    assert!(e.unwrap_err().to_string().contains("built-in"));
    assert!(!path.exists());
}
