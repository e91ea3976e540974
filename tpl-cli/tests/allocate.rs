//! `tpl allocate` through the built binary: the JSON contract
//! ([`docs/cli.md`](tpl_core::guide::cli)) for the three strategies, the worked AIS-style cases (a
//! Theorem 7 matrix refused by the unbounded strategies, answered by `window`), and every bad input
//! (exit 2, one line naming the flag or the file).

mod common;

use common::*;
use serde_json::Value;

const FIG8_BACKWARD: &str = "0.8 0.2\n0.2 0.8\n";

fn allocate(d: &Scratch, strategy: &str, extra: &[&str]) -> Value {
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let pf = d.file("pf.csv", FIG8_FORWARD);
    let mut args = vec!["allocate", "--strategy", strategy, "--backward", &pb, "--forward", &pf];
    args.extend_from_slice(extra);
    json(&args)
}

fn check_contract(out: &Value, strategy: &str, alpha: f64, horizon: usize) {
    assert_eq!(out["strategy"], Value::String(strategy.into()));
    assert_eq!(num(out, "alpha"), alpha);
    let budgets = nums(out, "budgets");
    let (bpl, fpl, tpl) = (nums(out, "bpl"), nums(out, "fpl"), nums(out, "tpl"));
    for v in [&budgets, &bpl, &fpl, &tpl] {
        assert_eq!(v.len(), horizon);
    }
    assert!(budgets.iter().all(|&e| e > 0.0), "budgets must be positive");
    for t in 0..horizon {
        assert_close(tpl[t], bpl[t] + fpl[t] - budgets[t], 1e-12, "TPL = BPL + FPL − ε");
    }
    let top = tpl.iter().copied().fold(0.0, f64::max);
    assert_close(num(out, "max_tpl"), top, 1e-15, "max_tpl is the max of tpl");
    assert_eq!(out["guarantee"]["holds"], Value::Bool(true));
    for key in ["sup_backward", "sup_forward"] {
        assert!(out.get(key).is_some(), "{key} present");
    }
}

#[test]
fn upper_bound_json_contract_and_bound() {
    let d = Scratch::new("alloc_ub");
    let out = allocate(&d, "upper-bound", &["--alpha", "1", "--horizon", "30"]);
    check_contract(&out, "upper-bound", 1.0, 30);
    let b = nums(&out, "budgets");
    assert!(b.iter().all(|&e| e == b[0]), "one constant ε");
    assert!(num(&out, "max_tpl") <= 1.0);
    // sup_B + sup_F − ε = α at the chosen ε (Algorithm 7).
    assert_close(num(&out, "sup_backward") + num(&out, "sup_forward") - b[0], 1.0, 1e-9, "Alg. 7 equation");
}

#[test]
fn quantified_json_reaches_alpha_at_every_step() {
    let d = Scratch::new("alloc_q");
    let out = allocate(&d, "quantified", &["--alpha", "2", "--horizon", "12"]);
    check_contract(&out, "quantified", 2.0, 12);
    for v in nums(&out, "tpl") {
        assert_close(v, 2.0, 1e-9, "TPL_t = α");
    }
    let b = nums(&out, "budgets");
    assert!(b[0] > b[1] && b[11] > b[10], "more budget at the ends");
    // Same middle ε as upper-bound (both solve sup_B + sup_F − ε = α).
    let ub = allocate(&d, "upper-bound", &["--alpha", "2", "--horizon", "12"]);
    assert_close(b[5], nums(&ub, "budgets")[0], 1e-9, "ε_mid = upper-bound ε");
}

