//! `tpl postprocess` through the built binary ([`docs/map.md`](tpl_core::guide::map),
//! [`docs/formats.md`](tpl_core::guide::formats) §8): the JSON contract, the two-command pipeline
//! from `tpl release --format csv`, headered and headerless releases, byte-identical reruns, the
//! MSE gain on a correlated stream, and every bad input.

mod common;

use common::*;
use serde_json::Value;

fn rows(v: &Value) -> Vec<Vec<f64>> {
    number_rows(&v["estimates"])
}

#[test]
fn json_contract_and_the_hand_case() {
    let d = Scratch::new("pp_contract");
    // A hand case: p = (½, ½), r = (10, 0), N = 10, a = ln 2 (ε = 2 ln 2, Δ = 2) → x = (8, 2).
    let r = d.file("r.csv", "10,0\n");
    let p = d.file("p.csv", "0.5 0.5\n");
    let eps = s(2.0 * 2f64.ln());
    let out = json(&cmd(
        "postprocess --releases {} --total 10 --epsilon {} --prior {} --estimator map",
        &[&r, &eps, &p],
    ));
    let keys: Vec<&str> = out.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["estimator", "t", "estimates", "estimator_default", "causal"]);
    assert_eq!(out["estimator"], "map");
    assert_eq!((&out["estimator_default"], &out["causal"]), (&Value::Bool(false), &Value::Bool(true)));
    assert_eq!(nums(&out, "t"), vec![1.0]);
    let x = &rows(&out)[0];
    assert_close(x[0], 8.0, 1e-12, "x0");
    assert_close(x[1], 2.0, 1e-12, "x1");

    let int = json(&cmd(
        "postprocess --releases {} --total 10 --epsilon {} --prior {} --estimator map-integer",
        &[&r, &eps, &p],
    ));
    assert_eq!(int["estimator"], "map-integer");
    for v in int["estimates"][0].as_array().unwrap() {
        assert!(v.is_u64(), "map-integer prints JSON integers: {int}");
    }
    let mle =
        json(&["postprocess", "--releases", &r, "--total", "4", "--epsilon", "1", "--estimator", "mle"]);
    assert_eq!(rows(&mle)[0], vec![4.0, 0.0]);
}

#[test]
fn tie_rule_and_the_mle_edge_cases() {
    let d = Scratch::new("pp_reference_cases");
    let zero = d.file("zero.csv", "0,0,0\n");
    let out = json(&cmd(
        "postprocess --releases {} --total 4 --epsilon 1 --prior uniform --estimator map-integer",
        &[&zero],
    ));
    assert_eq!(rows(&out)[0], vec![2.0, 1.0, 1.0], "ties go to the lower cell first");
    for (r, n, want) in
        [("5,0,3", "4", [3.0, 0.0, 1.0]), ("1,1,1", "6", [2.0, 2.0, 2.0]), ("-2,0,7", "4", [0.0, 0.0, 4.0])]
    {
        let f = d.file("mle.csv", &format!("{r}\n"));
        let out =
            json(&["postprocess", "--releases", &f, "--total", n, "--epsilon", "1", "--estimator", "mle"]);
        assert_eq!(rows(&out)[0], want, "mle of r = ({r}), N = {n}");
    }
}

/// A correlated population: 60 users in 3 cells, who mostly stay, and a noisy release.
fn correlated_counts() -> (String, Vec<Vec<f64>>) {
    let mut text = String::from("timestamp_bucket,c0,c1,c2\n");
    let mut truth = Vec::new();
    for t in 0..30usize {
        // A slow drift between cells 0 and 1, cell 2 constant: rows sum to 60.
        let shift = (t / 3) as f64;
        let row = vec![30.0 - shift, 10.0 + shift, 20.0];
        text.push_str(&format!("{t},{},{},{}\n", row[0], row[1], row[2]));
        truth.push(row);
    }
    (text, truth)
}

const STAY: &str = "0.9 0.1 0\n0.05 0.95 0\n0 0 1\n";

