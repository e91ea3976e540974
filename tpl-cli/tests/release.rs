//! `tpl release` through the built binary ([`docs/w-event.md`](tpl_core::guide::w_event),
//! [`docs/formats.md`](tpl_core::guide::formats) §7): the JSON contract with its exact key order,
//! (W) for every scheme, the CSV that is itself a counts file, seeded reproducibility, the discrete
//! sampler's integer noise, how every release says it was made, the limits of exact integer
//! releases, and every bad input (exit 2).

mod common;

use common::*;
use serde_json::Value;

const SCHEMES: [&str; 8] = ["laplace", "uniform", "sample", "bd", "ba", "pba", "dsat", "fast"];

/// A small integer stream: 40 steps × 3 cells with a drift, header like the data in `testdata/`.
fn stream() -> String {
    let mut s = String::from("timestamp_bucket,c0,c1,c2\n");
    for t in 0..40 {
        s.push_str(&format!("{t},{},{},{}\n", 100 + t, 50 + (t % 7) * 3, 20 + t / 4));
    }
    s
}

fn release(d: &Scratch, scheme: &str, extra: &[&str]) -> Value {
    let counts = d.file("counts.csv", &stream());
    let pb = d.file("pb.csv", EXAMPLE4);
    let mut args =
        vec!["release", "--counts", &counts, "--scheme", scheme, "--epsilon", "1", "--window", "5"];
    args.extend_from_slice(&["--seed", "7", "--backward", &pb]);
    args.extend_from_slice(extra);
    json(&args)
}

#[test]
fn json_contract_for_every_scheme() {
    let d = Scratch::new("release_contract");
    for scheme in SCHEMES {
        let out = release(&d, scheme, &[]);
        let keys: Vec<&str> = out.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "scheme",
                "epsilon",
                "window",
                "sensitivity",
                "sampler",
                "seeded",
                "version",
                "build",
                "t",
                "published",
                "budget",
                "test_budget",
                "publication_budget",
                "releases",
                "max_window_budget",
                "backward",
                "forward"
            ],
            "keys in the order of the contract (then the matrices given)"
        );
        assert_eq!(out["backward"]["n"], 3, "{out}");
        assert!(out["forward"].is_null(), "{out}");
        assert_eq!(out["scheme"], Value::String(scheme.into()));
        assert_eq!(out["sensitivity"], 2.0);
        assert_eq!(out["sampler"], "discrete");
        assert_eq!(out["seeded"], true);
        assert_eq!(out["version"], env!("CARGO_PKG_VERSION"));
        let t = nums(&out, "t");
        assert_eq!(t, (1..=40).map(f64::from).collect::<Vec<_>>());
        let published: Vec<bool> =
            out["published"].as_array().unwrap().iter().map(|v| v.as_bool().unwrap()).collect();
        assert!(published[0], "{scheme} publishes at t = 1");
        let releases = out["releases"].as_array().unwrap();
        assert_eq!(releases.len(), 40);
        for (k, r) in releases.iter().enumerate() {
            let r: Vec<f64> = r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert_eq!(r.len(), 3);
            assert!(r.iter().all(|v| v.fract() == 0.0), "discrete sampler: integer releases");
            if k > 0 && !published[k] {
                assert_eq!(releases[k], releases[k - 1], "{scheme}: a skip repeats the last release");
            }
        }
        let budget = nums(&out, "budget");
        let windows = (0..40usize).map(|t| budget[t.saturating_sub(4)..=t].iter().sum::<f64>());
        let max = windows.fold(0.0, f64::max);
        assert_close(num(&out, "max_window_budget"), max, 1e-12, "max_window_budget");
        if scheme == "laplace" {
            assert_close(max, 5.0, 1e-12, "laplace spends w·ε per window");
        } else {
            assert!(max <= 1.0 + 1e-12, "{scheme}: (W) holds, max {max}");
        }
    }
}

#[test]
fn seeded_runs_are_reproducible_and_flagged() {
    let d = Scratch::new("release_seed");
    let counts = d.file("counts.csv", &stream());
    let args =
        cmd("release --counts {} --scheme bd --epsilon 1 --window 5 --seed 3 --format json", &[&counts]);
    let (a, b) = (tpl(&args), tpl(&args));
    assert_eq!(a.code, Some(0));
    assert_eq!(a.stdout, b.stdout, "same seed, same bytes");
    assert!(a.stderr.contains("NOT private"), "a seeded release says it is not private: {}", a.describe());
    let other = tpl(&cmd(
        "release --counts {} --scheme bd --epsilon 1 --window 5 --seed 4 --format json",
        &[&counts],
    ));
    assert_ne!(a.stdout, other.stdout, "different seeds, different releases");
}