#[test]
fn window_json_has_window_fields() {
    let d = Scratch::new("alloc_w");
    let out = allocate(&d, "window", &["--alpha", "1", "--horizon", "40", "--window", "5"]);
    check_contract(&out, "window", 1.0, 40);
    assert_eq!(num(&out, "window"), 5.0);
    assert!(num(&out, "max_window_leakage") <= 1.0 + 1e-12);
    assert_eq!(out["guarantee"]["quantity"], Value::String("max_window_leakage".into()));
    // --window with another strategy audits the windows too.
    let q = allocate(&d, "quantified", &["--alpha", "1", "--horizon", "40", "--window", "5"]);
    assert!(num(&q, "max_window_leakage") > 1.0, "quantified does not bound windows of 5");
}

#[test]
fn no_correlation_side_may_be_omitted() {
    let d = Scratch::new("alloc_one_side");
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let out =
        json(&["allocate", "--strategy", "quantified", "--backward", &pb, "--alpha", "1", "--horizon", "10"]);
    // Without forward knowledge L_F ≡ 0, so eq. 27 gives a_B = ε_1 = α.
    assert_close(nums(&out, "budgets")[0], 1.0, 1e-12, "a_B = α");
    for v in nums(&out, "tpl") {
        assert_close(v, 1.0, 1e-9, "TPL_t = α");
    }
    let none = json(&["allocate", "--strategy", "upper-bound", "--alpha", "0.5", "--horizon", "3"]);
    assert_eq!(nums(&none, "budgets"), vec![0.5; 3]);
}

#[test]
fn csv_and_table_formats() {
    let d = Scratch::new("alloc_formats");
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let (header, rows) =
        csv(&["allocate", "--strategy", "quantified", "--backward", &pb, "--alpha", "1", "--horizon", "7"]);
    assert_eq!(header, vec!["t", "budget", "bpl", "fpl", "tpl"]);
    assert_eq!(rows.len(), 7);
    let text =
        table(&["allocate", "--strategy", "quantified", "--backward", &pb, "--alpha", "1", "--horizon", "7"]);
    assert!(text.contains("quantified") && text.contains("holds"), "{text}");
}

#[test]
fn theorem_7_matrix_is_refused_by_unbounded_strategies_naming_the_file() {
    let d = Scratch::new("alloc_thm7");
    let id = d.file("identity.csv", IDENTITY3);
    let pf = d.file("smooth.csv", "0.9 0.05 0.05\n0.05 0.9 0.05\n0.05 0.05 0.9\n");
    for strategy in ["upper-bound", "quantified"] {
        let args = cmd(
            "allocate --strategy {} --backward {} --forward {} --alpha 1 --horizon 10",
            &[strategy, &id, &pf],
        );
        let run = bad_input(&args, &[&id, "Theorem 7"], &[]);
        assert!(run.stderr.contains("window"), "suggests the window strategy: {}", run.describe());
    }
    // The window strategy answers for a finite horizon: with L(α) = α every step leaks the sum.
    let out = json(&cmd(
        "allocate --strategy window --backward {} --forward {} --alpha 1 --horizon 20 --window 4",
        &[&id, &id],
    ));
    assert_close(nums(&out, "budgets")[0], 1.0 / 20.0, 1e-12, "ε = α/T");
    assert_eq!(out["sup_backward"], Value::Null);
    // Smoothing makes the same matrix usable.
    let ok = json(&cmd(
        "allocate --strategy upper-bound --backward {} --smoothing 0.1 --alpha 1 --horizon 5",
        &[&id],
    ));
    assert!(nums(&ok, "budgets")[0] > 0.0);
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let d = Scratch::new("alloc_bad");
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["allocate", "--backward", &pb].iter().map(|s| s.to_string()).collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec!["--strategy", "quantified", "--alpha", "0", "--horizon", "5"], vec!["--alpha", "0"]),
        (vec!["--strategy", "quantified", "--alpha=-1", "--horizon", "5"], vec!["--alpha", "-1"]),
        (vec!["--strategy", "upper-bound", "--alpha", "nan", "--horizon", "5"], vec!["--alpha", "nan"]),
        (vec!["--strategy", "upper-bound", "--alpha", "1", "--horizon", "0"], vec!["--horizon"]),
        (vec!["--strategy", "window", "--alpha", "1", "--horizon", "5"], vec!["--window"]),
        (
            vec!["--strategy", "window", "--alpha", "1", "--horizon", "5", "--window", "6"],
            vec!["--window", "6"],
        ),
        (
            vec!["--strategy", "window", "--alpha", "1", "--horizon", "5", "--window", "0"],
            vec!["--window", "0"],
        ),
    ];
    for (extra, needles) in cases {
        let args = base(&extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bad_input(&refs, &needles, &[]);
    }
    usage_error(&["allocate", "--strategy", "greedy", "--alpha", "1", "--horizon", "5"]);
    usage_error(&["allocate", "--alpha", "1", "--horizon", "5"]);
}