/// The files of [`correlated_counts`] in `d`: the counts and the forward matrix `STAY` that
/// made them, with the true counts.
fn correlated_files(d: &Scratch) -> (String, String, Vec<Vec<f64>>) {
    let (counts, truth) = correlated_counts();
    (d.file("counts.csv", &counts), d.file("pf.csv", STAY), truth)
}

#[test]
fn release_csv_pipes_into_postprocess() {
    let d = Scratch::new("pp_pipeline");
    let (counts, pf, _) = correlated_files(&d);
    let r = release_file(&d, "r.csv", &counts, "--scheme bd --epsilon 2 --window 5 --seed 3");
    // The budgets come from the publication_budget column: 0 where a release repeats.
    let from_column = json(&["postprocess", "--releases", &r, "--total", "60", "--forward", &pf]);
    let est = rows(&from_column);
    assert_eq!(est.len(), 30);
    for x in &est {
        assert_close(x.iter().sum(), 60.0, 1e-12, "every estimate sums to N");
        assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0), "{x:?}");
    }
    // The same budgets given explicitly give byte-identical output.
    let column: Vec<String> = std::fs::read_to_string(&r)
        .expect("read the releases")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().to_string())
        .collect();
    assert!(column.iter().any(|b| b == "0"), "bd skips some steps: {column:?}");
    let b = d.file("b.txt", &(column.join("\n") + "\n"));
    let run_a =
        tpl(&["postprocess", "--releases", &r, "--total", "60", "--forward", &pf, "--format", "json"]);
    let run_b = tpl(&cmd(
        "postprocess --releases {} --total 60 --forward {} --budgets {} --format json",
        &[&r, &pf, &b],
    ));
    assert_eq!(run_a.stdout, run_b.stdout, "column and budget file agree, byte for byte");
    let again =
        tpl(&["postprocess", "--releases", &r, "--total", "60", "--forward", &pf, "--format", "json"]);
    assert_eq!(run_a.stdout, again.stdout, "same inputs, same bytes");
}

#[test]
fn map_beats_the_raw_release_on_correlated_data() {
    let d = Scratch::new("pp_mse");
    let (counts, pf, truth) = correlated_files(&d);
    let release =
        json(&cmd("release --counts {} --scheme laplace --epsilon 0.2 --window 1 --seed 11", &[&counts]));
    let raw: Vec<Vec<f64>> =
        rows(&Value::Object([("estimates".to_string(), release["releases"].clone())].into_iter().collect()));
    let text: String =
        raw.iter().map(|r| r.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",") + "\n").collect();
    let r = d.file("r.csv", &text);
    let map = rows(&json(&cmd(
        "postprocess --releases {} --total 60 --epsilon 0.2 --forward {} --prior uniform --causal",
        &[&r, &pf],
    )));
    let mse = |est: &[Vec<f64>]| {
        let n = (est.len() * est[0].len()) as f64;
        est.iter().zip(&truth).flat_map(|(e, t)| e.iter().zip(t).map(|(a, b)| (a - b).powi(2))).sum::<f64>()
            / n
    };
    let (raw_mse, map_mse) = (mse(&raw), mse(&map));
    assert!(map_mse < raw_mse, "MAP MSE {map_mse} must be below the raw release's {raw_mse}");
}

#[test]
fn headered_and_headerless_releases_agree() {
    let d = Scratch::new("pp_header");
    let [pf, plain, headed] = d.files([
        ("pf.csv", STAY),
        ("plain.csv", "12,30,18\n9.5,-2,40\n"),
        ("headed.csv", "timestamp_bucket,c0,c1,c2\n0,12,30,18\n1,9.5,-2,40\n"),
    ]);
    fn estimate<'a>(releases: &'a str, pf: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args =
            cmd("postprocess --releases {} --total 60 --epsilon 0.5 --forward {}", &[releases, pf]);
        args.extend(extra);
        args
    }
    for est in ["map", "map-integer", "mle"] {
        let [a, b] =
            [&plain, &headed].map(|r| tpl(&estimate(r, &pf, &["--estimator", est, "--format", "json"])));
        assert_eq!(a.code, Some(0), "{}", a.describe());
        assert_eq!(a.stdout, b.stdout, "{est}");
    }
    let (header, body) = csv(&estimate(&plain, &pf, &[]));
    assert_eq!(header, ["t", "x0", "x1", "x2"]);
    assert_eq!(body.len(), 2);
    let text = table(&estimate(&plain, &pf, &[]));
    assert!(text.contains("N = 60"), "{text}");
}

