//! Outside-in tests of the `tpl` binary: the JSON/CSV contract of DESIGN.md ("The `tpl`
//! command-line contract"), the file formats, and the error conventions of STYLE.md
//! ("Command-line conventions": exit 2 for bad input or usage, nothing on stdout, one line on
//! stderr naming the file, line, flag and value at fault, never a panic).
//!
//! Every test runs the real binary with `std::process::Command`; inputs are written to a
//! per-test folder under the system temporary directory that is removed when the test ends.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// 1. JSON contract: loss
// ---------------------------------------------------------------------------------------------

#[test]
fn loss_json_known_values_and_alpha_echoed_in_order() {
    let d = Scratch::new("loss_json_known");
    let m = d.file("ex4.csv", EXAMPLE4);
    let out = json(&[
        "loss", "--matrix", &m, "--alpha", "30", "--alpha", "1", "--alpha", "0", "--alpha", "1000",
        "--alpha", "1", "--alpha", "0.5",
    ]);
    assert_eq!(
        nums(&out, "alpha"),
        vec![30.0, 1.0, 0.0, 1000.0, 1.0, 0.5],
        "alpha echoed in the given order"
    );
    let loss = nums(&out, "loss");
    assert_eq!(loss.len(), 6);
    assert_close(loss[0], 1.6094379124333535, 1e-12, "L(30)");
    assert_close(loss[1], 0.4943335144572836, 1e-12, "L(1)");
    assert_eq!(loss[2], 0.0, "L(0) = 0");
    assert!(loss[3].is_finite(), "L(1000) must be finite");
    // L saturates at log max_k (q_k/d_k) = log(0.5/0.1) for this matrix.
    assert_close(loss[3], 5f64.ln(), 1e-12, "L(1000)");
    assert_eq!(loss[4], loss[1], "the same α twice gives the same L");
    // Each value must belong to its own α: compare with single-α runs.
    for (a, l) in [("0.5", loss[5]), ("30", loss[0])] {
        let single = json(&["loss", "--matrix", &m, "--alpha", a]);
        assert_eq!(nums(&single, "alpha"), vec![a.parse::<f64>().unwrap()]);
        assert_eq!(nums(&single, "loss"), vec![l], "L({a}) alone vs in a list");
    }
}

#[test]
fn loss_json_identity_is_alpha_exactly_and_uniform_rows_give_zero() {
    let d = Scratch::new("loss_identity_uniform");
    let id = d.file("id.csv", IDENTITY3);
    let alphas = ["0", "0.01", "0.1", "0.5", "1", "2", "5", "30", "1000"];
    let mut args = vec!["loss", "--matrix", id.as_str()];
    for a in &alphas {
        args.extend(["--alpha", a]);
    }
    let out = json(&args);
    let expect: Vec<f64> = alphas.iter().map(|a| a.parse().unwrap()).collect();
    assert_eq!(nums(&out, "alpha"), expect);
    assert_eq!(nums(&out, "loss"), expect, "identity: L(α) = α exactly");

    let third = "0.3333333333333333";
    let uniform = d.file("uniform.csv", &format!("{third} {third} {third}\n").repeat(3));
    let same = d.file("same.json", "[[0.2,0.3,0.5],[0.2,0.3,0.5],[0.2,0.3,0.5]]");
    for m in [&uniform, &same] {
        let mut args = vec!["loss", "--matrix", m.as_str()];
        for a in &alphas {
            args.extend(["--alpha", a]);
        }
        let out = json(&args);
        assert_eq!(nums(&out, "alpha"), expect);
        assert_eq!(nums(&out, "loss"), vec![0.0; alphas.len()], "identical rows: L ≡ 0 exactly ({m})");
    }
}

#[test]
fn loss_json_fig3_matrix() {
    let d = Scratch::new("loss_fig3");
    let m = d.file("fig3.json", FIG3);
    let out = json(&["loss", "--matrix", &m, "--alpha", "1", "--alpha", "30", "--alpha", "1000"]);
    let loss = nums(&out, "loss");
    assert_close(loss[0], 0.8648397251631904, 1e-12, "L(1)");
    assert_close(loss[1], 29.776856448685816, 1e-12, "L(30)");
    assert!(loss[2].is_finite() && loss[2] > 999.0 && loss[2] < 1000.0, "L(1000) = {}", loss[2]);
}

// ---------------------------------------------------------------------------------------------
// 1. JSON contract: leakage
// ---------------------------------------------------------------------------------------------

/// The invariants every leakage JSON output must satisfy; returns (eps, bpl, fpl, tpl).
#[track_caller]
fn check_leakage(out: &Value, expected_eps: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let t_len = expected_eps.len();
    let t: Vec<u64> = out["t"]
        .as_array()
        .unwrap_or_else(|| panic!("\"t\" must be an array in {out}"))
        .iter()
        .map(|x| x.as_u64().unwrap_or_else(|| panic!("\"t\" must hold integers in {out}")))
        .collect();
    assert_eq!(t, (1..=t_len as u64).collect::<Vec<_>>(), "t = [1..T]");
    let eps = nums(out, "epsilon");
    assert_eq!(eps, expected_eps, "epsilon echoes the audited budget sequence");
    let bpl = nums(out, "bpl");
    let fpl = nums(out, "fpl");
    let tpl = nums(out, "tpl");
    assert_eq!((bpl.len(), fpl.len(), tpl.len()), (t_len, t_len, t_len), "one value per step");
    for i in 0..t_len {
        assert_close(tpl[i], bpl[i] + fpl[i] - eps[i], 1e-12, &format!("TPL_{} = BPL + FPL − ε", i + 1));
        assert!(bpl[i] >= eps[i] - 1e-15 && fpl[i] >= eps[i] - 1e-15, "leakage ≥ ε at t = {}", i + 1);
    }
    assert_eq!(bpl[0], eps[0], "BPL_1 = ε_1");
    assert_eq!(fpl[t_len - 1], eps[t_len - 1], "FPL_T = ε_T");
    (eps, bpl, fpl, tpl)
}

/// L of `matrix` at each α, through `tpl loss`.
fn loss_of(matrix: &str, alphas: &[f64]) -> Vec<f64> {
    let strs: Vec<String> = alphas.iter().map(|a| s(*a)).collect();
    let mut args = vec!["loss", "--matrix", matrix];
    for a in &strs {
        args.extend(["--alpha", a.as_str()]);
    }
    let out = json(&args);
    assert_eq!(nums(&out, "alpha"), alphas);
    nums(&out, "loss")
}

