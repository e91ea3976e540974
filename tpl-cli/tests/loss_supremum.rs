//! `tpl loss` and `tpl supremum` at the edges of floating point, through the built binary:
//! tiny and huge ε, subnormal entries, rows whose raw sums overflow, and the progress bar
//! kept off stderr when it is not a terminal.

mod common;

use common::*;
use serde_json::Value;

fn bounded_supremum(matrix: &str, eps: &str) -> f64 {
    let out = json(&["supremum", "--matrix", matrix, "--epsilon", eps]);
    assert_eq!(out["bounded"], Value::Bool(true), "{out}");
    let v = out["supremum"].as_f64().unwrap_or_else(|| panic!("bounded supremum must be a number: {out}"));
    assert!(v.is_finite());
    v
}

#[test]
fn supremum_small_epsilon_is_relatively_exact() {
    let d = Scratch::new("supremum_small_eps");
    let m = d.file("p.csv", "0.9,0.1\n0.2,0.8\n");
    assert_close(bounded_supremum(&m, "1e-8"), 3.333_333_346_296_296_5e-8, 1e-13, "ε = 1e-8");
    for eps in ["1e-16", "1e-300"] {
        let e: f64 = eps.parse().unwrap();
        assert_close(bounded_supremum(&m, eps) / e, 10.0 / 3.0, 1e-13, eps);
    }
}

#[test]
fn supremum_large_epsilon_and_subnormal_entry_are_finite() {
    let d = Scratch::new("supremum_large_eps");
    let fig8 = d.file("fig8.csv", "0.8 0.2\n0.2 0.8\n");
    assert_close(bounded_supremum(&fig8, "500"), 501.386_294_361_119_9, 1e-15, "fig. 8 at ε = 500");
    let sub = d.file("sub.csv", "4.9e-324,1\n0.2,0.8\n");
    assert_close(bounded_supremum(&sub, "2"), 743.701_532_359_196_2, 1e-14, "subnormal entry at ε = 2");
    let table = table(&["supremum", "--matrix", &sub, "--epsilon", "2"]);
    assert!(!table.contains("inf"), "{table}");
}

#[test]
fn normalize_handles_rows_whose_sum_overflows() {
    let d = Scratch::new("normalize_overflow");
    let big = d.file("big.csv", "1e308,1e308\n1,3\n");
    let plain = d.file("plain.csv", "0.5,0.5\n0.25,0.75\n");
    let l =
        |m: &str| json(&["loss", "--matrix", m, "--normalize", "--alpha", "1"])["loss"][0].as_f64().unwrap();
    assert_eq!(l(&big), l(&plain));
    assert!(l(&big) < 1.0);
    let sup = |m: &str| json(&["supremum", "--matrix", m, "--normalize", "--epsilon", "1"]);
    assert_eq!(sup(&big), sup(&plain));
}

#[test]
fn progress_stays_off_stderr_when_it_is_not_a_terminal() {
    // 500 states: large enough for the bar (were stderr a terminal), a second of work.
    let d = Scratch::new("progress_not_terminal");
    let n = 500;
    let rows: Vec<String> = (0..n)
        .map(|i| (0..n).map(|j| if i == j { "2" } else { "1" }).collect::<Vec<_>>().join(","))
        .collect();
    let m = d.file("p.csv", &(rows.join("\n") + "\n"));
    for args in [
        vec!["loss", "--matrix", &m, "--normalize", "--alpha", "1"],
        vec!["supremum", "--matrix", &m, "--normalize", "--epsilon", "1", "--format", "json"],
    ] {
        let run = tpl_ok(&args);
        assert!(run.stderr.is_empty(), "{}", run.describe());
    }
}

#[test]
fn supremum_refuses_a_bad_epsilon_before_reading_the_matrix() {
    let d = Scratch::new("supremum_bad_eps");
    let missing = d.path("missing.csv");
    let run = usage_error(&["supremum", "--matrix", &missing, "--epsilon", "0"]);
    assert!(run.stderr.contains("--epsilon"), "{}", run.describe());
}

// ---------------------------------------------------------------------------------------------
// JSON contract: loss
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
// JSON contract: supremum
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
fn supremum_csv_and_table() {
    let d = Scratch::new("supremum_csv");
    let m = d.file("fig3.json", FIG3);
    let id = d.file("id.csv", IDENTITY3);
    // The one CSV row of `supremum` at ε = 0.1 for `matrix`, its table printed as well.
    let row = |matrix: &str| {
        let args = ["supremum", "--matrix", matrix, "--epsilon", "0.1"];
        let (header, rows) = csv(&args);
        assert_eq!(header, ["epsilon", "bounded", "supremum"]);
        assert_eq!(rows.len(), 1);
        table(&args);
        rows[0].clone()
    };
    let j = json(&["supremum", "--matrix", &m, "--epsilon", "0.1"]);
    let bounded = row(&m);
    assert_eq!(parse_exact(&bounded[0]), 0.1);
    assert_eq!(bounded[1], "true");
    assert_eq!(parse_exact(&bounded[2]), num(&j, "supremum"), "CSV supremum parses back exactly");

    let unbounded = row(&id);
    assert_eq!(unbounded[1], "false");
    assert!(
        unbounded[2].parse::<f64>().map_or(true, |v| !v.is_finite()),
        "unbounded: no finite supremum in CSV"
    );
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