/// Runs `allocate`, then audits its printed budgets with `tpl leakage --budgets` (the JSON
/// array written back as a budget file): (allocate's output, leakage's output).
fn allocate_then_audit(
    d: &Scratch,
    strategy: &str,
    alpha: &str,
    horizon: &str,
    window: Option<&str>,
) -> (Value, Value) {
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let pf = d.file("pf.csv", FIG8_FORWARD);
    let mut args = vec!["allocate", "--strategy", strategy, "--backward", &pb, "--forward", &pf];
    args.extend(["--alpha", alpha, "--horizon", horizon]);
    if let Some(w) = window {
        args.extend(["--window", w]);
    }
    let out = json(&args);
    let budgets = d.file("budgets.json", &out["budgets"].to_string());
    let mut audit = vec!["leakage", "--budgets", &budgets, "--backward", &pb, "--forward", &pf];
    if let Some(w) = window {
        audit.extend(["--window", w]);
    }
    (out, json(&audit))
}

#[test]
fn printed_budgets_audit_within_alpha_through_the_leakage_command() {
    let d = Scratch::new("alloc_audit_printed");
    let cases: Vec<(&str, &str, &str, Option<&str>)> = vec![
        ("upper-bound", "1e-9", "3000", None),
        ("upper-bound", "1e-17", "3000", None),
        ("upper-bound", "0.3", "2", None),
        ("upper-bound", "7", "1", None),
        ("quantified", "1", "30", None),
        ("quantified", "1", "2", None),
        ("quantified", "1e-12", "500", None),
        ("quantified", "1000", "40", None),
        ("window", "0.7", "400", Some("50")),
        ("window", "1e-10", "60", Some("7")),
    ];
    for (strategy, alpha, horizon, window) in cases {
        let (out, audit) = allocate_then_audit(&d, strategy, alpha, horizon, window);
        let a: f64 = alpha.parse().unwrap();
        let audited = match window {
            Some(_) => num(&audit, "max_window_leakage"),
            None => num(&audit, "max_tpl"),
        };
        let what = format!("{strategy} α = {alpha}, T = {horizon}");
        assert!(audited <= a, "{what}: the printed budgets audit to {audited:?} > α");
        assert_eq!(num(&out, "max_tpl"), num(&audit, "max_tpl"), "{what}: allocate's audit is leakage's");
        assert_eq!(out["guarantee"]["holds"], Value::Bool(true), "{what}");
        assert!(num(&out, "max_tpl") <= a || window.is_some(), "{what}: holds means max ≤ α");
    }
}

#[test]
fn upper_bound_at_large_alpha_finds_the_largest_epsilon() {
    let d = Scratch::new("alloc_large_alpha");
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let pf = d.file("pf.csv", FIG8_FORWARD);
    for alpha in ["400", "1000", "100000"] {
        let args = cmd(
            "allocate --strategy upper-bound --backward {} --forward {} --alpha {} --horizon 50",
            &[&pb, &pf, alpha],
        );
        let run = tpl(&[&args[..], &["--format", "json"]].concat());
        let a: f64 = alpha.parse().unwrap();
        assert_eq!(run.code, Some(0), "α {alpha}\n{}", run.describe());
        let out: Value = serde_json::from_str(&run.stdout).unwrap();
        let eps = nums(&out, "budgets")[0];
        // For Fig. 8 the limit TPL is ε plus two constants below log 9: ε ≈ α − O(1).
        assert!(eps > a - 10.0 && num(&out, "max_tpl") <= a, "α {alpha}: ε {eps}\n{}", run.describe());
    }
}

