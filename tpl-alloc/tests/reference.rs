//! The `alloc_upper_bound` and `alloc_quantified` cases of `testdata/tpl_cases.json`
//! (Algorithms 7 and 8 of the TKDE paper, computed outside this project) through the library.
//! Budgets and series to 1e-7 relative (they come out of a root search; the reference's two
//! methods agree to ~1e-14), and each case's guarantee must hold.

use approx::relative_eq;
use serde_json::Value;
use tpl_alloc::{Allocator, Quantified, UpperBound};
use tpl_core::test_util::correlation;
use tpl_core::{Supremum, TransitionMatrix};

const RTOL: f64 = 1e-7;

fn num(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}

fn matrix(v: &Value) -> Option<TransitionMatrix> {
    (!v.is_null()).then(|| TransitionMatrix::new(v.as_array().unwrap().iter().map(nums).collect()).unwrap())
}

fn check(kind: &str, expected_cases: usize) {
    let doc: Value = serde_json::from_str(include_str!("../../testdata/tpl_cases.json")).unwrap();
    let cases: Vec<&Value> = doc["cases"].as_array().unwrap().iter().filter(|c| c["kind"] == kind).collect();
    assert_eq!(cases.len(), expected_cases);
    let mut failures = Vec::new();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let (pb, pf) = (matrix(&case["backward"]), matrix(&case["forward"]));
        let corr = correlation(pb.as_ref(), pf.as_ref());
        let alpha = num(&case["alpha"]);
        let horizon = case["horizon"].as_u64().unwrap() as usize;
        let a = if kind == "alloc_upper_bound" {
            UpperBound::new(&corr, alpha).allocate(horizon)
        } else {
            Quantified::new(&corr, alpha).allocate(horizon)
        }
        .unwrap();
        let mut cmp = |what: &str, got: &[f64], want: Vec<f64>| {
            if got.len() != want.len() {
                failures.push(format!("{id} {what}: {} values, expected {}", got.len(), want.len()));
                return;
            }
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                if !relative_eq!(*g, *w, epsilon = 1e-12, max_relative = RTOL) {
                    failures.push(format!("{id} {what}[{i}]: {g} vs {w}"));
                }
            }
        };
        cmp("budgets", &a.budgets().to_vec(), nums(&case["budgets"]));
        cmp("bpl", a.audit.series.bpl(), nums(&case["bpl"]));
        cmp("fpl", a.audit.series.fpl(), nums(&case["fpl"]));
        cmp("tpl", &tpls(&a.audit.series), nums(&case["tpl"]));
        cmp("max_tpl", &[a.max_tpl()], vec![num(&case["max_tpl"])]);
        let sups = [a.sup_backward, a.sup_forward].map(|s| match s {
            Supremum::Bounded(v) => v,
            Supremum::Unbounded => f64::INFINITY,
        });
        cmp("sup", &sups, vec![num(&case["sup_backward"]), num(&case["sup_forward"])]);
        if !a.guarantee.holds(&a.audit) {
            failures.push(format!("{id}: guarantee {:?} fails (max TPL {})", a.guarantee, a.max_tpl()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn upper_bound_cases() {
    check("alloc_upper_bound", 6);
}

#[test]
fn quantified_cases() {
    check("alloc_quantified", 6);
}

/// TPL_1..TPL_T of a compact series.
fn tpls(s: &tpl_core::CompactSeries) -> Vec<f64> {
    (0..s.len()).map(|t| s.tpl_at(t)).collect()
}