#[test]
fn csv_is_a_counts_file_and_float_sampler_works() {
    let d = Scratch::new("release_csv");
    let counts = d.file("counts.csv", &stream());
    let (header, rows) =
        csv(&cmd("release --counts {} --scheme ba --epsilon 1 --window 5 --seed 1", &[&counts]));
    assert_eq!(header, ["timestamp_bucket", "published", "budget", "publication_budget", "c0", "c1", "c2"]);
    assert_eq!(rows.len(), 40);
    for r in &rows {
        if r[1] == "0" {
            assert_eq!(r[3], "0", "no publication budget at a repeat");
        }
    }
    // Feed the release back as a counts file (noisy counts may be negative: use float input).
    let (_, csv_text) = (header, rows);
    let text: String =
        std::iter::once("timestamp_bucket,published,budget,publication_budget,c0,c1,c2".to_string())
            .chain(csv_text.iter().map(|r| r.join(",")))
            .map(|l| l + "\n")
            .collect();
    let noisy = d.file("noisy.csv", &text.replace(",-", ",").replace("\n-", "\n"));
    let out = json(&cmd(
        "release --counts {} --scheme uniform --epsilon 1 --window 5 --seed 2 --sampler float",
        &[&noisy],
    ));
    assert_eq!(nums(&out, "t").len(), 40);
}

#[test]
fn non_integer_counts_need_the_float_sampler() {
    let d = Scratch::new("release_float");
    let counts = d.file("frac.csv", "1.5,2\n3,4\n");
    bad_input(
        &["release", "--counts", &counts, "--scheme", "uniform", "--epsilon", "1", "--window", "2"],
        &["frac.csv:1", "--sampler float"],
        &["1.5"],
    );
    let out =
        json(&cmd("release --counts {} --scheme uniform --epsilon 1 --window 2 --sampler float", &[&counts]));
    assert_eq!(nums(&out, "t"), vec![1.0, 2.0]);
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let d = Scratch::new("release_bad");
    let good = d.file("good.csv", &stream());
    let ragged = d.file("ragged.csv", "1,2\n3\n");
    let negative = d.file("neg.csv", "1,2\n3,-4\n");
    let word = d.file("word.csv", "1,2\n3,x\n");
    let empty = d.file("empty.csv", "# nothing\n");
    let run = |counts: &str, eps: &str, w: &str, delta: &str| -> Vec<String> {
        cmd(
            "release --counts {} --scheme bd --epsilon {} --window {} --sensitivity {}",
            &[counts, eps, w, delta],
        )
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (run(&ragged, "1", "3", "2"), vec!["ragged.csv:2"]),
        (run(&negative, "1", "3", "2"), vec!["neg.csv:2", "column 2", "-4"]),
        (run(&word, "1", "3", "2"), vec!["word.csv:2", "column 2", "\"x\""]),
        (run(&empty, "1", "3", "2"), vec!["empty.csv"]),
        (run("missing.csv", "1", "3", "2"), vec!["missing.csv"]),
        (run(&good, "0", "3", "2"), vec!["--epsilon", "0"]),
        (run(&good, "1", "0", "2"), vec!["--window", "0"]),
        (run(&good, "1", "3", "0"), vec!["--sensitivity", "0"]),
    ];
    for (args, needles) in cases {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bad_input(&refs, &needles, &[]);
    }
    bad_input(
        &["release", "--counts", &good, "--scheme", "pba", "--epsilon", "1", "--window", "3"],
        &["pba", "--backward"],
        &[],
    );
    usage_error(&["release", "--counts", &good, "--scheme", "magic", "--epsilon", "1", "--window", "3"]);
    usage_error(&["release", "--counts", &good, "--scheme", "bd", "--epsilon", "1"]);
}

