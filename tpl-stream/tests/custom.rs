//! A durable stream of a custom scheme: created with its factory, reopened with it (the
//! recorded steps restored into the rebuilt scheme), refused without it.

use std::sync::Arc;

use tpl_mechanisms::{DecisionRule, Mechanism, Scheme, Step, StepBudget, StepOutcome, WEventParams};
use tpl_stream::{
    DurableStream, NamedFactory, SchemeChoice, SchemeFactory, StreamConfig, StreamError, default_key_path,
    scheme_factory,
};

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
            let p = self.share(cx.params);
            cx.publish(StepBudget::fresh(p))
        } else {
            cx.repeat(StepBudget::default())
        }
    }

    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        if (t - 1).is_multiple_of(self.every) { self.share(params) } else { 0.0 }
    }

    fn max_step_budget(&self, params: &WEventParams) -> f64 {
        self.share(params)
    }
}

/// The factory of the `every` rule, under `name`.
fn every(name: &str) -> Arc<NamedFactory> {
    Arc::new(scheme_factory(name, |params, _, mechanism| {
        Ok(Box::new(Scheme::with_rule(params, mechanism, Every { every: 3 })))
    }))
}

#[test]
fn a_custom_scheme_stream_reopens_with_its_factory_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("custom.db");
    let key = default_key_path(&path);
    let config = StreamConfig::new(SchemeChoice::Custom("every".into()), 1.0, 6);
    DurableStream::create_custom(&path, &config, &key, &*every("every")).unwrap();
    let factory: Arc<dyn SchemeFactory> = every("every");
    let mut first = DurableStream::open_custom(&path, &key, Arc::clone(&factory)).unwrap();
    for t in 1..=4 {
        let pushed = first.push(Some(t), &[10.0, 20.0]).unwrap();
        assert_eq!(pushed.record.published, (t - 1) % 3 == 0, "step {t}");
    }
    drop(first);
    // Another handle, as another process would: the recorded steps restore into a fresh scheme.
    let mut second = DurableStream::open_custom(&path, &key, factory).unwrap();
    let published: Vec<bool> =
        (7..=9).map(|key| second.push(Some(key), &[11.0, 19.0]).unwrap().record.published).collect();
    assert_eq!(published, [false, false, true], "steps 5–7 continue the period of steps 1–4");
    let status = second.status().unwrap();
    assert_eq!(status.config.scheme, SchemeChoice::Custom("every".into()));
    assert_eq!(status.budgets.len(), 7);
    assert!(status.max_window_spend <= 1.0);

    match DurableStream::open(&path) {
        Err(e @ StreamError::NeedsFactory { .. }) => assert!(e.to_string().contains("\"every\""), "{e}"),
        other => panic!("{:?}", other.err()),
    }
    let other: Arc<dyn SchemeFactory> = every("another");
    match DurableStream::open_custom(&path, &key, other) {
        Err(e) => assert!(e.to_string().contains("the factory given builds \"another\""), "{e}"),
        Ok(_) => panic!("opened with another scheme's factory"),
    }
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
    let e =
        DurableStream::create_custom(&path, &config, &default_key_path(&path), &*every("bd")).unwrap_err();
    assert!(e.to_string().contains("built-in"), "{e}");
    assert!(!path.exists());
}