#[test]
fn leakage_json_both_matrices_follows_the_recursions() {
    let d = Scratch::new("leakage_both");
    let pb = d.file("pb.csv", EXAMPLE4);
    let pf = d.file("pf.csv", "0.8 0.1 0.1\n0.2 0.7 0.1\n0.1 0.2 0.7\n"); // same states as P_B
    let out = json(&["leakage", "--backward", &pb, "--forward", &pf, "--epsilon", "0.1", "--horizon", "12"]);
    let (eps, bpl, fpl, _) = check_leakage(&out, &[0.1; 12]);
    assert!(
        out.get("window").is_none() && out.get("window_leakage").is_none(),
        "no window fields without --window"
    );
    // BPL_t = L_B(BPL_{t−1}) + ε_t and FPL_t = L_F(FPL_{t+1}) + ε_t, checked through `tpl loss`.
    let lb = loss_of(&pb, &bpl[..11]);
    let lf = loss_of(&pf, &fpl[1..]);
    for i in 1..12 {
        assert_close(bpl[i], lb[i - 1] + eps[i], 1e-12, &format!("BPL_{}", i + 1));
        assert_close(fpl[i - 1], lf[i - 1] + eps[i - 1], 1e-12, &format!("FPL_{i}"));
    }
    // Known value: BPL_2 = L(0.1) + 0.1 for Example 4.
    assert_close(bpl[1], 0.05021976398445402 + 0.1, 1e-12, "BPL_2");
}

#[test]
fn leakage_json_only_backward_only_forward_and_neither() {
    let d = Scratch::new("leakage_sides");
    let m = d.file("ex4.csv", EXAMPLE4);
    let eps = [0.1; 6];

    let b = json(&["leakage", "--backward", &m, "--epsilon", "0.1", "--horizon", "6"]);
    let (_, bpl, fpl, tpl) = check_leakage(&b, &eps);
    assert_eq!(fpl, eps, "no forward matrix: FPL = ε");
    for i in 0..6 {
        assert_close(tpl[i], bpl[i], 1e-12, "no forward matrix: TPL = BPL");
    }
    assert!(bpl[5] > bpl[0], "backward leakage accumulates");

    let f = json(&["leakage", "--forward", &m, "--epsilon", "0.1", "--horizon", "6"]);
    let (_, bpl_f, fpl_f, tpl_f) = check_leakage(&f, &eps);
    assert_eq!(bpl_f, eps, "no backward matrix: BPL = ε");
    for i in 0..6 {
        assert_close(tpl_f[i], fpl_f[i], 1e-12, "no backward matrix: TPL = FPL");
    }
    // Same matrix, same constant budget: FPL is BPL read backwards.
    let reversed: Vec<f64> = bpl.iter().rev().copied().collect();
    for i in 0..6 {
        assert_close(fpl_f[i], reversed[i], 1e-12, "FPL mirrors BPL");
    }

    let n = json(&["leakage", "--epsilon", "0.1", "--horizon", "6"]);
    let (_, bpl_n, fpl_n, tpl_n) = check_leakage(&n, &eps);
    assert_eq!((bpl_n, fpl_n, tpl_n), (eps.to_vec(), eps.to_vec(), eps.to_vec()), "no correlation: all = ε");
}

#[test]
fn leakage_json_identity_grows_linearly() {
    let d = Scratch::new("leakage_identity");
    let id = d.file("id.csv", IDENTITY3);
    let out = json(&["leakage", "--backward", &id, "--forward", &id, "--epsilon", "0.5", "--horizon", "4"]);
    let (_, bpl, fpl, tpl) = check_leakage(&out, &[0.5; 4]);
    assert_eq!(bpl, vec![0.5, 1.0, 1.5, 2.0]);
    assert_eq!(fpl, vec![2.0, 1.5, 1.0, 0.5]);
    assert_eq!(tpl, vec![2.0; 4], "identity: TPL_t = T·ε at every t");
}

#[test]
fn leakage_json_budgets_text_file_with_comments_blank_lines_and_zero() {
    let d = Scratch::new("leakage_budgets_txt");
    let m = d.file("ex4.csv", EXAMPLE4);
    let b = d.file(
        "budgets.txt",
        "# spent budgets\n0.1\n\n0   # a step that publishes nothing\n  0.25  \n# end\n0.05\n",
    );
    let expected = [0.1, 0.0, 0.25, 0.05];
    for side in [&["--backward", m.as_str()][..], &["--forward", m.as_str()][..], &[][..]] {
        let mut args = vec!["leakage", "--budgets", b.as_str()];
        args.extend_from_slice(side);
        let out = json(&args);
        check_leakage(&out, &expected);
    }
    let both = json(&["leakage", "--budgets", &b, "--backward", &m, "--forward", &m]);
    let (_, bpl, _, _) = check_leakage(&both, &expected);
    // ε_2 = 0: BPL_2 = L(ε_1) + 0.
    assert_close(bpl[1], 0.05021976398445402, 1e-12, "BPL_2 with ε_2 = 0");
}

#[test]
fn leakage_json_budgets_json_array_matches_text_file() {
    let d = Scratch::new("leakage_budgets_json");
    let m = d.file("ex4.csv", EXAMPLE4);
    let bj = d.file("budgets.json", "[0.1, 0, 0.25, 0.05]");
    let bt = d.file("budgets.txt", "0.1\n0\n0.25\n0.05\n");
    let expected = [0.1, 0.0, 0.25, 0.05];
    let a = json(&["leakage", "--budgets", &bj, "--backward", &m, "--forward", &m]);
    let b = json(&["leakage", "--budgets", &bt, "--backward", &m, "--forward", &m]);
    check_leakage(&a, &expected);
    assert_eq!(a, b, "the .json and the text budget file give the same output");
    // A constant budget file equals --epsilon E --horizon T.
    let c = d.file("const.json", "[0.1,0.1,0.1,0.1,0.1]");
    assert_eq!(
        json(&["leakage", "--budgets", &c, "--backward", &m]),
        json(&["leakage", "--epsilon", "0.1", "--horizon", "5", "--backward", &m]),
    );
}

