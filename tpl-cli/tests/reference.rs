//! The reference cases (`testdata/tpl_cases.json`) through the built binary: L(α), leakage
//! series and suprema as the CLI prints them.

mod common;

use common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Reference values (testdata/tpl_cases.json) through the CLI
// ---------------------------------------------------------------------------------------------

#[test]
fn reference_cases_through_the_cli() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/tpl_cases.json");
    let text = std::fs::read_to_string(path).expect("read testdata/tpl_cases.json");
    let file: Value = serde_json::from_str(&text).expect("parse tpl_cases.json");
    let abs = file["tolerance"]["abs"].as_f64().unwrap();
    let rel = file["tolerance"]["rel"].as_f64().unwrap();
    let within = |a: f64, e: f64| (a - e).abs() <= abs + rel * e.abs();
    let d = Scratch::new("reference");
    let mut checked = 0;
    for case in file["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let fname = id.replace('/', "_");
        let write_matrix = |key: &str| -> Option<String> {
            (!case[key].is_null()).then(|| d.file(&format!("{fname}_{key}.json"), &case[key].to_string()))
        };
        match case["kind"].as_str().unwrap() {
            "loss" => {
                let m = write_matrix("matrix").unwrap();
                let alphas = nums(case, "alpha");
                let got = loss_of(&m, &alphas);
                for (k, (g, e)) in got.iter().zip(nums(case, "loss")).enumerate() {
                    assert!(within(*g, e), "{id}: L({}) = {g}, expected {e}", alphas[k]);
                }
            }
            "bpl_series" => {
                let m = write_matrix("matrix").unwrap();
                let b = d.file(&format!("{fname}_eps.json"), &case["epsilon"].to_string());
                let out = json(&["leakage", "--backward", &m, "--budgets", &b]);
                check_leakage(&out, &nums(case, "epsilon"));
                for (t, (g, e)) in nums(&out, "bpl").iter().zip(nums(case, "bpl")).enumerate() {
                    assert!(within(*g, e), "{id}: BPL_{} = {g}, expected {e}", t + 1);
                }
            }
            "tpl_series" => {
                let b = d.file(&format!("{fname}_eps.json"), &case["epsilon"].to_string());
                let mut args = vec!["leakage".to_string(), "--budgets".into(), b];
                if let Some(pb) = write_matrix("backward") {
                    args.extend(["--backward".into(), pb]);
                }
                if let Some(pf) = write_matrix("forward") {
                    args.extend(["--forward".into(), pf]);
                }
                let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                let out = json(&refs);
                check_leakage(&out, &nums(case, "epsilon"));
                for key in ["bpl", "fpl", "tpl"] {
                    for (t, (g, e)) in nums(&out, key).iter().zip(nums(case, key)).enumerate() {
                        assert!(within(*g, e), "{id}: {key}_{} = {g}, expected {e}", t + 1);
                    }
                }
            }
            "supremum" => {
                let m = write_matrix("matrix").unwrap();
                let eps = num(case, "epsilon");
                let out = json(&["supremum", "--matrix", &m, "--epsilon", &s(eps)]);
                assert_eq!(num(&out, "epsilon"), eps, "{id}: epsilon echoed");
                let bounded = case["bounded"].as_bool().unwrap();
                assert_eq!(out["bounded"].as_bool(), Some(bounded), "{id}: bounded");
                if bounded {
                    let (g, e) = (num(&out, "supremum"), num(case, "supremum"));
                    assert!(within(g, e), "{id}: supremum {g}, expected {e}");
                } else {
                    assert!(out["supremum"].is_null(), "{id}: unbounded supremum must be null");
                }
            }
            _ => continue,
        }
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} reference cases were run");
}