/// Regression: the release said nothing of its sensitivity, sampler or seed. Every output now
/// records them (JSON fields; a leading `#` line in CSV that counts readers skip), and
/// `secure` is still accepted for the sampler now called `discrete`.
#[test]
fn every_release_says_how_it_was_made() {
    let d = Scratch::new("release_provenance");
    let counts = d.file("counts.csv", &stream());
    let base = ["release", "--counts", &counts, "--scheme", "uniform", "--epsilon", "1", "--window", "5"];
    let unseeded = json(&base);
    assert_eq!(unseeded["seeded"], false);
    assert_eq!(unseeded["sampler"], "discrete");
    let mut args = base.to_vec();
    args.extend(["--sampler", "secure", "--sensitivity", "1", "--seed", "2"]);
    let out = json(&args);
    assert_eq!(out["sampler"], "discrete", "secure is an alias of discrete");
    assert_eq!(out["sensitivity"], 1.0);
    assert_eq!(out["seeded"], true);
    args.extend(["--format", "csv"]);
    let run = tpl(&args);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let first = run.stdout.lines().next().unwrap();
    for fact in cmd(
        "{} {} scheme=uniform epsilon=1 window=5 sensitivity=1 sampler=discrete seeded=true",
        &["# tpl ", env!("CARGO_PKG_VERSION")],
    ) {
        assert!(first.contains(fact), "the CSV's first line should say {fact:?}: {first}");
    }
    // The CSV still reads back as a release.
    let r = d.file("r.csv", &run.stdout);
    let pp = json(&["postprocess", "--releases", &r, "--total", "170", "--estimator", "mle"]);
    assert_eq!(pp["estimates"].as_array().unwrap().len(), 40);
    let text = table(&base);
    assert!(text.contains("Δ = 2") && text.contains("discrete"), "{text}");
}

/// Regression: `--sampler float` (not release-grade) ran without a word. It now warns on
/// stderr and the output says `"sampler": "float"`; the default sampler does not warn.
#[test]
fn float_sampler_warns_that_it_is_not_release_grade() {
    let d = Scratch::new("release_float_warns");
    let counts = d.file("counts.csv", &stream());
    let base = ["release", "--counts", &counts, "--scheme", "bd", "--epsilon", "1", "--window", "5"];
    let mut args = base.to_vec();
    args.extend(["--sampler", "float", "--format", "json"]);
    let run = tpl_ok(&args);
    assert!(run.stderr.contains("NOT release-grade"), "{}", run.describe());
    assert_eq!(stdout_json(&run)["sampler"], "float");
    let quiet = tpl_ok(&base);
    assert!(quiet.stderr.is_empty(), "the discrete sampler needs no warning: {}", quiet.describe());
}

/// Regression: a count of 10^20 was released as exactly 10^20 for every seed (the noise was
/// lost in the f64 sum) and 9007199254740993 was silently read as …992. Counts beyond ±2^52
/// are refused now with the file, line and cell; 2^52 itself takes its noise.
#[test]
fn counts_beyond_two_to_52_are_refused_not_rounded() {
    let d = Scratch::new("release_big");
    let cases = [
        ("e20.csv", "timestamp_bucket,c0,c1\n0,1,2\n1,100000000000000000000,5\n", "e20.csv:3"),
        ("odd.csv", "3,9007199254740993\n", "odd.csv:1"),
        ("above.csv", "1,2\n4503599627370497,0\n", "above.csv:2"),
    ];
    for (name, text, at) in cases {
        let f = d.file(name, text);
        for scheme in ["laplace", "bd"] {
            bad_input(
                &cmd("release --counts {} --scheme {} --epsilon 1 --window 2 --seed 1", &[&f, scheme]),
                &[at, "column", "2^52"],
                &[],
            );
        }
    }
    // Counts within the bound whose dissimilarity sum is not: bd refuses the step.
    let sum = d.file("sum.csv", "4503599627370496,4503599627370496\n0,0\n");
    bad_input(
        &["release", "--counts", &sum, "--scheme", "bd", "--epsilon", "1", "--window", "2", "--seed", "1"],
        &["sum.csv:2", "step 2", "dissimilarity sum", "2^52"],
        &[],
    );
    let edge = d.file("edge.csv", "4503599627370496,0\n");
    let mut seen = Vec::new();
    for seed in 1..=12 {
        let s = seed.to_string();
        let out =
            json(&cmd("release --counts {} --scheme laplace --epsilon 1 --window 1 --seed {}", &[&edge, &s]));
        let v = out["releases"][0][0].as_f64().unwrap();
        assert!(v.fract() == 0.0 && (v - 4503599627370496.0).abs() < 100.0, "{v}");
        seen.push(v);
    }
    seen.sort_by(f64::total_cmp);
    seen.dedup();
    assert!(seen.len() > 2, "the noise must vary with the seed: {seen:?}");
}