#[test]
fn leakage_json_window_fields() {
    let d = Scratch::new("leakage_window");
    let pb = d.file("pb.csv", EXAMPLE4);
    let pf = d.file("pf.csv", "0.8 0.1 0.1\n0.2 0.7 0.1\n0.1 0.2 0.7\n");
    let b = d.file("b.txt", "0.1\n0\n0.3\n0.05\n0.2\n0.1\n0.15\n");
    let t_len = 7;
    for w in 1..=t_len {
        let ws = w.to_string();
        let out = json(&["leakage", "--backward", &pb, "--forward", &pf, "--budgets", &b, "--window", &ws]);
        let (eps, bpl, fpl, tpl) = check_leakage(&out, &[0.1, 0.0, 0.3, 0.05, 0.2, 0.1, 0.15]);
        assert_eq!(out["window"].as_u64(), Some(w as u64), "window echoed");
        let wl = nums(&out, "window_leakage");
        assert_eq!(wl.len(), t_len - w + 1, "one value per window start (T − W + 1)");
        // Theorem 3: TPL_t for w = 1; BPL_t + FPL_{t+w−1} + Σ_{k=t+1}^{t+w−2} ε_k otherwise.
        for (i, &v) in wl.iter().enumerate() {
            let expected = if w == 1 {
                tpl[i]
            } else {
                bpl[i] + fpl[i + w - 1] + eps[i + 1..i + w - 1].iter().sum::<f64>()
            };
            assert_close(v, expected, 1e-12, &format!("window leakage W = {w}, start {}", i + 1));
        }
        let max = wl.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(num(&out, "max_window_leakage"), max, "max_window_leakage = max of window_leakage");
    }
    // Without correlation the window leakage is the window sum.
    let out = json(&["leakage", "--epsilon", "0.25", "--horizon", "5", "--window", "2"]);
    assert_eq!(out["window"].as_u64(), Some(2));
    let wl = nums(&out, "window_leakage");
    assert_eq!(wl.len(), 4);
    for v in wl {
        assert_close(v, 0.5, 1e-12, "no correlation: window leakage = window sum");
    }
    assert_close(num(&out, "max_window_leakage"), 0.5, 1e-12, "max window leakage");
}

// ---------------------------------------------------------------------------------------------
// 1. JSON contract: supremum
// ---------------------------------------------------------------------------------------------

#[test]
fn supremum_json_bounded_known_value() {
    let d = Scratch::new("supremum_bounded");
    let m = d.file("fig3.json", FIG3);
    let out = json(&["supremum", "--matrix", &m, "--epsilon", "0.1"]);
    assert_eq!(num(&out, "epsilon"), 0.1, "epsilon echoed");
    assert_eq!(out["bounded"], Value::Bool(true));
    let sup = num(&out, "supremum");
    assert_close(sup, 0.645906616057681, 1e-12, "supremum of fig. 3 at ε = 0.1");
    // It is the fixed point a = L(a) + ε …
    let l = loss_of(&m, &[sup])[0];
    assert_close(l + 0.1, sup, 1e-10, "sup = L(sup) + ε");
    // … and the limit of BPL_t under the constant budget.
    let series = json(&["leakage", "--backward", &m, "--epsilon", "0.1", "--horizon", "1000"]);
    let bpl = nums(&series, "bpl");
    assert!(bpl.iter().all(|&b| b <= sup * (1.0 + 1e-12)), "BPL_t stays below the supremum");
    assert_close(bpl[999], sup, 1e-10, "BPL_1000 ≈ supremum");
}

#[test]
fn supremum_json_example4_is_bounded_for_any_epsilon() {
    let d = Scratch::new("supremum_example4");
    let m = d.file("ex4.csv", EXAMPLE4);
    for e in ["0.01", "0.1", "1", "10"] {
        let out = json(&["supremum", "--matrix", &m, "--epsilon", e]);
        let eps: f64 = e.parse().unwrap();
        assert_eq!(num(&out, "epsilon"), eps);
        assert_eq!(out["bounded"], Value::Bool(true), "all entries positive: bounded at ε = {e}");
        let sup = num(&out, "supremum");
        assert!(sup > eps && sup <= eps + 5f64.ln() * (1.0 + 1e-12), "ε < sup ≤ ε + log 5, got {sup}");
    }
}

