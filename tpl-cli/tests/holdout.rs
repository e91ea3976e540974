//! Honest evaluation through the built binary: `tpl estimate --steps`, `tpl compare
//! --stream --train-steps/--score-steps/--allow-overlap`, what their outputs say about where
//! the matrices came from, the demo's out-of-sample protocol, and bad ranges.

mod common;

use common::*;
use serde_json::{Value, json};

/// The header and the data rows of a file whose first column is the bucket, keeping the rows
/// with a bucket in `buckets`.
fn rows_of_buckets(path: &str, buckets: std::ops::RangeInclusive<u64>) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for line in lines {
        let bucket: u64 = line.split(',').next().unwrap().parse().unwrap();
        if buckets.contains(&bucket) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The lines of a matrix file that are not comments.
fn matrix_lines(dir: &str, file: &str) -> Vec<String> {
    let text =
        std::fs::read_to_string(format!("{dir}/{file}")).unwrap_or_else(|e| panic!("{dir}/{file}: {e}"));
    text.lines().filter(|l| !l.starts_with('#')).map(String::from).collect()
}

const MATRIX_FILES: [&str; 3] =
    ["transition_forward.csv", "transition_backward.csv", "transition_counts.csv"];

/// The summary fields of `estimate` that depend only on the data estimated from.
fn estimated(j: &Value) -> Value {
    let keys = [
        "users",
        "horizon",
        "cells",
        "cell_ids",
        "transitions",
        "forward_identity_rows",
        "backward_identity_rows",
    ];
    keys.iter().map(|&k| (k.to_string(), j[k].clone())).collect::<serde_json::Map<_, _>>().into()
}

#[test]
fn estimate_steps_equals_estimating_from_a_file_of_only_those_rows() {
    let d = Scratch::new("holdout_estimate_steps");
    // Step t is bucket t − 1 in the AIS week; steps 500..1500 are buckets 499..1499.
    for (range, buckets) in [("500..1500", 499..=1499), ("..972", 0..=971), ("1900..", 1899..=1943)] {
        let part = d.file("part.csv", &rows_of_buckets(&week("stream.csv"), buckets));
        let (by_range, by_file) = (d.path("by_range"), d.path("by_file"));
        let a = json(&cmd(
            "estimate --stream {} --steps {} --cells 23 --out {}",
            &[&week("stream.csv"), range, &by_range],
        ));
        let b = json(&cmd("estimate --stream {} --cells 23 --out {}", &[&part, &by_file]));
        assert_eq!(estimated(&a), estimated(&b), "{range}");
        for file in MATRIX_FILES {
            assert_eq!(matrix_lines(&by_range, file), matrix_lines(&by_file, file), "{range}: {file}");
        }
        let first = std::fs::read_to_string(format!("{by_range}/transition_forward.csv")).unwrap();
        let expected_steps = a["steps"].as_array().unwrap();
        let named = format!("steps {}..{} of 1944", expected_steps[0], expected_steps[1]);
        assert!(first.lines().next().unwrap().contains(&named), "the file says which steps: {first}");
    }
    let all = json(&cmd("estimate --stream {} --out {}", &[&week("stream.csv"), &d.path("all")]));
    assert_eq!(all["steps"], json!([1, 1944]), "without --steps: every step");
}

#[test]
fn estimate_steps_keeps_the_cells_of_the_whole_stream() {
    let d = Scratch::new("holdout_estimate_cells");
    // Cell 0 is never visited in the first half of the week: its rows become identity rows,
    // and the matrices keep all 23 cells (they fit the counts of the other half).
    let out = d.path("half");
    let run =
        tpl(&cmd("estimate --stream {} --steps 1..972 --out {} --format json", &[&week("stream.csv"), &out]));
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let j = stdout_json(&run);
    assert_eq!((j["cells"].as_u64(), j["horizon"].as_u64()), (Some(23), Some(972)));
    assert_eq!(j["forward_identity_rows"], json!([0]));
    assert_eq!(j["steps"], json!([1, 972]));
    assert!(run.stderr.contains("in steps 1..972"), "{}", run.describe());
    assert_eq!(matrix_lines(&out, "transition_forward.csv").len(), 23);
}

/// A small stream: 3 users over 6 buckets (10, 20, …, 60), cells 0..2.
const SMALL: &str = "timestamp_bucket,user_id,location_cell\n\
    10,0,0\n10,1,1\n10,2,2\n20,0,0\n20,1,1\n20,2,2\n30,0,1\n30,1,1\n30,2,2\n\
    40,0,1\n40,1,2\n40,2,2\n50,0,1\n50,1,2\n50,2,0\n60,0,0\n60,1,2\n60,2,0\n";

#[test]
fn estimate_steps_are_positions_not_bucket_values() {
    let d = Scratch::new("holdout_estimate_positions");
    let stream = d.file("s.csv", SMALL);
    let out = d.path("o");
    // Steps 2..3 are buckets 20 and 30: user 0 moves 0 → 1, the others stay.
    json(&cmd("estimate --stream {} --steps 2..3 --out {}", &[&stream, &out]));
    assert_eq!(matrix_lines(&out, "transition_counts.csv"), ["0,1,0", "0,1,0", "0,0,1"]);
    let comment = std::fs::read_to_string(format!("{out}/transition_counts.csv")).unwrap();
    assert!(comment.contains("buckets 20 to 30 every 10"), "{comment}");
}

#[test]
fn bad_step_ranges_exit_2_with_one_line() {
    let d = Scratch::new("holdout_bad_ranges");
    let stream = d.file("s.csv", SMALL);
    let counts = d.file("c.csv", "timestamp_bucket,c0,c1\n0,3,4\n1,4,3\n2,5,2\n3,5,2\n");
    let out = d.path("o");
    let estimate = |range: &str| {
        cmd("estimate --stream {} --steps {} --out {}", &[&stream, range, &out])
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    for (range, needles) in [
        ("0..3", vec!["--steps", "0..3", "numbered from 1"]),
        ("5..2", vec!["--steps", "5..2", "empty"]),
        ("1..7", vec!["--steps", "1..7", "6 steps"]),
        ("7..", vec!["--steps", "7..", "6 steps"]),
        ("x", vec!["--steps", "not a step range"]),
        ("3", vec!["--steps", "not a step range"]),
    ] {
        let args = estimate(range);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bad_input(&refs, &needles, &[]);
    }
    let compare = |extra: &str| {
        let mut args: Vec<String> = cmd("compare --stream {} --epsilon 1 --window 2 --runs 1", &[&stream])
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.split_whitespace().map(String::from));
        args
    };
    for (extra, needles) in [
        ("--train-steps 1..9", vec!["--train-steps", "1..9", "6 steps"]),
        ("--train-steps 2..3", vec!["--train-steps 2..3", "1..1 and 4..6", "--score-steps"]),
        ("--train-steps ..", vec!["--train-steps 1..6", "no other step"]),
        (
            "--train-steps 1..3 --score-steps 3..6",
            vec!["--train-steps 1..3 --score-steps 3..6", "3..3", "--allow-overlap"],
        ),
        ("--train-steps 1..3 --score-steps 4..8", vec!["--score-steps", "4..8", "6 steps"]),
        ("--score-steps 4..3", vec!["--score-steps", "empty"]),
    ] {
        let args = compare(extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bad_input(&refs, &needles, &[]);
    }
    let args: Vec<String> = cmd("compare --counts {} --epsilon 1 --window 2 --score-steps 2..5", &[&counts])
        .iter()
        .map(|s| s.to_string())
        .collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    bad_input(&refs, &["--score-steps", "2..5", "4 steps"], &[]);
    // Flags that do not go together are refused by the parser.
    let m = d.file("p.csv", "1 0 0\n0 1 0\n0 0 1\n");
    for extra in [
        format!("--train-steps 1..3 --forward {m}"),
        format!("--train-steps 1..3 --backward {m}"),
        "--train-steps 1..3 --normalize".to_string(),
        "--allow-overlap".to_string(),
    ] {
        let args = compare(&extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        usage_error(&refs);
    }
    usage_error(&cmd("compare --counts {} --train-steps 1..2 --epsilon 1 --window 2", &[&counts]));
    usage_error(&cmd("compare --counts {} --stream {} --epsilon 1 --window 2", &[&counts, &stream]));
    usage_error(&["compare", "--epsilon", "1", "--window", "2"]);
}

#[test]
fn compare_train_steps_scores_the_other_steps_out_of_sample() {
    let d = Scratch::new("holdout_compare");
    let flags = "--epsilon 1 --window 10 --runs 1 --schemes laplace,sample,bd --postprocess map --seed 3";
    let stream = week("stream.csv");
    let held = json(&cmd(&format!("compare --stream {{}} --train-steps ..972 {flags}"), &[&stream]));
    assert_eq!(
        held["matrices"],
        json!({"source": "estimated", "train_steps": [1, 972], "score_steps": [973, 1944], "in_sample": false})
    );
    assert_eq!(held["horizon"], 972);
    // The same comparison by hand: matrices estimated from steps 1..972, the counts of
    // steps 973..1944 (buckets 972..1943) scored with them, the same seed: the same rows.
    let m = d.path("m");
    json(&cmd("estimate --stream {} --steps 1..972 --out {}", &[&stream, &m]));
    let second = d.file("second.csv", &rows_of_buckets(&week("counts.csv"), 972..=1943));
    let (pb, pf) = (format!("{m}/transition_backward.csv"), format!("{m}/transition_forward.csv"));
    let by_hand = json(&cmd(
        &format!("compare --counts {{}} --backward {{}} --forward {{}} {flags}"),
        &[&second, &pb, &pf],
    ));
    assert_eq!(held["rows"], by_hand["rows"], "the scored steps are the other half");
    assert_eq!(
        by_hand["matrices"],
        json!({"source": "files", "train_steps": null, "score_steps": [1, 972], "in_sample": null})
    );
    // Training on the second half scores the first.
    let later = json(&cmd(&format!("compare --stream {{}} --train-steps 973.. {flags}"), &[&stream]));
    assert_eq!(later["matrices"]["score_steps"], json!([1, 972]));
    // The table and the CSV say it too.
    let text = table(&cmd(&format!("compare --stream {{}} --train-steps ..972 {flags}"), &[&stream]));
    assert!(text.contains("estimated from steps 1..972") && text.contains("out of sample"), "{text}");
    let run =
        tpl_ok(&cmd(&format!("compare --stream {{}} --train-steps ..972 {flags} --format csv"), &[&stream]));
    let second_line = run.stdout.lines().nth(1).unwrap_or_default();
    assert_eq!(second_line, "# matrices=estimated train_steps=1..972 score_steps=973..1944 in_sample=false");
}

#[test]
fn an_overlap_is_scored_only_when_allowed_and_then_called_in_sample() {
    let flags = "--epsilon 1 --window 10 --runs 1 --schemes laplace --seed 3";
    let stream = week("stream.csv");
    let args = format!("compare --stream {{}} --train-steps .. --score-steps .. --allow-overlap {flags}");
    let j = json(&cmd(&args, &[&stream]));
    assert_eq!(
        j["matrices"],
        json!({"source": "estimated", "train_steps": [1, 1944], "score_steps": [1, 1944], "in_sample": true})
    );
    // In sample on the whole week: the matrices of `tpl estimate` on the whole stream, the
    // counts of the whole stream: the same rows as with the files of testdata/.
    let files = json(&cmd(
        &format!("compare --counts {{}} --backward {{}} --forward {{}} {flags}"),
        &[&week("counts.csv"), &week("transition_backward.csv"), &week("transition_forward.csv")],
    ));
    assert_eq!(j["rows"], files["rows"]);
    let text = table(&cmd(&args, &[&stream]));
    assert!(text.contains("IN SAMPLE") && text.contains("1944 of the 1944 scored steps"), "{text}");
}

#[test]
fn compare_says_where_given_matrices_came_from() {
    let d = Scratch::new("holdout_given");
    let counts = d.file("c.csv", "timestamp_bucket,c0,c1\n0,3,4\n1,4,3\n2,5,2\n3,5,2\n");
    let p = d.file("p.csv", "0.9 0.1\n0.2 0.8\n");
    let none = json(&cmd("compare --counts {} --epsilon 1 --window 2 --runs 1 --schemes bd", &[&counts]));
    assert_eq!(
        none["matrices"],
        json!({"source": "none", "train_steps": null, "score_steps": [1, 4], "in_sample": false})
    );
    let files = json(&cmd(
        "compare --counts {} --forward {} --epsilon 1 --window 2 --runs 1 --schemes bd --score-steps 2..",
        &[&counts, &p],
    ));
    assert_eq!(
        files["matrices"],
        json!({"source": "files", "train_steps": null, "score_steps": [2, 4], "in_sample": null})
    );
    assert_eq!(files["horizon"], 3, "only steps 2..4 are released and scored");
    let text = table(&cmd(
        "compare --counts {} --forward {} --epsilon 1 --window 2 --runs 1 --schemes bd",
        &[&counts, &p],
    ));
    assert!(text.contains("not known"), "{text}");
    let run = tpl_ok(&cmd(
        "compare --counts {} --forward {} --epsilon 1 --window 2 --runs 1 --format csv",
        &[&counts, &p],
    ));
    assert_eq!(run.stdout.lines().nth(1), Some("# matrices=files score_steps=1..4 in_sample=unknown"));
    // A stream without --train-steps is scored on its histogram, with the files given.
    let stream = d.file("s.csv", SMALL);
    let j = json(&cmd(
        "compare --stream {} --epsilon 1 --window 2 --runs 1 --schemes bd --score-steps ..4",
        &[&stream],
    ));
    assert_eq!(j["matrices"]["source"], "none");
    assert_eq!((j["horizon"].as_u64(), j["cells"].as_u64()), (Some(4), Some(3)));
}

#[test]
fn the_demo_scores_matrices_from_another_period() {
    let d = Scratch::new("holdout_demo");
    let out = d.path("demo");
    let j = json(&["demo", "--out", &out, "--runs", "1"]);
    assert_eq!(
        j["synthetic"]["matrices"],
        json!({"source": "estimated", "train_steps": [1, 120], "score_steps": [121, 240], "in_sample": false})
    );
    assert_eq!(
        j["ais_hour"]["matrices"],
        json!({"source": "estimated", "train_steps": [1, 27], "score_steps": [28, 55], "in_sample": false})
    );
    let report = html_page(&format!("{out}/report.html"));
    assert!(report.contains("out of sample") && report.contains("first half"), "{report}");
}

#[test]
fn allow_overlap_without_score_steps_is_refused_naming_both_flags() {
    let stream = week("stream.csv");
    let run = usage_error(&cmd(
        "compare --stream {} --train-steps ..10 --allow-overlap --epsilon 1 --window 2",
        &[&stream],
    ));
    assert!(
        run.stderr.contains("--allow-overlap") && run.stderr.contains("--score-steps"),
        "{}",
        run.describe()
    );
}
