//! What every scheme `tpl` adds from the field's benchmark set (`dsat`, `fast`;
//! [`docs/w-event.md`](tpl_core::guide::w_event) §3.10 on) keeps: the conformance check and the
//! exact window check over 600 seeded runs for every w ∈ {1, 5, 10, 40} and ε ∈ {0.1, 1, 10};
//! that no decision reads the counts except through a charged draw; and that each is a
//! built-in scheme by name, outside the default comparison set.

mod common;

use common::*;
use proptest::prelude::*;
use tpl_mechanisms::test_util::check_scheme;
use tpl_mechanisms::{PbaPool, SchemeKind, WEventParams};

/// The built-in schemes beyond the default set and `planned`.
fn added() -> Vec<SchemeKind> {
    let own = |k: &SchemeKind| SchemeKind::ALL.contains(k) || *k == SchemeKind::Planned;
    SchemeKind::BUILT_IN.into_iter().filter(|k| !own(k)).collect()
}

fn params(eps: f64, w: usize) -> WEventParams {
    WEventParams::new(eps, w, 2.0).unwrap()
}

#[test]
fn each_conforms_and_keeps_every_window_within_epsilon_exactly() {
    for kind in added() {
        for w in [1, 5, 10, 40] {
            for eps in [0.1, 1.0, 10.0] {
                let p = params(eps, w);
                let mut published = 0;
                for seed in 0..600u64 {
                    let stream_kind = STREAM_KINDS[seed as usize % STREAM_KINDS.len()];
                    let stream = make_stream(stream_kind, 3 * w + 20, 1 + seed as usize % 4, seed);
                    let build = |m| kind.build(p, m, PbaPool::Never).unwrap();
                    let report = check_scheme(build, &stream, seed)
                        .unwrap_or_else(|e| panic!("{}, w = {w}, ε = {eps}, seed {seed}: {e}", kind.name()));
                    assert!(report.resumable);
                    published += report.published;
                }
                // More than the first step of each run publishes: the scheme does decide.
                assert!(published > 600, "{}, w = {w}, ε = {eps}: {published} publications", kind.name());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Two streams of the same width, one mechanism whose releases ignore the counts: every
    /// decision and every release is the same, so no decision read the counts but by a draw.
    #[test]
    fn each_reads_the_counts_only_through_its_draws(
        pick in 0usize..8,
        seed in any::<u64>(),
        w in 1usize..30,
        d in 1usize..5,
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let kinds = added();
        let kind = kinds[pick % kinds.len()];
        let p = params(1.0, w);
        let (sa, sb) = (make_stream(StreamKind::Random, 90, d, a), make_stream(StreamKind::Spikes, 90, d, b));
        let mut x = kind.build(p, Oblivious { seed, draws: 0 }, PbaPool::Never).unwrap();
        let mut y = kind.build(p, Oblivious { seed, draws: 0 }, PbaPool::Never).unwrap();
        for (ca, cb) in sa.iter().zip(&sb) {
            prop_assert_eq!(x.step(ca).unwrap(), y.step(cb).unwrap(), "{}", kind.name());
        }
    }
}

#[test]
fn each_is_a_built_in_scheme_by_name_outside_the_default_set() {
    assert_eq!(added(), [SchemeKind::Dsat, SchemeKind::Fast]);
    for kind in added() {
        assert_eq!(SchemeKind::from_name(kind.name()), Some(kind));
        let p = params(1.0, 4);
        let mut s = kind.build(p, Oblivious { seed: 1, draws: 0 }, PbaPool::Never).unwrap();
        assert_eq!(s.memory(), None, "{}: its state depends on every step", kind.name());
        let first = s.step(&[3.0, 4.0]).unwrap();
        let mut fresh = kind.build(p, Oblivious { seed: 1, draws: 0 }, PbaPool::Never).unwrap();
        let err = fresh.resume(10, (1, &first)).unwrap_err();
        assert!(err.to_string().contains("first step"), "{err}");
        assert_eq!(fresh.steps(), 0, "a refused resume changes nothing");
    }
}