#[test]
fn supremum_json_unbounded_is_null() {
    let d = Scratch::new("supremum_unbounded");
    let id = d.file("id.csv", IDENTITY3);
    let fig3 = d.file("fig3.json", FIG3);
    // Identity: L(α) = α, so BPL grows without bound; fig. 3 at ε ≥ log(1/0.8) too.
    for (m, e) in [(&id, "0.1"), (&id, "5"), (&fig3, "1")] {
        let out = json(&["supremum", "--matrix", m, "--epsilon", e]);
        assert_eq!(num(&out, "epsilon"), e.parse::<f64>().unwrap(), "epsilon echoed");
        assert_eq!(out["bounded"], Value::Bool(false), "{m} at ε = {e}");
        assert!(out.get("supremum").is_some_and(Value::is_null), "supremum must be present and null: {out}");
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Reference values (shared/reference/tpl_cases.json, copied to testdata/) through the CLI
// ---------------------------------------------------------------------------------------------

#[test]
fn reference_cases_through_the_cli() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/tpl_cases.json");
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

// ---------------------------------------------------------------------------------------------
// 2. Matrix file formats
// ---------------------------------------------------------------------------------------------

#[test]
fn matrix_csv_separators_comments_and_blank_lines() {
    let d = Scratch::new("matrix_formats");
    let reference =
        json(&["loss", "--matrix", &d.file("plain.csv", EXAMPLE4), "--alpha", "1", "--alpha", "5"]);
    let variants = [
        ("spaces.csv", "0.1 0.2 0.7\n0.3 0.3 0.4\n0.5 0.3 0.2\n"),
        ("tabs.txt", "0.1\t0.2\t0.7\n0.3\t 0.3\t0.4\n0.5\t0.3\t0.2"),
        ("mixed.csv", "0.1, 0.2 ,0.7\n0.3 ,0.3, 0.4\n  0.5,0.3 , 0.2  \n"),
        ("mixed2.csv", "0.1,0.2 0.7\n0.3 0.3,0.4\n0.5 , 0.3 0.2\n"),
        (
            "comments.csv",
            "# Example 4 of the TKDE paper\n\n0.1,0.2,0.7   # row 1\n   \n# between rows\n0.3,0.3,0.4\n\n0.5,0.3,0.2 #\n# end\n\n",
        ),
        ("crlf.csv", "# windows\r\n0.1,0.2,0.7\r\n0.3,0.3,0.4\r\n\r\n0.5,0.3,0.2\r\n"),
        ("sci.csv", "1e-1,2E-1,7.0e-1\n0.3,0.3,0.4\n0.5,0.3,0.2\n"),
        ("json.json", "[[0.1,0.2,0.7],[0.3,0.3,0.4],[0.5,0.3,0.2]]"),
        ("pretty.json", "[\n  [0.1, 0.2, 0.7],\n  [0.3, 0.3, 0.4],\n  [0.5, 0.3, 0.2]\n]\n"),
        ("upper.JSON", "[[0.1,0.2,0.7],[0.3,0.3,0.4],[0.5,0.3,0.2]]"),
    ];
    for (name, content) in variants {
        let m = d.file(name, content);
        let out = json(&["loss", "--matrix", &m, "--alpha", "1", "--alpha", "5"]);
        assert_eq!(out, reference, "{name} must read as Example 4");
    }
}

#[test]
fn matrix_row_sum_tolerance_is_1e_9() {
    let d = Scratch::new("matrix_tolerance");
    let ok = d.file("ok.csv", "0.5000000005 0.5\n0.5 0.5\n");
    assert_eq!(nums(&json(&["loss", "--matrix", &ok, "--alpha", "1"]), "loss").len(), 1);
    let third =
        d.file("third.csv", "0.3333333333333333 0.3333333333333333 0.3333333333333333\n".repeat(3).as_str());
    assert_eq!(nums(&json(&["loss", "--matrix", &third, "--alpha", "1"]), "loss"), vec![0.0]);
    let bad = d.file("bad.csv", "0.500000002 0.5\n0.5 0.5\n");
    bad_input(&["loss", "--matrix", &bad, "--alpha", "1"], &[&format!("{bad}:1")], &[]);
}

#[test]
fn matrix_normalize_rescales_rows() {
    let d = Scratch::new("matrix_normalize");
    // Counts instead of probabilities: rows sum to 10, 1 and 4.
    let counts = d.file("counts.csv", "# transition counts\n1, 2, 7\n0.3 0.3 0.4\n\n2 1.2 0.8\n");
    let counts_json = d.file("counts.json", "[[1,2,7],[0.3,0.3,0.4],[2,1.2,0.8]]");
    let plain = d.file("ex4.csv", EXAMPLE4);
    let reference = json(&["loss", "--matrix", &plain, "--alpha", "1", "--alpha", "30"]);
    for m in [&counts, &counts_json] {
        let out = json(&["loss", "--matrix", m, "--alpha", "1", "--alpha", "30", "--normalize"]);
        for (g, e) in nums(&out, "loss").iter().zip(nums(&reference, "loss")) {
            assert_close(*g, e, 1e-12, "normalised counts = Example 4");
        }
        let sup = json(&["supremum", "--matrix", m, "--epsilon", "0.1", "--normalize"]);
        assert_eq!(sup["bounded"], Value::Bool(true));
        let lk = json(&[
            "leakage",
            "--backward",
            m,
            "--forward",
            m,
            "--epsilon",
            "0.1",
            "--horizon",
            "3",
            "--normalize",
        ]);
        check_leakage(&lk, &[0.1; 3]);
    }
    // Without --normalize the same files are rejected, naming the file (and line for text).
    bad_input(&["loss", "--matrix", &counts, "--alpha", "1"], &[&format!("{counts}:2")], &["10"]);
    bad_input(&["loss", "--matrix", &counts_json, "--alpha", "1"], &[&counts_json], &["10"]);
    bad_input(&["supremum", "--matrix", &counts, "--epsilon", "0.1"], &[&format!("{counts}:2")], &[]);
    bad_input(
        &["leakage", "--backward", &counts, "--epsilon", "0.1", "--horizon", "3"],
        &[&format!("{counts}:2")],
        &[],
    );
    bad_input(
        &["leakage", "--forward", &counts_json, "--epsilon", "0.1", "--horizon", "3"],
        &[&counts_json],
        &[],
    );
    // A row of zeros cannot be normalised.
    let zero = d.file("zero.csv", "1 1\n0 0\n");
    bad_input(&["loss", "--matrix", &zero, "--alpha", "1", "--normalize"], &[&format!("{zero}:2")], &[]);
}

// ---------------------------------------------------------------------------------------------
// 3. --format csv and --format table
// ---------------------------------------------------------------------------------------------

fn parse_exact(field: &str) -> f64 {
    field.parse::<f64>().unwrap_or_else(|e| panic!("CSV field {field:?} is not a number: {e}"))
}

#[test]
fn loss_csv_and_table() {
    let d = Scratch::new("loss_csv");
    let m = d.file("ex4.csv", EXAMPLE4);
    let args =
        ["loss", "--matrix", m.as_str(), "--alpha", "30", "--alpha", "0", "--alpha", "1", "--alpha", "1000"];
    let j = json(&args);
    let (header, rows) = csv(&args);
    assert_eq!(header, ["alpha", "loss"]);
    assert_eq!(rows.len(), 4, "one row per α");
    let (alpha, loss) = (nums(&j, "alpha"), nums(&j, "loss"));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(parse_exact(&r[0]), alpha[i], "CSV α parses back exactly, in order");
        assert_eq!(parse_exact(&r[1]), loss[i], "CSV L parses back exactly");
    }
    table(&args);
}

#[test]
fn leakage_csv_and_table() {
    let d = Scratch::new("leakage_csv");
    let m = d.file("ex4.csv", EXAMPLE4);
    let b = d.file("b.txt", "0.1\n0\n0.3\n0.05\n0.2\n");
    let args = ["leakage", "--backward", m.as_str(), "--forward", m.as_str(), "--budgets", b.as_str()];
    let j = json(&args);
    let (header, rows) = csv(&args);
    assert_eq!(header, ["t", "epsilon", "bpl", "fpl", "tpl"]);
    assert_eq!(rows.len(), 5, "one row per step");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r[0], (i + 1).to_string(), "t column");
        for (c, key) in ["epsilon", "bpl", "fpl", "tpl"].iter().enumerate() {
            assert_eq!(
                parse_exact(&r[c + 1]),
                nums(&j, key)[i],
                "CSV {key} at t = {} parses back exactly",
                i + 1
            );
        }
    }
    table(&args);

    let mut wargs = args.to_vec();
    wargs.extend(["--window", "3"]);
    let j = json(&wargs);
    let (header, rows) = csv(&wargs);
    assert_eq!(header.first().map(String::as_str), Some("t"));
    assert!(header.iter().any(|h| h == "window_leakage"), "CSV with --window has a window_leakage column");
    assert_eq!(rows.len(), 5, "one row per step");
    let col = header.iter().position(|h| h == "window_leakage").unwrap();
    let wl = nums(&j, "window_leakage");
    for (i, r) in rows.iter().enumerate() {
        if i < wl.len() {
            assert_eq!(parse_exact(&r[col]), wl[i], "window leakage at start {}", i + 1);
        } else {
            assert!(r[col].is_empty(), "no window starts at t = {}", i + 1);
        }
    }
    let text = table(&wargs);
    assert!(text.contains('3'), "table mentions the window");

    // Long series are fine in every format.
    let long = ["leakage", "--backward", m.as_str(), "--epsilon", "0.1", "--horizon", "200"];
    assert_eq!(csv(&long).1.len(), 200);
    table(&long);
}

