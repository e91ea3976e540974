//! Every case of `testdata/tpl_cases.json` (computed outside this project by the authors'
//! code and an independent LP solver; `testdata/REFERENCE_README.md`) checked through the
//! library API.
//!
//! Tolerances: 1e-9 relative for values computed directly (L, series) and 1e-7 for values
//! from a root search — the reference values agree between two independent methods to about
//! 1e-13, so these are far inside the file's own 1e-6 and still leave room for our
//! (different) summation order.

use approx::relative_eq;
use serde_json::Value;
use tpl_core::test_util::correlation;
use tpl_core::{
    Budgets, CompactSeries, DirectLoss, LeakageSeries, LossEvaluator, PairTableLoss, PiecewiseLoss, Supremum,
    TransitionMatrix,
};

const RTOL_DIRECT: f64 = 1e-9;
const RTOL_SEARCH: f64 = 1e-7;
const ATOL: f64 = 1e-12;

fn cases() -> Vec<Value> {
    let text = include_str!("../../testdata/tpl_cases.json");
    let doc: Value = serde_json::from_str(text).expect("reference file is valid JSON");
    doc["cases"].as_array().expect("cases array").clone()
}

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "inf" => f64::INFINITY,
        other => other.as_f64().expect("number"),
    }
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}

fn matrix(v: &Value) -> Option<TransitionMatrix> {
    if v.is_null() {
        return None;
    }
    let rows = v.as_array().unwrap().iter().map(nums).collect();
    Some(TransitionMatrix::new(rows).expect("reference matrices are valid"))
}

fn check_all(id: &str, what: &str, actual: &[f64], expected: &[f64], rtol: f64, failures: &mut Vec<String>) {
    assert_eq!(actual.len(), expected.len(), "{id} {what}: length");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        if !relative_eq!(*a, *e, epsilon = ATOL, max_relative = rtol) {
            failures.push(format!("{id} {what}[{i}]: {a} vs expected {e}"));
        }
    }
}

fn of_kind(kind: &str) -> Vec<Value> {
    cases().into_iter().filter(|c| c["kind"] == kind).collect()
}

/// Runs `check(id, case, failures)` on every reference case of `kind` (there must be `count`)
/// and fails with every mismatch recorded, not only the first.
fn check_cases(kind: &str, count: usize, check: impl Fn(&str, &Value, &mut Vec<String>)) {
    let mut failures = Vec::new();
    let cases = of_kind(kind);
    assert_eq!(cases.len(), count);
    for case in &cases {
        check(case["id"].as_str().unwrap(), case, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn loss_cases_all_three_evaluators() {
    check_cases("loss", 14, |id, case, failures| {
        let m = matrix(&case["matrix"]).unwrap();
        let alpha = nums(&case["alpha"]);
        let expected = nums(&case["loss"]);
        let evaluators: [(&str, Box<dyn LossEvaluator>); 3] = [
            ("direct", Box::new(DirectLoss::new(&m))),
            ("pair-table", Box::new(PairTableLoss::new(&m))),
            ("piecewise", Box::new(PiecewiseLoss::new(&m))),
        ];
        for (name, ev) in evaluators {
            let got: Vec<f64> = alpha.iter().map(|&a| ev.loss(a)).collect();
            check_all(id, name, &got, &expected, RTOL_DIRECT, failures);
        }
    });
}

#[test]
fn bpl_series_cases() {
    check_cases("bpl_series", 20, |id, case, failures| {
        let m = matrix(&case["matrix"]).unwrap();
        let eps = nums(&case["epsilon"]);
        let s = LeakageSeries::new(&correlation(Some(&m), None), &eps).unwrap();
        check_all(id, "bpl", s.bpl(), &nums(&case["bpl"]), RTOL_DIRECT, failures);
        check_all(id, "fpl", s.fpl(), &eps, RTOL_DIRECT, failures);
        // The direct evaluator gives the same series.
        let direct = DirectLoss::new(&m);
        let s2 = LeakageSeries::from(
            CompactSeries::compute(Some(&direct), None, Budgets::PerStep(eps.clone())).unwrap(),
        );
        check_all(id, "bpl (direct)", s2.bpl(), &nums(&case["bpl"]), RTOL_DIRECT, failures);
    });
}

#[test]
fn tpl_series_cases() {
    check_cases("tpl_series", 16, |id, case, failures| {
        let (pb, pf) = (matrix(&case["backward"]), matrix(&case["forward"]));
        let eps = nums(&case["epsilon"]);
        let s = LeakageSeries::new(&correlation(pb.as_ref(), pf.as_ref()), &eps).unwrap();
        for field in ["bpl", "fpl", "tpl"] {
            let got = match field {
                "bpl" => &s.bpl(),
                "fpl" => &s.fpl(),
                _ => &s.tpl(),
            };
            check_all(id, field, got, &nums(&case[field]), RTOL_DIRECT, failures);
        }
    });
}

#[test]
fn supremum_cases() {
    check_cases("supremum", 15, |id, case, failures| {
        let (expected, eps) = (num(&case["supremum"]), num(&case["epsilon"]));
        let got = PiecewiseLoss::new(&matrix(&case["matrix"]).unwrap()).supremum(eps).unwrap();
        match (got, expected.is_finite()) {
            (Supremum::Unbounded, false) => {}
            (Supremum::Bounded(v), true) => {
                if !relative_eq!(v, expected, epsilon = ATOL, max_relative = RTOL_SEARCH) {
                    failures.push(format!("{id}: supremum {v} vs {expected}"));
                }
                let iterated = num(&case["iterated"]["value"]);
                if !relative_eq!(v, iterated, epsilon = ATOL, max_relative = RTOL_SEARCH) {
                    failures.push(format!("{id}: supremum {v} vs iterated {iterated}"));
                }
            }
            (g, _) => failures.push(format!("{id}: got {g:?}, expected {expected}")),
        }
    });
}

#[test]
fn loss_function_cases_segments_and_spots() {
    check_cases("loss_function", 3, |id, case, failures| {
        let m = matrix(&case["matrix"]).unwrap();
        let l = PiecewiseLoss::new(&m);
        let alpha_max = num(&case["alpha_max"]);
        let segs = l.segments(alpha_max);
        let expected = case["segments"].as_array().unwrap();
        if segs.len() != expected.len() {
            failures.push(format!("{id}: {} segments, expected {}: {segs:?}", segs.len(), expected.len()));
            return;
        }
        for (k, (s, e)) in segs.iter().zip(expected).enumerate() {
            let pairs = [
                ("alpha_from", s.alpha_from, num(&e["alpha_from"]), 1e-6),
                ("alpha_to", s.alpha_to, num(&e["alpha_to"]), 1e-6),
                ("q", s.q, num(&e["q"]), 1e-12),
                ("d", s.d, num(&e["d"]), 1e-12),
            ];
            for (what, a, b, tol) in pairs {
                if (a - b).abs() > tol {
                    failures.push(format!("{id} segment {k} {what}: {a} vs {b}"));
                }
            }
        }
        let spots: Vec<f64> = nums(&case["spot_alpha"]).iter().map(|&a| l.loss(a)).collect();
        check_all(id, "spot", &spots, &nums(&case["spot_loss"]), RTOL_DIRECT, failures);
    });
}
