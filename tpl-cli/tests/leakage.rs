//! `tpl leakage` through the built binary: the JSON contract (the BPL/FPL recursions of the
//! TKDE paper, budget files, window leakage), its CSV and table, and extreme inputs that must
//! end in finite numbers or a clean one-line error.

mod common;

use common::*;
use serde_json::Value;

/// A forward matrix over the states of [`EXAMPLE4`].
const PF3: &str = "0.8 0.1 0.1\n0.2 0.7 0.1\n0.1 0.2 0.7\n";

#[test]
fn leakage_json_both_matrices_follows_the_recursions() {
    let d = Scratch::new("leakage_both");
    let pb = d.file("pb.csv", EXAMPLE4);
    let pf = d.file("pf.csv", PF3);
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
    let [m, bj, bt] = d.files([
        ("ex4.csv", EXAMPLE4),
        ("budgets.json", "[0.1, 0, 0.25, 0.05]"),
        ("budgets.txt", "0.1\n0\n0.25\n0.05\n"),
    ]);
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
    let [pb, pf, b] =
        d.files([("pb.csv", EXAMPLE4), ("pf.csv", PF3), ("b.txt", "0.1\n0\n0.3\n0.05\n0.2\n0.1\n0.15\n")]);
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

// ---------------------------------------------------------------------------------------------
// Robustness: extreme but valid-looking inputs must never crash or print null numbers
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

/// Regression: the budgets of a release calibrated to Δ = 1 were audited as if Δ = 2, which
/// halved the leakage. `--sensitivity` audits each ε_t as 2·ε_t/Δ, and the audit of a
/// stream's budgets then equals what `stream status` reports for it.
#[test]
fn leakage_audits_a_releases_budgets_at_its_sensitivity() {
    let d = Scratch::new("leakage_sensitivity");
    let pb = d.file("pb.csv", EXAMPLE4);
    let once = d.file("b1.txt", "0.2\n0.2\n0\n0.2\n");
    let twice = d.file("b2.txt", "0.4\n0.4\n0\n0.4\n");
    let at_one =
        json(&["leakage", "--backward", &pb, "--forward", &pb, "--budgets", &once, "--sensitivity", "1"]);
    let doubled = json(&["leakage", "--backward", &pb, "--forward", &pb, "--budgets", &twice]);
    assert_eq!(at_one, doubled);
    // A stream of Δ = 1: its budgets audited at Δ = 1 are its realised leakage.
    let db = d.path("s.db");
    tpl_ok(&cmd(
        "stream init --db {} --scheme uniform --epsilon 1 --window 5 --sensitivity 1 --backward {} --forward {}",
        &[&db, &pb, &pb],
    ));
    let c = d.file("c.csv", "timestamp_bucket,c0,c1,c2\n0,1,2,3\n1,2,2,2\n2,3,2,1\n");
    tpl_ok(&["stream", "push", "--db", &db, "--counts", &c]);
    let status = json(&["stream", "status", "--db", &db]);
    let budgets = d.file("b.json", &status["budgets"].to_string());
    let audit =
        json(&["leakage", "--backward", &pb, "--forward", &pb, "--budgets", &budgets, "--sensitivity", "1"]);
    assert_eq!(audit["max_tpl"], status["leakage"]["realized"]["max_tpl"]);
    bad_input(&["leakage", "--budgets", &once, "--sensitivity", "0"], &["--sensitivity"], &[]);
}