#[test]
fn supremum_csv_and_table() {
    let d = Scratch::new("supremum_csv");
    let m = d.file("fig3.json", FIG3);
    let id = d.file("id.csv", IDENTITY3);
    let args = ["supremum", "--matrix", m.as_str(), "--epsilon", "0.1"];
    let j = json(&args);
    let (header, rows) = csv(&args);
    assert_eq!(header, ["epsilon", "bounded", "supremum"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(parse_exact(&rows[0][0]), 0.1);
    assert_eq!(rows[0][1], "true");
    assert_eq!(parse_exact(&rows[0][2]), num(&j, "supremum"), "CSV supremum parses back exactly");
    table(&args);

    let uargs = ["supremum", "--matrix", id.as_str(), "--epsilon", "0.1"];
    let (header, rows) = csv(&uargs);
    assert_eq!(header, ["epsilon", "bounded", "supremum"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][1], "false");
    assert!(
        rows[0][2].parse::<f64>().map_or(true, |v| !v.is_finite()),
        "unbounded: no finite supremum in CSV"
    );
    table(&uargs);
}

#[test]
fn default_format_is_table() {
    let d = Scratch::new("default_table");
    let m = d.file("ex4.csv", EXAMPLE4);
    let run = tpl(&["loss", "--matrix", &m, "--alpha", "1"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, table(&["loss", "--matrix", &m, "--alpha", "1"]));
    // --format is accepted before the subcommand too.
    let before = tpl(&["--format", "json", "loss", "--matrix", &m, "--alpha", "1"]);
    assert_eq!(before.code, Some(0), "{}", before.describe());
    assert_eq!(
        serde_json::from_str::<Value>(&before.stdout).ok(),
        Some(json(&["loss", "--matrix", &m, "--alpha", "1"]))
    );
}

// ---------------------------------------------------------------------------------------------
// 3. demo
// ---------------------------------------------------------------------------------------------

/// The files `tpl demo` writes into its folder, and how each starts.
const DEMO_FILES: [(&str, &str); 7] = [
    ("report.md", "# tpl demo"),
    ("matrix.csv", "#"),
    ("leakage_example.svg", "<svg"),
    ("compare_synthetic.svg", "<svg"),
    ("compare_ais_hour.svg", "<svg"),
    ("synthetic/stream.csv", "timestamp_bucket,user_id,location_cell"),
    ("synthetic/counts.csv", "timestamp_bucket,c0"),
];

/// Every key of the demo's JSON with the right type (`out` = `dir`), and every file it wrote
/// (in `written`: `dir` seen from the test).
#[track_caller]
fn check_demo(j: &Value, dir: &Path, written: &Path) {
    let numbers = |v: &Value, what: &str| -> Vec<f64> {
        let a = v.as_array().unwrap_or_else(|| panic!("{what} must be an array: {v}"));
        assert!(!a.is_empty(), "{what} is empty");
        a.iter().map(|x| x.as_f64().unwrap_or_else(|| panic!("{what} holds a non-number: {x}"))).collect()
    };
    let matrix = j["matrix"].as_array().expect("matrix: array of rows");
    assert!(!matrix.is_empty());
    for row in matrix {
        assert_eq!(numbers(row, "matrix row").len(), matrix.len(), "matrix is square");
    }
    let alphas = numbers(&j["loss"]["alpha"], "loss.alpha");
    assert_eq!(numbers(&j["loss"]["loss"], "loss.loss").len(), alphas.len());
    let leakage = &j["leakage"];
    let steps = numbers(&leakage["epsilon"], "leakage.epsilon").len();
    for key in ["bpl", "fpl", "tpl"] {
        assert_eq!(numbers(&leakage[key], key).len(), steps, "leakage.{key}");
    }
    for key in ["max_tpl", "max_window_leakage"] {
        assert!(leakage[key].is_f64(), "leakage.{key} is a number: {}", leakage[key]);
    }
    assert!(leakage["window"].is_u64(), "leakage.window is a whole number");
    let suprema = j["supremum"].as_array().expect("supremum: array");
    assert!(!suprema.is_empty());
    for s in suprema {
        assert!(s["epsilon"].is_f64(), "{s}");
        let bounded = s["bounded"].as_bool().unwrap_or_else(|| panic!("bounded is a boolean: {s}"));
        assert_eq!(s["supremum"].is_f64(), bounded, "a bounded supremum is a number, else null: {s}");
    }
    for key in ["synthetic", "ais_hour"] {
        let rows = j[key]["rows"].as_array().unwrap_or_else(|| panic!("{key}.rows: array in {}", j[key]));
        assert!(!rows.is_empty(), "{key} compares strategies");
        for r in rows {
            assert!(r["strategy"].is_string(), "{key}: {r}");
        }
    }
    let out = j["out"].as_str().expect("out: string");
    assert_eq!(Path::new(out), dir, "out names the folder written");
    for (file, start) in DEMO_FILES {
        let path = written.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.trim_start().starts_with(start) || text.contains(start), "{file} starts {start:?}");
    }
}

#[test]
fn demo_without_arguments_prints_a_report_and_writes_tpl_demo_in_the_working_folder() {
    let d = Scratch::new("demo_default");
    let run = tpl_with(Some(&d.dir), None, &["demo"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.lines().count() >= 10, "a report of several lines\n{}", run.describe());
    assert!(run.stdout.contains("tpl leakage"), "the report shows how to use tpl\n{}", run.describe());
    let report = std::fs::read_to_string(d.dir.join("tpl-demo/report.md")).expect("tpl-demo/report.md");
    assert!(report.contains(run.stdout.lines().next().unwrap()), "report.md holds the printed report");

    let run = tpl_with(Some(&d.dir), None, &["demo", "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let j: Value = serde_json::from_str(&run.stdout).expect("JSON");
    check_demo(&j, Path::new("tpl-demo"), &d.dir.join("tpl-demo"));

    let run = tpl_with(Some(&d.dir), None, &["demo", "--format", "csv"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some("t,epsilon,bpl,fpl,tpl"));
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(parse_exact).collect()).collect();
    assert_eq!(rows.len(), nums(&j["leakage"], "tpl").len(), "one CSV row per step");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 5);
        assert_eq!(r[0], (i + 1) as f64);
        assert_eq!(r[4], nums(&j["leakage"], "tpl")[i], "CSV and JSON agree");
    }
}

#[test]
fn demo_out_writes_report_and_a_matrix_that_loss_accepts() {
    let d = Scratch::new("demo_out");
    let out_dir = d.dir.join("nested/out");
    let out = path_str(&out_dir);
    // Run from the scratch folder: nothing may land in the working folder but --out.
    let run = tpl_with(Some(&d.dir), None, &["demo", "--out", &out, "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let demo: Value = serde_json::from_str(&run.stdout).expect("JSON");
    check_demo(&demo, &out_dir, &out_dir);
    assert!(!d.dir.join("tpl-demo").exists(), "--out replaces the default folder");

    // The written matrix is accepted back, and gives the losses the demo reported.
    let matrix = path_str(&out_dir.join("matrix.csv"));
    let alphas = nums(&demo["loss"], "alpha");
    let expected = nums(&demo["loss"], "loss");
    let losses = loss_of(&matrix, &alphas);
    assert_eq!(losses.len(), expected.len());
    for (g, e) in losses.iter().zip(&expected) {
        assert_close(*g, *e, 1e-12, "loss of the written matrix vs the demo's");
    }
    let sup = json(&["supremum", "--matrix", &matrix, "--epsilon", "0.1"]);
    assert_eq!(sup["bounded"], true);
}

// ---------------------------------------------------------------------------------------------
// 4. Bad input: matrix files
// ---------------------------------------------------------------------------------------------

/// Runs the same bad matrix through every command that reads one.
fn bad_matrix_everywhere(path: &str, needles: &[&str], values: &[&str]) {
    bad_input(&["loss", "--matrix", path, "--alpha", "1"], needles, values);
    bad_input(&["supremum", "--matrix", path, "--epsilon", "0.1"], needles, values);
    bad_input(&["leakage", "--backward", path, "--epsilon", "0.1", "--horizon", "3"], needles, values);
    bad_input(&["leakage", "--forward", path, "--epsilon", "0.1", "--horizon", "3"], needles, values);
}

#[test]
fn bad_matrix_missing_unreadable_and_empty_files() {
    let d = Scratch::new("bad_matrix_files");
    let missing = d.path("does-not-exist.csv");
    bad_matrix_everywhere(&missing, &[&missing], &[]);
    let dir = path_str(&d.dir);
    bad_matrix_everywhere(&dir, &[&dir], &[]);
    let empty = d.file("empty.csv", "");
    bad_matrix_everywhere(&empty, &[&empty], &[]);
    let comments = d.file("comments.csv", "# nothing but comments\n\n   # and blanks\n\n");
    bad_matrix_everywhere(&comments, &[&comments], &[]);
    let empty_json = d.file("empty.json", "[]");
    bad_matrix_everywhere(&empty_json, &[&empty_json], &[]);
    let blank_json = d.file("blank.json", "");
    bad_matrix_everywhere(&blank_json, &[&blank_json], &[]);
}

#[test]
fn bad_matrix_shape() {
    let d = Scratch::new("bad_matrix_shape");
    let nonsquare = d.file("nonsquare.csv", "0.5,0.5\n0.5,0.5\n0.5,0.5\n");
    bad_matrix_everywhere(&nonsquare, &[&nonsquare], &[]);
    let wide = d.file("wide.csv", "0.2 0.3 0.5\n0.2 0.3 0.5\n");
    bad_matrix_everywhere(&wide, &[&wide], &[]);
    // Row 2 of the matrix is on line 4 of the file.
    let ragged = d.file("ragged.csv", "# ragged\n0.5,0.5\n\n1\n");
    bad_matrix_everywhere(&ragged, &[&format!("{ragged}:4")], &[]);
    let ragged_json = d.file("ragged.json", "[[0.5,0.5],[1]]");
    bad_matrix_everywhere(&ragged_json, &[&ragged_json], &[]);
    let nonsquare_json = d.file("nonsquare.json", "[[0.5,0.5]]");
    bad_matrix_everywhere(&nonsquare_json, &[&nonsquare_json], &[]);
    let empty_rows = d.file("empty_rows.json", "[[],[]]");
    bad_matrix_everywhere(&empty_rows, &[&empty_rows], &[]);
}

#[test]
fn bad_matrix_entries() {
    let d = Scratch::new("bad_matrix_entries");
    let nan = d.file("nan.csv", "# header\n0.5,0.5\n\nNaN,0.5\n");
    bad_matrix_everywhere(&nan, &[&format!("{nan}:4")], &["NaN"]);
    let inf = d.file("inf.csv", "0.5 0.5\ninf 0\n");
    bad_matrix_everywhere(&inf, &[&format!("{inf}:2")], &["inf"]);
    let big = d.file("big.csv", "1e400 0\n0.5 0.5\n");
    bad_matrix_everywhere(&big, &[&format!("{big}:1")], &[]);
    let neg = d.file("neg.csv", "0.5,0.5\n1.5,-0.5\n");
    bad_matrix_everywhere(&neg, &[&format!("{neg}:2")], &["-0.5"]);
    let sum = d.file("sum.csv", "0.5,0.5\n\n0.5,0.4\n");
    bad_matrix_everywhere(&sum, &[&format!("{sum}:3")], &["0.9"]);
    let token = d.file("token.csv", "0.5,0.5\n0.5,abc\n");
    bad_matrix_everywhere(&token, &[&format!("{token}:2")], &[]);
    bad_input(&["loss", "--matrix", &token, "--alpha", "1"], &["abc"], &[]);
    let semicolon = d.file("semicolon.csv", "0.5;0.5\n0.5;0.5\n");
    bad_matrix_everywhere(&semicolon, &[&format!("{semicolon}:1"), "0.5;0.5"], &[]);
    let empty_field = d.file("empty_field.csv", "0.5,0.5\n0.5,,0.5\n");
    bad_matrix_everywhere(&empty_field, &[&format!("{empty_field}:2")], &[]);
    let trailing = d.file("trailing.csv", "0.5,0.5,\n0.5,0.5\n");
    bad_matrix_everywhere(&trailing, &[&format!("{trailing}:1")], &[]);
    let neg_json = d.file("neg.json", "[[0.5,0.5],[1.5,-0.5]]");
    bad_matrix_everywhere(&neg_json, &[&neg_json], &["-0.5"]);
    let sum_json = d.file("sum.json", "[[0.5,0.5],[0.5,0.4]]");
    bad_matrix_everywhere(&sum_json, &[&sum_json], &["0.9"]);
    let nonutf = d.path("latin1.csv");
    std::fs::write(&nonutf, b"0.5,0.5\n0.5,0.5 \xe9\n").unwrap();
    bad_matrix_everywhere(&nonutf, &[&nonutf], &[]);
}

#[test]
fn bad_matrix_malformed_json() {
    let d = Scratch::new("bad_matrix_json");
    for (name, content) in [
        ("unclosed.json", "[[0.5,0.5],[0.5,0.5]"),
        ("string.json", "[[0.5,0.5],[0.5,\"x\"]]"),
        ("null.json", "null"),
        ("object.json", "{\"rows\":[[1]]}"),
        ("flat.json", "[0.5,0.5]"),
        ("trailing.json", "[[1]] extra"),
        ("nan.json", "[[NaN,1],[0.5,0.5]]"),
        ("csv_in_json.json", "0.5,0.5\n0.5,0.5\n"),
    ] {
        let m = d.file(name, content);
        bad_matrix_everywhere(&m, &[&m], &[]);
    }
    // The position of the fault is named.
    let multi = d.file("multi.json", "[\n  [0.5, 0.5],\n  [0.5, oops]\n]\n");
    bad_input(&["loss", "--matrix", &multi, "--alpha", "1"], &[&format!("{multi}:3")], &[]);
}

// ---------------------------------------------------------------------------------------------
// 4. Bad input: budget files
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_budget_files() {
    let d = Scratch::new("bad_budgets");
    let m = d.file("ex4.csv", EXAMPLE4);
    let check = |path: &str, needles: &[&str], values: &[&str]| {
        bad_input(&["leakage", "--budgets", path], needles, values);
        bad_input(&["leakage", "--budgets", path, "--backward", &m, "--forward", &m], needles, values);
    };
    let bad_line = d.file("bad_line.txt", "0.1\n# comment\n\nfoo\n0.2\n");
    check(&bad_line, &[&format!("{bad_line}:4"), "foo"], &[]);
    let negative = d.file("negative.txt", "0.1\n\n-0.2\n");
    check(&negative, &[&format!("{negative}:3")], &["-0.2"]);
    let two = d.file("two.txt", "0.1\n0.2 0.3\n");
    check(&two, &[&format!("{two}:2")], &[]);
    let two_commas = d.file("two_commas.csv", "0.1,0.2\n");
    check(&two_commas, &[&format!("{two_commas}:1")], &[]);
    let inf = d.file("inf.txt", "0.1\ninf\n");
    check(&inf, &[&format!("{inf}:2")], &["inf"]);
    let nan = d.file("nan.txt", "0.1\n0.1\nNaN\n");
    check(&nan, &[&format!("{nan}:3")], &["NaN"]);
    let empty = d.file("empty.txt", "");
    check(&empty, &[&empty], &[]);
    let comments = d.file("comments.txt", "# only a comment\n\n");
    check(&comments, &[&comments], &[]);
    let empty_json = d.file("empty.json", "[]");
    check(&empty_json, &[&empty_json], &[]);
    let neg_json = d.file("neg.json", "[0.1, -1]");
    check(&neg_json, &[&neg_json], &["-1"]);
    let null_json = d.file("null.json", "[0.1, null]");
    check(&null_json, &[&null_json], &[]);
    let bad_json = d.file("bad.json", "[0.1,");
    check(&bad_json, &[&bad_json], &[]);
    let nested = d.file("nested.json", "[[0.1]]");
    check(&nested, &[&nested], &[]);
    let missing = d.path("missing.txt");
    check(&missing, &[&missing], &[]);
    let dir = path_str(&d.dir);
    check(&dir, &[&dir], &[]);
}

// ---------------------------------------------------------------------------------------------
// 4. Bad input: flag values
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_epsilon_for_leakage_and_supremum() {
    let d = Scratch::new("bad_epsilon");
    let m = d.file("ex4.csv", EXAMPLE4);
    for e in ["0", "-0.1", "-1", "inf", "NaN", "-inf"] {
        // clap reads a bare "-inf" as the short flag -i, so that one goes in the --flag=value form.
        let (flag, value) =
            if e == "-inf" { (format!("--epsilon={e}"), None) } else { ("--epsilon".into(), Some(e)) };
        let with = |mut args: Vec<&'static str>| -> Vec<String> {
            let mut v: Vec<String> = args.drain(..).map(String::from).collect();
            v.push(flag.clone());
            v.extend(value.map(String::from));
            v
        };
        for args in [
            with(vec!["leakage", "--horizon", "3"]),
            [
                vec!["leakage".to_string(), "--backward".into(), m.clone(), "--horizon".into(), "3".into()],
                with(vec![]),
            ]
            .concat(),
            [vec!["supremum".to_string(), "--matrix".into(), m.clone()], with(vec![])].concat(),
        ] {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            bad_input(&refs, &["--epsilon"], &[e]);
        }
    }
    usage_error(&["supremum", "--matrix", &m, "--epsilon", "-inf"]);
    usage_error(&["supremum", "--matrix", &m, "--epsilon", "abc"]);
    usage_error(&["leakage", "--epsilon", "abc", "--horizon", "3"]);
}

#[test]
fn bad_horizon_and_window() {
    let d = Scratch::new("bad_horizon_window");
    let b = d.file("b.txt", "0.1\n0.2\n0.3\n");
    bad_input(&["leakage", "--epsilon", "0.1", "--horizon", "0"], &["--horizon"], &["0"]);
    for w in ["0", "4", "100"] {
        bad_input(&["leakage", "--epsilon", "0.1", "--horizon", "3", "--window", w], &["--window"], &[w]);
        bad_input(&["leakage", "--budgets", &b, "--window", w], &["--window"], &[w]);
    }
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "-1"]);
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "2.5"]);
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "3", "--window", "-1"]);
}