#[test]
fn unreachable_targets_exit_2_instead_of_printing_a_violated_guarantee() {
    let d = Scratch::new("alloc_unreachable");
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let pf = d.file("pf.csv", FIG8_FORWARD);
    for strategy in ["upper-bound", "window"] {
        let args = cmd(
            "allocate --strategy {} --backward {} --forward {} --alpha 5e-324 --horizon 10 --window 3",
            &[strategy, &pb, &pf],
        );
        bad_input(&args, &["too small", "5e-324"], &[]);
    }
}

#[test]
fn matrices_of_different_sizes_are_refused_naming_both_sizes() {
    let d = Scratch::new("alloc_sizes");
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let pf = d.file("pf3.csv", "0.9 0.05 0.05\n0.05 0.9 0.05\n0.05 0.05 0.9\n");
    for strategy in ["upper-bound", "quantified", "window"] {
        let args = cmd(
            "allocate --strategy {} --backward {} --forward {} --alpha 1 --horizon 10 --window 3",
            &[strategy, &pb, &pf],
        );
        bad_input(&args, &["2×2", "3×3", &pb, &pf], &[]);
    }
}

#[test]
fn capped_upper_bound_budget_says_why_alpha_is_not_reached() {
    let d = Scratch::new("alloc_capped");
    let (pb, pf) = capped_matrices(&d);
    let args = capped_allocation("upper-bound", &pb, &pf);
    let out = json(&args);
    check_contract(&out, "upper-bound", 1e300, 5);
    let note = out["note"].as_str().expect("a note on the capped budget");
    for needle in ["capped at 0.223144", "log(1/0.8)", "backward", "not reached", "max TPL"] {
        assert!(note.contains(needle), "{needle:?} in {note}");
    }
    let eps = nums(&out, "budgets")[0];
    assert!(eps < (1.25f64).ln() && eps >= (1.25f64).ln() * (1.0 - 1e-15), "ε {eps}");
    let text = table(&args);
    assert!(text.contains("note: ε is capped at 0.223144") && text.contains("not reached"), "{text}");
    // An uncapped allocation has no note.
    let plain = allocate(&d, "upper-bound", &["--alpha", "1", "--horizon", "5"]);
    assert!(plain.get("note").is_none(), "{plain}");
    assert!(
        !table(&[
            "allocate",
            "--strategy",
            "upper-bound",
            "--backward",
            &pb,
            "--alpha",
            "0.1",
            "--horizon",
            "5"
        ])
        .contains("capped")
    );
}

#[test]
fn long_horizon_json_and_csv_stream_every_step() {
    let d = Scratch::new("alloc_long");
    let t = 1_000_000;
    for strategy in ["upper-bound", "quantified"] {
        let out = allocate(&d, strategy, &["--alpha", "1", "--horizon", "1000000"]);
        let tpl = nums(&out, "tpl");
        assert_eq!(tpl.len(), t);
        assert_eq!(nums(&out, "budgets").len(), t);
        assert_eq!(num(&out, "max_tpl"), tpl.iter().copied().fold(0.0, f64::max));
        assert!(num(&out, "max_tpl") <= 1.0);
    }
    let pb = d.file("pb.csv", FIG8_BACKWARD);
    let (header, rows) =
        csv(&cmd("allocate --strategy window --window 10 --backward {} --alpha 1 --horizon 1000000", &[&pb]));
    assert_eq!(header, vec!["t", "budget", "bpl", "fpl", "tpl"]);
    assert_eq!(rows.len(), t);
    assert_eq!(rows[t - 1][0], "1000000");
}
