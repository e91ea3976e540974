//! Every case of `testdata/map_cases.json` (reference solutions computed outside this
//! project) through the library, at the library tolerances of its `schema.tolerance.library`
//! ([docs/map.md](tpl_core::guide::map) §12 "Reference cases"):
//! - `map`: |x_i − expected| ≤ 1e-12·N per cell, |F − expected| ≤ 1e-12·|expected|, λ within
//!   1e-12 when not null (and absent exactly when null);
//! - `map-integer`: x equal exactly (G equal within 1e-9 relative where
//!   `optimum_not_unique`), and G within 1e-9 relative in every case.

use serde_json::Value;
use tpl_postprocess::{map_integer_objective, map_integer_step, map_objective, map_step};

fn cases() -> (Value, Vec<Value>) {
    let doc: Value = serde_json::from_str(include_str!("../../testdata/map_cases.json")).expect("valid JSON");
    assert_eq!(doc["format"], "tpl-map-cases");
    let cases = doc["cases"].as_array().expect("cases array").clone();
    (doc, cases)
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

#[test]
fn every_map_case() {
    let (doc, cases) = cases();
    assert_eq!(cases.len() as u64, doc["counts"]["cases"].as_u64().unwrap());
    let mut failures = Vec::new();
    let (mut worst_x, mut worst_f, mut worst_l) = (0.0f64, 0.0f64, 0.0f64);
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let (r, p) = (nums(&case["r"]), nums(&case["p"]));
        let total = case["N"].as_f64().unwrap();
        let a = case["a"].as_f64().unwrap();
        assert_eq!(r.len() as u64, case["n"].as_u64().unwrap(), "{id}: n");
        let expected = &case["map"];
        let got = map_step(&r, &p, total, a).unwrap();
        for (i, (g, e)) in got.x.iter().zip(nums(&expected["x"])).enumerate() {
            worst_x = worst_x.max((g - e).abs() / total);
            if (g - e).abs() > 1e-12 * total {
                failures.push(format!("{id} map x[{i}] = {g}, expected {e} (diff {:e})", (g - e).abs()));
            }
        }
        let f = map_objective(&r, &p, a, &got.x).unwrap();
        let fe = expected["objective"].as_f64().unwrap();
        worst_f = worst_f.max((f - fe).abs() / fe.abs());
        if (f - fe).abs() > 1e-12 * fe.abs() {
            failures.push(format!("{id} map objective = {f}, expected {fe}"));
        }
        if let (Some(l), Some(le)) = (got.lambda, expected["lambda"].as_f64()) {
            worst_l = worst_l.max((l - le).abs());
        }
        match (got.lambda, expected["lambda"].as_f64()) {
            (Some(l), Some(le)) if (l - le).abs() <= 1e-12 => {}
            (None, None) => {}
            (l, le) => failures.push(format!("{id} map lambda = {l:?}, expected {le:?}")),
        }
    }
    eprintln!(
        "map: worst |x - x_ref|/N = {worst_x:e}, |F - F_ref|/|F_ref| = {worst_f:e}, |λ - λ_ref| = {worst_l:e}"
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_map_integer_case() {
    let (doc, cases) = cases();
    let with_integer: Vec<&Value> = cases.iter().filter(|c| !c["map_integer"].is_null()).collect();
    assert_eq!(with_integer.len() as u64, doc["counts"]["with_map_integer"].as_u64().unwrap());
    let mut failures = Vec::new();
    for case in with_integer {
        let id = case["id"].as_str().unwrap();
        let (r, p) = (nums(&case["r"]), nums(&case["p"]));
        let total = case["N"].as_u64().unwrap();
        let a = case["a"].as_f64().unwrap();
        let expected = &case["map_integer"];
        let want: Vec<u64> = expected["x"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let got = map_integer_step(&r, &p, total, a).unwrap();
        let g = map_integer_objective(&r, &p, a, &got).unwrap();
        let ge = expected["objective"].as_f64().unwrap();
        let objective_ok = (g - ge).abs() <= 1e-9 * ge.abs();
        if !objective_ok {
            failures.push(format!("{id} map-integer objective = {g}, expected {ge}"));
        }
        let tie_allowed = expected["optimum_not_unique"].as_bool().unwrap();
        if got != want && !(tie_allowed && objective_ok) {
            failures.push(format!("{id} map-integer x = {got:?}, expected {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