#[test]
fn bad_alpha() {
    let d = Scratch::new("bad_alpha");
    let m = d.file("ex4.csv", EXAMPLE4);
    for a in ["-1", "-0.5", "NaN", "inf"] {
        bad_input(&["loss", "--matrix", &m, "--alpha", a], &["--alpha"], &[a]);
        // A bad α among good ones is named too.
        bad_input(
            &["loss", "--matrix", &m, "--alpha", "1", "--alpha", a, "--alpha", "2"],
            &["--alpha"],
            &[a],
        );
    }
    // clap reads a bare "-inf" as the short flag -i; the --alpha=VALUE form reaches the check.
    bad_input(&["loss", "--matrix", &m, "--alpha=-inf"], &["--alpha"], &["-inf"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "-inf"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "one"]);
}

#[test]
fn bad_smoothing() {
    let d = Scratch::new("bad_smoothing");
    let m = d.file("ex4.csv", EXAMPLE4);
    for s in ["-1", "NaN", "inf"] {
        bad_input(&["loss", "--matrix", &m, "--alpha", "1", "--smoothing", s], &["--smoothing"], &[s]);
    }
}

#[test]
fn usage_errors_unknown_flags_subcommands_and_missing_flags() {
    let d = Scratch::new("usage_errors");
    let m = d.file("ex4.csv", EXAMPLE4);
    let b = d.file("b.txt", "0.1\n");
    // Unknown subcommand, no subcommand.
    usage_error(&["frobnicate"]);
    usage_error(&[]);
    // Unknown flags.
    usage_error(&["--bogus"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "1", "--bogus"]);
    usage_error(&["leakage", "--epsilon", "0.1", "--horizon", "3", "--bogus"]);
    usage_error(&["supremum", "--matrix", &m, "--epsilon", "0.1", "--bogus", "1"]);
    usage_error(&["demo", "--bogus"]);
    usage_error(&["loss", "--matrix", &m, "--alpha", "1", "--format", "yaml"]);
    // Missing required flags.
    usage_error(&["loss"]);
    usage_error(&["loss", "--alpha", "1"]);
    usage_error(&["loss", "--matrix", &m]);
    usage_error(&["loss", "--matrix"]);
    usage_error(&["supremum", "--matrix", &m]);
    usage_error(&["supremum", "--epsilon", "0.1"]);
    usage_error(&["leakage"]);
    usage_error(&["leakage", "--backward", &m]);
    usage_error(&["leakage", "--epsilon", "0.1"]);
    usage_error(&["leakage", "--horizon", "3"]);
    // --budgets conflicts with --epsilon/--horizon.
    usage_error(&["leakage", "--budgets", &b, "--epsilon", "0.1", "--horizon", "3"]);
    // Stray positional argument.
    usage_error(&["loss", &m, "--alpha", "1"]);
}

