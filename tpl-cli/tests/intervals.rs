//! `--interval` on post-processed estimates and `postprocess --chart`
//! ([`docs/intervals.md`](tpl_core::guide::intervals) §2): on the second half of the AIS week
//! released by `laplace` at ε = 0.5 per step, with matrices `tpl estimate --steps ..972` makes from
//! the first half, the bootstrap intervals of the default estimator hold the estimates, have
//! whole-number ends, and cover the true counts at least at their level less five points.

mod common;

use common::*;
use serde_json::json;

/// (scratch, the second half's counts file, its rows, the released CSV, the forward matrix).
fn released(name: &str) -> (Scratch, String, Vec<Vec<f64>>, String, String) {
    let d = Scratch::new(name);
    let counts = std::fs::read_to_string(week("counts.csv")).unwrap();
    let mut lines = counts.lines();
    let header = lines.next().unwrap();
    let second: Vec<&str> = lines.skip(972).collect();
    let text = format!("{header}\n{}\n", second.join("\n"));
    let truth: Vec<Vec<f64>> =
        second.iter().map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect()).collect();
    let second = d.file("second.csv", &text);
    let out = d.path("m");
    tpl_ok(&cmd("estimate --stream {} --steps ..972 --out {}", &[&week("stream.csv"), &out]));
    let releases = release_file(&d, "r.csv", &second, "--scheme laplace --epsilon 0.5 --window 1 --seed 4");
    (d, second, truth, releases, format!("{out}/transition_forward.csv"))
}

#[test]
fn estimate_intervals_of_both_methods_hold_the_estimates_and_cover_the_truth() {
    let (_d, _, truth, releases, forward) = released("intervals-cover");
    // The model's by default, the bootstrap's by name.
    for (extra, method) in
        [("", "model"), (" --interval-method bootstrap --replicates 40 --seed 2", "bootstrap")]
    {
        let out = json(&cmd(
            &format!("postprocess --releases {{}} --total 140 --forward {{}} --interval 0.9{extra}"),
            &[&releases, &forward],
        ));
        assert_eq!((&out["interval"], &out["interval_method"]), (&json!(0.9), &json!(method)));
        let (x, lo, hi) =
            (number_rows(&out["estimates"]), number_rows(&out["lower"]), number_rows(&out["upper"]));
        let (mut covered, mut total) = (0, 0);
        for t in 0..x.len() {
            for j in 0..x[t].len() {
                assert!(
                    lo[t][j] <= x[t][j] + 1e-9 && x[t][j] <= hi[t][j] + 1e-9,
                    "{method}: step {t} cell {j}"
                );
                assert!(lo[t][j] == lo[t][j].round() && hi[t][j] == hi[t][j].round() && lo[t][j] >= 0.0);
                assert!(hi[t][j] <= 140.0, "{method}: step {t} cell {j}");
                covered += usize::from(lo[t][j] <= truth[t][j] && truth[t][j] <= hi[t][j]);
                total += 1;
            }
        }
        let coverage = covered as f64 / total as f64;
        assert!(coverage >= 0.85, "{method}: coverage {coverage}");
    }
}

#[test]
fn bootstrap_settings_for_model_intervals_are_refused_naming_the_bootstrap() {
    let (_d, _, _, releases, forward) = released("intervals-seed");
    for (flag, given) in
        [("--seed", "--seed 3"), ("--replicates", "--replicates 50"), ("--sampler", "--sampler secure")]
    {
        for method in ["", " --interval-method model"] {
            let line = format!(
                "postprocess --releases {{}} --total 140 --forward {{}} --interval 0.9{method} {given}"
            );
            let run = usage_error(&cmd(&line, &[&releases, &forward]));
            assert!(
                run.stderr.contains(flag) && run.stderr.contains("--interval-method bootstrap"),
                "{}",
                run.describe()
            );
        }
    }
    let run = usage_error(&cmd(
        "postprocess --releases {} --total 140 --forward {} --interval-method bootstrap",
        &[&releases, &forward],
    ));
    assert!(run.stderr.contains("--interval <LEVEL>"), "{}", run.describe());
}

#[test]
fn chart_with_truth_and_band_and_bad_flags() {
    let (d, second, _, releases, forward) = released("intervals-chart");
    let svg = d.path("c.svg");
    let run = tpl_ok(&cmd(
        "postprocess --releases {} --total 140 --forward {} --interval 0.8 --chart {} --truth {} --format csv",
        &[&releases, &forward, &svg, &second],
    ));
    let header = run.stdout.lines().nth(1).unwrap();
    assert!(header.ends_with("hi_c22") && header.contains(",lo_c0,"), "{header}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    // The chart holds the true counts: its title says it is confidential.
    for needle in ["truth", "raw release", "estimate (smooth)", "80 % interval", "cell c22", "CONFIDENTIAL"] {
        assert!(drawn.contains(needle), "the chart shows {needle}");
    }
    let short = d.file("short.csv", "timestamp_bucket,c0\n0,1\n");
    bad_input(
        &cmd(
            "postprocess --releases {} --total 140 --forward {} --chart {} --truth {}",
            &[&releases, &forward, &svg, &short],
        ),
        &["short.csv", "1 steps × 1 cells"],
        &[],
    );
    bad_input(
        &cmd(
            "postprocess --releases {} --total 140 --forward {} --interval 0.9 --replicates 1",
            &[&releases, &forward],
        ),
        &["--replicates", "≥ 2"],
        &[],
    );
    usage_error(&cmd("postprocess --releases {} --total 140 --forward {} --seed 3", &[&releases, &forward]));
    bad_input(
        &cmd(
            "postprocess --releases {} --total 140 --forward {} --interval 0.9 --interval-method bootstrap --replicates 100000000",
            &[&releases, &forward],
        ),
        &["--replicates 100000000"],
        &[],
    );
}

#[test]
fn a_push_that_starts_with_a_repeat_carries_the_interval_of_the_earlier_publication() {
    let d = Scratch::new("intervals_push_repeat");
    let db = d.path("s.db");
    // `sample` publishes the first step of each window of 4 and repeats it.
    json(&cmd("stream init --db {} --scheme sample --epsilon 1 --window 4", &[&db]));
    let push = |from: usize, to: usize| {
        let rows: String = (from..to).map(|t| format!("{t},5,7\n")).collect();
        let counts = d.file(&format!("c{from}.csv"), &format!("timestamp_bucket,c0,c1\n{rows}"));
        json(&["stream", "push", "--db", &db, "--counts", &counts, "--interval", "0.9"])
    };
    let first = push(0, 1);
    let later = push(1, 3);
    assert_eq!(later["published"], serde_json::json!([false, false]));
    let (lo, hi) = (number_rows(&first["lower"]), number_rows(&first["upper"]));
    // The repeats carry the release and interval of step 1.
    assert_eq!(number_rows(&later["lower"]), vec![lo[0].clone(), lo[0].clone()]);
    assert_eq!(number_rows(&later["upper"]), vec![hi[0].clone(), hi[0].clone()]);
}