/// Regression: `--epsilon 1e-300` blamed the counts file and called the finite scale 2e300
/// non-finite. The error now names `--epsilon` and the scale that exceeds the sampler's bound
/// (or the quotient that overflows, never `inf`).
#[test]
fn tiny_epsilon_is_blamed_on_the_flag() {
    let d = Scratch::new("release_tiny_eps");
    let counts = d.file("counts.csv", &stream());
    for sampler in ["discrete", "float"] {
        let eps = if sampler == "float" { "1e-310" } else { "1e-300" };
        let run = bad_input(
            &cmd(
                "release --counts {} --scheme bd --epsilon {} --window 5 --sampler {}",
                &[&counts, eps, sampler],
            ),
            &["--epsilon", eps, "noise scale"],
            &[],
        );
        // 2/1e-300 exceeds the exact sampler's bound; 2/1e-310 overflows a double.
        let why = if sampler == "float" { "overflows" } else { "exceeds" };
        assert!(run.stderr.contains(why) && !has_token(&run.stderr, "inf"), "{}", run.describe());
        assert!(!run.stderr.contains("counts.csv"), "the counts are not at fault: {}", run.describe());
        assert!(!run.stderr.contains("finite"), "{}", run.describe());
    }
}

/// Windows far longer than the stream (up to 2^64 − 1) cost only what the stream needs: no
/// capacity-overflow panic, no allocation by w. With the float sampler every scheme runs and
/// keeps its window within ε. With the exact sampler, w = 10^9 runs too, while at w ≥ 2^62 a
/// test share ε/(2w) needs a noise scale beyond the sampler's bound: refused in one line
/// naming --epsilon.
#[test]
fn windows_longer_than_the_stream_run_without_allocating_by_w() {
    let d = Scratch::new("release_huge_window");
    let counts = d.file("counts.csv", &stream());
    for w in ["18446744073709551615", "4611686018427387904", "1000000000"] {
        for scheme in SCHEMES {
            let pb = d.file("pb.csv", EXAMPLE4);
            let args = cmd(
                "release --counts {} --scheme {} --epsilon 1 --window {} --backward {} --sampler float --seed 3",
                &[&counts, scheme, w, &pb],
            );
            let out = json(&args);
            assert_eq!(nums(&out, "budget").len(), 40, "{scheme} w = {w}");
            let max = num(&out, "max_window_budget");
            if scheme == "laplace" {
                assert_eq!(max, 40.0, "laplace spends ε at each of the 40 steps");
            } else {
                assert!(max <= 1.0, "{scheme} w = {w}: window spends {max}");
            }
        }
        let args = ["release", "--counts", &counts, "--scheme", "bd", "--epsilon", "1", "--window", w];
        if w == "1000000000" {
            assert!(num(&json(&args), "max_window_budget") <= 1.0);
        } else {
            bad_input(&args, &["--epsilon"], &[]);
        }
    }
}

/// The event-level scheme's window sum min(T, w)·ε can pass the largest double: refused in one
/// line instead of printing `null` for `max_window_budget`.
#[test]
fn a_window_sum_beyond_the_largest_double_is_refused() {
    let d = Scratch::new("release_window_overflow");
    let counts = d.file("counts.csv", &stream());
    let args = ["release", "--counts", &counts, "--scheme", "laplace", "--epsilon", "1e308", "--window", "5"];
    bad_input(&args, &["window"], &["1e308"]);
}