// ---------------------------------------------------------------------------------------------
// 4. Robustness: extreme but valid-looking inputs must never crash or print null numbers
// ---------------------------------------------------------------------------------------------

/// Either a clean success with finite numbers, or a clean failure (exit 1 or 2, one line,
/// nothing on stdout). `tpl()` already rejects panics and signals.
#[track_caller]
fn clean_outcome(args: &[&str], flag_or_file: &str) {
    let run = tpl(args);
    match run.code {
        Some(0) => {
            let v: Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", run.describe()));
            assert!(
                !run.stdout.contains("null"),
                "a number of the contract is null (non-finite)\n{}",
                run.describe()
            );
            assert!(v.is_object());
        }
        Some(1 | 2) => {
            assert!(run.stdout.is_empty(), "{}", run.describe());
            assert_eq!(run.stderr.lines().count(), 1, "one line on stderr\n{}", run.describe());
            assert!(
                run.stderr.contains(flag_or_file),
                "stderr should name {flag_or_file}\n{}",
                run.describe()
            );
        }
        _ => panic!("unexpected exit code\n{}", run.describe()),
    }
}

#[test]
fn huge_horizon_does_not_panic() {
    // usize::MAX steps cannot be allocated; the binary must say so, not panic ("capacity
    // overflow") or abort ("memory allocation failed").
    clean_outcome(
        &["leakage", "--epsilon", "0.1", "--horizon", "18446744073709551615", "--format", "json"],
        "--horizon",
    );
}