#[test]
fn zero_prior_cell_with_a_positive_release_is_not_nan() {
    let d = Scratch::new("pp_zero_prior");
    let r = d.file("r.csv", "5,5\n");
    let p = d.file("p.csv", "0,1\n");
    for est in ["map", "map-integer"] {
        let out = json(&cmd(
            "postprocess --releases {} --total 10 --epsilon 1 --prior {} --estimator {}",
            &[&r, &p, est],
        ));
        assert_eq!(rows(&out)[0], vec![0.0, 10.0], "{est}");
    }
    // The frequency prior warns (on stderr only) about cells whose first release is ≤ 0, for
    // the estimators that use it; `map` starts from the release projected and does not.
    let r0 = d.file("r0.csv", "0,7\n");
    for (estimator, warns) in [("map-dbsec", true), ("map", false)] {
        let run = tpl(&[
            "postprocess",
            "--releases",
            &r0,
            "--total",
            "7",
            "--epsilon",
            "1",
            "--estimator",
            estimator,
            "--format",
            "json",
        ]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        let warned = run.stderr.contains("warning") && run.stderr.contains("column c0");
        assert_eq!(warned, warns, "{estimator}: {}", run.describe());
        assert!(serde_json::from_str::<Value>(&run.stdout).is_ok());
    }
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let d = Scratch::new("pp_bad");
    let [r, r1, pf, pf2, nan, ragged, p_len, p_sum, p_neg, p_rows, b_short, b_neg] = d.files([
        ("r.csv", "3,4,5\n6,2,4\n"),
        ("r1.csv", "3,4,5\n"),
        ("pf.csv", STAY),
        ("pf2.csv", "0.5 0.5\n0.5 0.5\n"),
        ("nan.csv", "3,4,5\n6,nan,4\n"),
        ("ragged.csv", "3,4,5\n6,4\n"),
        ("plen.csv", "0.5,0.5\n"),
        ("psum.csv", "0.5,0.5,0.5\n"),
        ("pneg.csv", "-0.5,1,0.5\n"),
        ("prows.csv", "0.5,0.5,0\n0.5,0.5,0\n"),
        ("bshort.txt", "0.5\n"),
        ("bneg.txt", "0.5\n-1\n"),
    ]);
    let missing = d.path("missing.csv");
    let base = ["postprocess", "--releases"];
    let cases: Vec<(Vec<&str>, Vec<&str>, Vec<&str>)> = vec![
        (vec![&r, "--total", "12", "--epsilon", "0", "--forward", &pf], vec!["--epsilon"], vec!["0"]),
        (vec![&r, "--total", "12", "--epsilon", "-1", "--forward", &pf], vec!["--epsilon"], vec!["-1"]),
        (
            vec![&r, "--total", "12", "--epsilon", "1", "--forward", &pf, "--sensitivity", "0"],
            vec!["--sensitivity"],
            vec!["0"],
        ),
        (vec![&nan, "--total", "12", "--epsilon", "1", "--forward", &pf], vec!["nan.csv:2"], vec![]),
        (vec![&ragged, "--total", "12", "--epsilon", "1", "--forward", &pf], vec!["ragged.csv:2"], vec![]),
        (vec![&missing, "--total", "12", "--epsilon", "1"], vec!["missing.csv"], vec![]),
        (vec![&r, "--total", "12", "--epsilon", "1"], vec!["--forward", "smooth"], vec![]),
        (vec![&r, "--total", "12", "--epsilon", "1", "--causal"], vec!["--forward", "map"], vec![]),
        (vec![&r, "--total", "12", "--epsilon", "1", "--forward", &pf2], vec!["pf2.csv", "2×2"], vec!["3"]),
        (vec![&r1, "--total", "12", "--epsilon", "1", "--prior", &p_len], vec!["plen.csv"], vec!["2", "3"]),
        (vec![&r1, "--total", "12", "--epsilon", "1", "--prior", &p_sum], vec!["psum.csv"], vec!["1.5"]),
        (vec![&r1, "--total", "12", "--epsilon", "1", "--prior", &p_neg], vec!["pneg.csv"], vec!["-0.5"]),
        (vec![&r1, "--total", "12", "--epsilon", "1", "--prior", &p_rows], vec!["prows.csv:2"], vec![]),
        (
            vec![&r, "--total", "12", "--budgets", &b_short, "--forward", &pf],
            vec!["bshort.txt", "r.csv"],
            vec!["1", "2"],
        ),
        (vec![&r, "--total", "12", "--budgets", &b_neg, "--forward", &pf], vec!["bneg.txt:2"], vec!["-1"]),
        (
            vec![&r, "--total", "12", "--forward", &pf],
            vec!["--epsilon", "--budgets", "publication_budget"],
            vec![],
        ),
    ];
    for (args, needles, values) in cases {
        let mut all: Vec<&str> = base.to_vec();
        all.extend(args);
        bad_input(&all, &needles, &values);
    }
    usage_error(&["postprocess", "--releases", &r, "--total", "-3", "--epsilon", "1"]);
    usage_error(&["postprocess", "--releases", &r, "--total", "2.5", "--epsilon", "1"]);
    usage_error(&cmd("postprocess --releases {} --total 12 --epsilon 1 --estimator magic", &[&r]));
    usage_error(&["postprocess", "--releases", &r, "--total", "12", "--epsilon", "1", "--budgets", &b_short]);
}

#[test]
fn every_estimator_runs_and_says_which_it_is() {
    let d = Scratch::new("pp_estimators");
    let (counts, pf, truth) = correlated_files(&d);
    let r = release_file(&d, "r.csv", &counts, "--scheme laplace --epsilon 0.5 --window 1 --seed 4");
    let backward = d.file("pb.csv", "0.95 0.05 0\n0.1 0.9 0\n0 0 1\n");
    let mut errors = Vec::new();
    for estimator in ["map", "map-dbsec", "map-integer", "mle", "smooth"] {
        let out = json(&cmd(
            "postprocess --releases {} --total 60 --forward {} --backward {} --estimator {}",
            &[&r, &pf, &backward, estimator],
        ));
        assert_eq!(out["estimator"], estimator);
        let est = rows(&out);
        for x in &est {
            assert_close(x.iter().sum(), 60.0, 1e-9, "every estimate sums to N");
        }
        let mse: f64 =
            est.iter().zip(&truth).flat_map(|(x, y)| x.iter().zip(y).map(|(u, v)| (u - v).powi(2))).sum();
        errors.push((estimator, mse / 90.0));
        // The CSV records how the estimates were made on its `#` line.
        let run = tpl_ok(&cmd(
            "postprocess --releases {} --total 60 --forward {} --backward {} --estimator {} --format csv",
            &[&r, &pf, &backward, estimator],
        ));
        let first = run.stdout.lines().next().unwrap();
        assert!(
            first.starts_with("# tpl ")
                && first.contains(&format!(
                    "postprocess: estimator={estimator} estimator_default=false total=60"
                )),
            "{first}"
        );
    }
    let error = |name| errors.iter().find(|e| e.0 == name).unwrap().1;
    assert!(error("smooth") < error("map-dbsec"), "{errors:?}");
    // A backward matrix of the wrong size is refused, naming the file.
    let small = d.file("small.csv", "1 0\n0 1\n");
    bad_input(
        &cmd(
            "postprocess --releases {} --total 60 --forward {} --backward {} --estimator smooth",
            &[&r, &pf, &small],
        ),
        &["backward matrix is 2×2", &small],
        &[],
    );
}

#[test]
fn a_total_beyond_u64_is_too_large_not_malformed() {
    let scratch = Scratch::new("pp-total-huge");
    let r = scratch.file("r.csv", "3,7\n4,6\n");
    let run =
        usage_error(&["postprocess", "--releases", &r, "--total", "100000000000000000000", "--epsilon", "1"]);
    assert!(run.stderr.contains("100000000000000000000 exceeds 2^53"), "{}", run.describe());
    assert!(!run.stderr.contains("not a whole number"), "{}", run.describe());
}

#[test]
fn replicates_without_interval_is_refused_naming_both_flags() {
    let scratch = Scratch::new("pp-replicates");
    let r = scratch.file("r.csv", "3,7\n4,6\n");
    let run = usage_error(&cmd("postprocess --releases {} --total 10 --epsilon 1 --replicates 5", &[&r]));
    assert!(run.stderr.contains("--replicates") && run.stderr.contains("--interval"), "{}", run.describe());
}

#[test]
fn the_defaults_are_smooth_offline_and_the_causal_filter_online() {
    let d = Scratch::new("pp_defaults");
    let (r, pf, _) = correlated_files(&d);
    let base = ["postprocess", "--releases", &r, "--total", "60", "--epsilon", "0.5", "--forward", &pf];
    let with = |extra: &[&str]| json(&[&base[..], extra].concat());
    let fields = |v: &Value| (v["estimator"].clone(), v["estimator_default"].clone(), v["causal"].clone());
    let b = Value::Bool;
    assert_eq!(fields(&with(&[])), ("smooth".into(), b(true), b(false)), "offline: smooth by default");
    assert_eq!(fields(&with(&["--causal"])), ("map".into(), b(true), b(true)), "--causal: the causal filter");
    assert_eq!(fields(&with(&["--estimator", "map"])), ("map".into(), b(false), b(true)));
    assert_eq!(fields(&with(&["--causal", "--estimator", "mle"])), ("mle".into(), b(false), b(true)));
    // The default is the smoother itself, and --causal the filter itself, to the last bit.
    assert_eq!(with(&[])["estimates"], with(&["--estimator", "smooth"])["estimates"]);
    assert_eq!(with(&["--causal"])["estimates"], with(&["--estimator", "map"])["estimates"]);
    for not_causal in ["smooth", "kalman"] {
        bad_input(
            &[&base[..], &["--causal", "--estimator", not_causal]].concat(),
            &["--causal", not_causal],
            &[],
        );
    }
    // The CSV's `#` line and the table say it too.
    let csv = tpl_ok(&[&base[..], &["--format", "csv"]].concat()).stdout;
    assert!(
        csv.lines().next().unwrap_or_default().contains("estimator=smooth estimator_default=true"),
        "{csv}"
    );
    let table = tpl_ok(&base).stdout;
    assert!(table.starts_with("Estimator smooth (the default"), "{table}");
}

#[test]
fn a_prior_the_estimator_does_not_use_is_checked_and_said() {
    let d = Scratch::new("pp_prior_unused");
    let (r, pf, _) = correlated_files(&d);
    // Three cells, as STAY: a prior unlike the frequency one.
    let p = d.file("p.csv", "0.2,0.3,0.5\n");
    for estimator in ["smooth", "kalman", "mle"] {
        let run = tpl_ok(&cmd(
            "postprocess --releases {} --total 60 --epsilon 0.5 --forward {} --estimator {} --prior {}",
            &[&r, &pf, estimator, &p],
        ));
        assert!(run.stderr.contains("the prior given is not used"), "{estimator}: {}", run.describe());
    }
    // The filter uses it: no such warning.
    let run = tpl_ok(&cmd(
        "postprocess --releases {} --total 60 --epsilon 0.5 --forward {} --causal --prior {}",
        &[&r, &pf, &p],
    ));
    assert!(!run.stderr.contains("not used"), "{}", run.describe());
}