/// `--scheme planned --budgets FILE` spends the file's budgets step by step (0: repeat),
/// refuses a plan whose window exceeds ε and a stream longer than the plan, naming the file
/// or the line.
#[test]
fn planned_spends_the_budgets_file() {
    let d = Scratch::new("release_planned");
    let plan: Vec<String> = (0..40).map(|t| if t % 2 == 0 { "0.25".into() } else { "0".into() }).collect();
    let budgets = d.file("plan.txt", &(plan.join("\n") + "\n"));
    let out = release(&d, "planned", &["--budgets", &budgets]);
    assert_eq!(out["scheme"], "planned");
    let spent = nums(&out, "budget");
    assert_eq!(spent.len(), 40);
    for (t, b) in spent.iter().enumerate() {
        assert_eq!(*b, if t % 2 == 0 { 0.25 } else { 0.0 }, "step {}", t + 1);
    }
    assert!(num(&out, "max_window_budget") <= 1.0);
    // A window of 5 steps spending 1.25 > ε = 1: refused, naming the file and the step.
    let over = d.file("over.txt", &"0.25\n".repeat(40));
    let counts = d.file("counts.csv", &stream());
    let args = ["release", "--counts", &counts, "--scheme", "planned", "--epsilon", "1", "--window", "5"];
    let mut with = args.to_vec();
    with.extend_from_slice(&["--budgets", &over]);
    bad_input(&with, &["over.txt", "step 5"], &[]);
    // A plan shorter than the stream: the first step past it is refused.
    let short = d.file("short.txt", "0.5\n0\n");
    let mut with = args.to_vec();
    with.extend_from_slice(&["--budgets", &short]);
    bad_input(&with, &["step 3", "horizon of 2 steps"], &[]);
    // Without --budgets, or --budgets for another scheme: usage errors.
    usage_error(&args);
    let mut with =
        ["release", "--counts", &counts, "--scheme", "bd", "--epsilon", "1", "--window", "5"].to_vec();
    with.extend_from_slice(&["--budgets", &short]);
    usage_error(&with);
}

/// `--interval 0.9` on the AIS week released by `laplace` at ε = 0.5 per step (noise scale 4):
/// the exact discrete quantile is ±9, which covers 90.8 % of draws; over 3 seeds × 46 368
/// cells the coverage of the true counts is within a point of that.
#[test]
fn raw_release_intervals_cover_the_true_counts_at_their_exact_rate() {
    let counts = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/ais_nyharbor_week_5min/counts.csv");
    let text = std::fs::read_to_string(counts).unwrap();
    let truth: Vec<Vec<f64>> =
        text.lines().skip(1).map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect()).collect();
    let (mut covered, mut total) = (0usize, 0usize);
    for seed in ["1", "2", "3"] {
        let out = json(&cmd(
            "release --counts {} --scheme laplace --epsilon 0.5 --window 1 --interval 0.9 --seed {}",
            &[counts, seed],
        ));
        assert_eq!(out["interval"], 0.9);
        let (releases, lower, upper) =
            (number_rows(&out["releases"]), number_rows(&out["lower"]), number_rows(&out["upper"]));
        for t in 0..truth.len() {
            for j in 0..truth[t].len() {
                assert_eq!(upper[t][j] - releases[t][j], 9.0);
                assert_eq!(releases[t][j] - lower[t][j], 9.0);
                covered += usize::from(lower[t][j] <= truth[t][j] && truth[t][j] <= upper[t][j]);
                total += 1;
            }
        }
    }
    let coverage = covered as f64 / total as f64;
    assert!((coverage - 0.9079).abs() < 0.01, "coverage {coverage}");
}

/// The CSV carries `lo_c…`/`hi_c…` after the cells and still reads back as a releases file;
/// a repeat carries the interval of the publication it repeats; a bad level is refused.
#[test]
fn interval_columns_in_the_csv_and_repeats() {
    let d = Scratch::new("release_interval_csv");
    let counts = d.file("counts.csv", &stream());
    let (header, rows) = csv(&cmd(
        "release --counts {} --scheme sample --epsilon 1 --window 5 --interval 0.8 --seed 3",
        &[&counts],
    ));
    assert_eq!(&header[4..], ["c0", "c1", "c2", "lo_c0", "lo_c1", "lo_c2", "hi_c0", "hi_c1", "hi_c2"]);
    for pair in rows.windows(2) {
        if pair[1][1] == "0" {
            assert_eq!(pair[1][4..], pair[0][4..], "a repeat repeats the release and its interval");
        }
    }
    let released = d.file("released.csv", &tpl_ok(&cmd(
        "release --counts {} --scheme uniform --epsilon 1 --window 5 --interval 0.8 --seed 3 --format csv",
        &[&counts],
    )).stdout);
    let post = json(&cmd(
        "postprocess --releases {} --total 210 --forward {}",
        &[&released, &d.file("pf.csv", EXAMPLE4)],
    ));
    assert_eq!(number_rows(&post["estimates"]).len(), 40, "{post}");
    bad_input(
        &cmd("release --counts {} --scheme bd --epsilon 1 --window 5 --interval 1", &[&counts]),
        &["--interval"],
        &["1"],
    );
    bad_input(
        &cmd("release --counts {} --scheme bd --epsilon 1 --window 5 --interval 0", &[&counts]),
        &["--interval"],
        &["0"],
    );
}