#[test]
fn huge_epsilon_overflow_gives_finite_numbers_or_a_clean_error() {
    let d = Scratch::new("huge_epsilon");
    let id = d.file("id.csv", IDENTITY3);
    // Identity matrix: BPL_2 = 2ε really exceeds the largest double when ε = 1e308.
    clean_outcome(
        &["leakage", "--backward", &id, "--epsilon", "1e308", "--horizon", "3", "--format", "json"],
        "--epsilon",
    );
}

#[test]
fn huge_budgets_without_correlation_stay_finite() {
    let d = Scratch::new("huge_budgets");
    // No correlation: BPL = FPL = TPL = ε = 1e308, all representable; only the window sum
    // (2e308) is not.
    let b = d.file("huge.txt", "1e308\n1e308\n");
    let run = tpl(&["leakage", "--budgets", &b, "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(nums(&out, "tpl"), vec![1e308, 1e308], "no correlation: TPL = ε\n{}", run.describe());
    clean_outcome(&["leakage", "--budgets", &b, "--window", "2", "--format", "json"], &b);
}

#[test]
fn extreme_but_valid_values_succeed() {
    let d = Scratch::new("extreme_valid");
    let m = d.file("ex4.csv", EXAMPLE4);
    let fig3 = d.file("fig3.json", FIG3);
    let out = json(&["loss", "--matrix", &m, "--alpha", "1e6", "--alpha", "1e300"]);
    for l in nums(&out, "loss") {
        assert_close(l, 5f64.ln(), 1e-12, "L saturates at log 5");
    }
    let out = json(&["loss", "--matrix", &fig3, "--alpha", "1e6"]);
    assert!(nums(&out, "loss")[0].is_finite());
    let out = json(&["supremum", "--matrix", &m, "--epsilon", "1e-300"]);
    assert_eq!(out["bounded"], Value::Bool(true));
    assert!(num(&out, "supremum") > 0.0);
    let one = d.file("one.json", "[[1]]");
    assert_eq!(nums(&json(&["loss", "--matrix", &one, "--alpha", "3"]), "loss"), vec![0.0], "1 state: L ≡ 0");
}

// ---------------------------------------------------------------------------------------------
// 5. Help
// ---------------------------------------------------------------------------------------------

/// True when `help` shows an example: an "Example" heading and an invocation of `tpl <cmd>`.
fn shows_example(help: &str, invocation: &str) -> bool {
    help.to_lowercase().contains("example") && help.contains(invocation)
}

#[test]
fn top_level_help_mentions_an_example() {
    for flag in ["--help", "-h"] {
        let run = tpl(&[flag]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        assert!(
            shows_example(&run.stdout, "tpl leakage --"),
            "top-level help shows an example\n{}",
            run.describe()
        );
        for cmd in ["loss", "leakage", "supremum", "demo"] {
            assert!(run.stdout.contains(cmd), "top-level help lists {cmd}\n{}", run.describe());
        }
    }
    let run = tpl(&["--version"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.starts_with("tpl "), "{}", run.describe());
}

#[test]
fn leakage_help_mentions_an_example() {
    let run = tpl(&["leakage", "--help"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    for flag in ["--backward", "--forward", "--epsilon", "--horizon", "--budgets", "--window", "--format"] {
        assert!(run.stdout.contains(flag), "leakage help documents {flag}\n{}", run.describe());
    }
    assert!(
        shows_example(&run.stdout, "tpl leakage --"),
        "`tpl leakage --help` must show an example invocation (STYLE.md)\n{}",
        run.describe()
    );
}
