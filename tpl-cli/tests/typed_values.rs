//! Inputs as their authors typed them: the `timestamp_bucket` of a counts file is echoed by
//! the release and checked by the reader; numbers in messages are the tokens typed (or the
//! shortest digits of a double, never hundreds of digits or `inf`); a byte-order mark never
//! makes a file unreadable; matrices must fit the counts they are used with and the release
//! says which it used; notes name cell ids; output paths are never invented.

mod common;

use common::*;
use serde_json::Value;

const COUNTS: &str = "timestamp_bucket,c0,c1\n100,3,4\n200,5,6\n";

/// `tpl release` of `counts` with `scheme`, ε = 1, w = 2, and `extra` flags.
fn release_with<'a>(scheme: &'a str, counts: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["release", "--counts", counts, "--scheme", scheme, "--epsilon", "1", "--window", "2"];
    args.extend(extra);
    args
}

/// `tpl release` of `counts` with uniform, ε = 1, w = 2, seed 1, and `extra` flags.
fn release<'a>(counts: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = release_with("uniform", counts, &["--seed", "1"]);
    args.extend(extra);
    args
}

#[test]
fn release_csv_echoes_the_input_buckets_and_json_t_counts_steps() {
    let d = Scratch::new("typed_buckets_echo");
    let counts = d.file("c.csv", COUNTS);
    let (header, rows) = csv(&release(&counts, &[]));
    assert_eq!(header[0], "timestamp_bucket");
    let buckets: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(buckets, ["100", "200"]);
    let j = json(&release(&counts, &[]));
    assert_eq!(j["t"], serde_json::json!([1, 2]));
    // A file starting at bucket 0 keeps 0 (not 1); gaps are kept as they are.
    let zero = d.file("z.csv", "timestamp_bucket,c0\n0,1\n1,2\n7,3\n");
    let (_, rows) = csv(&release(&zero, &[]));
    assert_eq!(rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["0", "1", "7"]);
    // Headerless counts have no buckets: the step number.
    let headerless = d.file("h.csv", "3,4\n5,6\n");
    let (_, rows) = csv(&release(&headerless, &[]));
    assert_eq!(rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["1", "2"]);
    // The release CSV reads back as releases: its budgets, not its buckets, drive the filter.
    let out = tpl(&release(&counts, &["--format", "csv"]));
    let releases = d.file("r.csv", &out.stdout);
    let forward = d.file("pf.csv", FIG8_FORWARD);
    let j = json(&["postprocess", "--releases", &releases, "--forward", &forward, "--total", "9"]);
    assert_eq!(j["t"], serde_json::json!([1, 2]));
}

#[test]
fn counts_buckets_must_be_strictly_increasing_integers() {
    let d = Scratch::new("typed_buckets_check");
    for (name, bucket, needle) in [
        ("dup", "100", "not after 100"),
        ("down", "50", "not after 100"),
        ("neg", "-1", "\"-1\""),
        ("abc", "abc", "\"abc\""),
        ("huge", "18446744073709551616", "18446744073709551616"),
        ("frac", "100.5", "100.5"),
    ] {
        let counts = d.file(&format!("{name}.csv"), &format!("timestamp_bucket,c0\n100,1\n{bucket},2\n"));
        bad_input(&release(&counts, &[]), &[&format!("{name}.csv:3:"), "timestamp_bucket", needle], &[]);
    }
}

#[test]
fn pba_refuses_matrices_that_do_not_fit_the_counts() {
    let d = Scratch::new("typed_pba_size");
    let counts = d.file("c2.csv", COUNTS);
    let m3 = d.file("example4.csv", EXAMPLE4);
    let args = release_with("pba", &counts, &["--backward", &m3, "--forward", &m3]);
    bad_input(&args, &["example4.csv", "3×3", "c2.csv", "2 cells"], &[]);
}

#[test]
fn pba_release_records_the_matrices_it_used() {
    let d = Scratch::new("typed_pba_provenance");
    let counts = d.file("c.csv", COUNTS);
    let pb = d.file("pb.csv", FIG8_FORWARD);
    let args = release_with("pba", &counts, &["--backward", &pb, "--smoothing", "0.5", "--seed", "3"]);
    let j = json(&args);
    assert_eq!(j["backward"]["file"], Value::from(pb.as_str()));
    assert_eq!(j["backward"]["n"], 2);
    assert_eq!(j["backward"]["smoothing"], 0.5);
    assert!(j["forward"].is_null(), "{j}");
    let mut with_csv = args.to_vec();
    with_csv.extend(["--format", "csv"]);
    let run = tpl(&with_csv);
    let first = run.stdout.lines().next().unwrap_or("");
    assert!(first.starts_with('#') && first.contains(&format!("backward={pb}(n=2)")), "{}", run.describe());
    assert!(first.contains("smoothing=0.5") && !first.contains("forward="), "{}", run.describe());
}

#[test]
fn compare_csv_starts_with_a_provenance_line() {
    let d = Scratch::new("typed_compare_provenance");
    let counts = d.file("c.csv", COUNTS);
    let args =
        ["compare", "--counts", &counts, "--epsilon", "1", "--window", "2", "--runs", "2", "--format", "csv"];
    let run = tpl(&args);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let first = run.stdout.lines().next().unwrap_or("");
    for needle in ["# tpl ", "compare:", "epsilon=1", "sensitivity=2", "seeded=false", "window=2"] {
        assert!(first.contains(needle), "{needle:?} missing\n{}", run.describe());
    }
    let mut seeded = args.to_vec();
    seeded.extend(["--seed", "4"]);
    let run = tpl(&seeded);
    assert!(run.stdout.lines().next().unwrap_or("").contains("seeded=true seed=4"), "{}", run.describe());
}

#[test]
fn huge_smoothing_gives_uniform_rows_and_prints_s_short() {
    let d = Scratch::new("typed_smoothing_huge");
    let stream = d.file("s3.csv", "timestamp_bucket,user_id,location_cell\n0,1,0\n0,2,1\n1,1,1\n1,2,1\n");
    let out = d.path("e9");
    let run = tpl(&["estimate", "--stream", &stream, "--smoothing", "1e308", "--out", &out]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let forward = std::fs::read_to_string(format!("{out}/transition_forward.csv")).unwrap();
    let rows: Vec<&str> = forward.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows, ["0.5,0.5", "0.5,0.5"], "{forward}");
    assert!(forward.contains("s = 1e308") && !forward.contains("0000000000"), "{forward}");
    assert!(run.stdout.contains("s = 1e308") && !run.stdout.contains("0000000000"), "{}", run.describe());
}

#[test]
fn counts_in_errors_are_echoed_as_typed() {
    let d = Scratch::new("typed_counts_echo");
    let a = d.file("a.csv", "timestamp_bucket,c0,c1\n0,9007199254740993,4\n");
    bad_input(&release(&a, &[]), &["a.csv:2:", "column 2"], &["9007199254740993"]);
    let b = d.file("b.csv", "1,18446744073709551615\n");
    bad_input(&release(&b, &[]), &["b.csv:1:", "column 2"], &["18446744073709551615"]);
    let c = d.file("c.csv", "1,2.50\n");
    bad_input(&release(&c, &[]), &["c.csv:1:", "column 2"], &["2.50"]);
}

#[test]
fn nonzero_numbers_that_round_to_zero_are_refused() {
    let d = Scratch::new("typed_underflow");
    let counts = d.file("c.csv", COUNTS);
    let run =
        usage_error(&cmd("release --counts {} --scheme uniform --epsilon 1e-400 --window 2", &[&counts]));
    assert!(run.stderr.contains("1e-400") && run.stderr.contains("rounds to 0"), "{}", run.describe());
    let budgets = d.file("b.txt", "0.1\n1e-400\n");
    let pb = d.file("pb.csv", FIG8_FORWARD);
    bad_input(
        &["leakage", "--backward", &pb, "--budgets", &budgets],
        &["b.txt:2:", "rounds to 0"],
        &["1e-400"],
    );
    let tiny = d.file("tiny.csv", "timestamp_bucket,c0\n0,1e-400\n");
    bad_input(&release(&tiny, &[]), &["tiny.csv:2:", "column 2", "rounds to 0"], &["1e-400"]);
    // 0 typed as 0 (in any spelling) stays a valid value.
    let zeros = d.file("z.txt", "0.1\n0e-400\n0.0\n");
    json(&["leakage", "--backward", &pb, "--budgets", &zeros]);
}

#[test]
fn an_overflowing_noise_scale_is_named_without_inf() {
    let d = Scratch::new("typed_scale_overflow");
    let counts = d.file("c.csv", COUNTS);
    for sampler in ["discrete", "float"] {
        let args = cmd(
            "release --counts {} --scheme laplace --epsilon 1e-320 --window 2 --sensitivity 1e308 --sampler {}",
            &[&counts, sampler],
        );
        let run = bad_input(&args, &["sensitivity/budget = 1e308/1e-320 overflows"], &[]);
        assert!(!has_token(&run.stderr, "inf"), "{}", run.describe());
    }
    let args = cmd(
        "compare --counts {} --epsilon 1e-320 --window 2 --sensitivity 1e308 --runs 1 --schemes laplace --format json",
        &[&counts],
    );
    let run = tpl(&args);
    assert!(run.stdout.contains("1e308/1e-320 overflows"), "{}", run.describe());
    assert!(!has_token(&run.stdout, "inf"), "{}", run.describe());
}

/// Regression: a budget of 1 audited at sensitivity 1e-320 became the loss inf, and the audit
/// blamed "budget at step 1 is inf" on a file that holds 1. The loss 2·ε/Δ that overflows is
/// now refused naming the budget and the sensitivity, in `leakage`, `compare` and a stream.
#[test]
fn an_overflowing_loss_is_blamed_on_the_sensitivity() {
    let d = Scratch::new("typed_loss_overflow");
    let words = "the loss 2·ε/Δ of budget 1 at sensitivity 1e-320 overflows a double";
    let one = d.file("one.txt", "0\n1\n");
    let run = bad_input(
        &["leakage", "--budgets", &one, "--sensitivity", "1e-320"],
        &["--sensitivity", "one.txt: step 2", words],
        &[],
    );
    assert!(!has_token(&run.stderr, "inf"), "{}", run.describe());
    bad_input(
        &cmd("leakage --epsilon 1 --horizon 2 --sensitivity 1e-320", &[]),
        &["--sensitivity", words],
        &[],
    );
    let counts = d.file("c.csv", COUNTS);
    let pf = d.file("pf.csv", FIG8_FORWARD);
    let args = cmd(
        "compare --counts {} --forward {} --epsilon 1 --window 2 --sensitivity 1e-320 --runs 1 --schemes uniform --format json",
        &[&counts, &pf],
    );
    let run = tpl(&args);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let j: Value = serde_json::from_str(&run.stdout).unwrap();
    let error = j["rows"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("the loss 2·ε/Δ of budget") && !has_token(error, "inf"), "{error}");
    let db = d.path("s.db");
    bad_input(
        &cmd(
            "stream init --db {} --scheme uniform --epsilon 1 --window 2 --sensitivity 1e-320 --forward {}",
            &[&db, &pf],
        ),
        &["step 1 could never be released", "the loss 2·ε/Δ of budget"],
        &[],
    );
    assert!(!std::path::Path::new(&db).exists());
}

#[test]
fn a_byte_order_mark_is_skipped_in_every_input() {
    let d = Scratch::new("typed_bom");
    let bom = |name: &str, text: &str| d.file(name, &format!("\u{feff}{text}"));
    let matrix = bom("m.csv", FIG8_FORWARD);
    let matrix_json = bom("m.json", "[[0.8,0.2],[0.1,0.9]]");
    let a = json(&["supremum", "--matrix", &matrix, "--epsilon", "1"]);
    let b = json(&["supremum", "--matrix", &matrix_json, "--epsilon", "1"]);
    assert_eq!(a, b);
    let budgets = bom("b.txt", "0.8\n0.1\n");
    let budgets_json = bom("b.json", "[0.8, 0.1]");
    for file in [&budgets, &budgets_json] {
        let j = json(&["leakage", "--backward", &matrix, "--budgets", file]);
        assert_eq!(nums(&j, "epsilon"), [0.8, 0.1]);
    }
    let counts = bom("c.csv", COUNTS);
    let (_, rows) = csv(&release(&counts, &[]));
    assert_eq!(rows[0][0], "100");
    let stream = bom("s.csv", "timestamp_bucket,user_id,location_cell\n0,1,0\n1,1,1\n");
    json(&["estimate", "--stream", &stream, "--out", &d.path("est")]);
    let releases = bom("r.csv", "3,4\n5,6\n");
    let prior = bom("prior.csv", "0.5 0.5\n");
    json(&cmd(
        "postprocess --releases {} --epsilon 1 --forward {} --total 7 --prior {}",
        &[&releases, &matrix, &prior],
    ));
}

#[test]
fn huge_values_in_messages_are_printed_short() {
    let d = Scratch::new("typed_short_numbers");
    let (pb, pf) = capped_matrices(&d);
    let run = bad_input(&capped_allocation("quantified", &pb, &pf), &[], &["1e300"]);
    assert!(run.stderr.len() < 400 && !run.stderr.contains("0000000000"), "{}", run.describe());
    let big = d.file("big.txt", "1e300\n-1e300\n");
    let run = bad_input(&["leakage", "--backward", &pf, "--budgets", &big], &["big.txt:2:"], &["-1e300"]);
    assert!(!run.stderr.contains("0000000000"), "{}", run.describe());
}

#[test]
fn a_chart_path_is_named_as_given_and_no_folder_is_created() {
    let d = Scratch::new("typed_chart_path");
    let pf = d.file("pf.csv", FIG8_FORWARD);
    let base = cmd("allocate --strategy upper-bound --forward {} --alpha 1 --horizon 5 --chart", &[&pf]);
    let inside_a_file = format!("{pf}/x.svg");
    let mut args = base.to_vec();
    args.push(&inside_a_file);
    bad_input(&args, &[&inside_a_file], &[]);
    let missing = d.path("missing/x.svg");
    let mut args = base.to_vec();
    args.push(&missing);
    bad_input(&args, &[&missing], &[]);
    assert!(!d.dir.join("missing").exists(), "--chart must not create folders");
}

#[test]
fn estimate_notes_name_cell_ids_and_a_bad_smoothing_fails_before_any_note() {
    let d = Scratch::new("typed_estimate_notes");
    // Cells 5 and 7: nobody leaves 7 forward... user 1 goes 5 → 7, user 2 stays in 7.
    let stream = d.file("s.csv", "timestamp_bucket,user_id,location_cell\n0,1,5\n0,2,7\n1,1,7\n1,2,7\n");
    let run = tpl(&["estimate", "--stream", &stream, "--out", &d.path("out")]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    // Backward: nobody is in cell 5 at t = 1, so row "cell 5" (row index 0) is an identity row.
    assert!(run.stderr.contains("identity rows: cell ids 5"), "{}", run.describe());
    assert!(!run.stderr.contains("cells 0"), "{}", run.describe());
    let backward = std::fs::read_to_string(d.dir.join("out/transition_backward.csv")).unwrap();
    assert!(backward.contains("identity rows (cell ids): [5]"), "{backward}");
    bad_input(
        &["estimate", "--stream", &stream, "--smoothing", "-1", "--out", &d.path("bad")],
        &["--smoothing"],
        &[],
    );
    assert!(!d.dir.join("bad").exists());
}

#[test]
fn a_truncated_json_matrix_is_not_blamed_on_column_0() {
    let d = Scratch::new("typed_json_column");
    let m = d.file("m.json", "[[0.9,0.1],\n");
    let run = bad_input(&["supremum", "--matrix", &m, "--epsilon", "1"], &["m.json"], &[]);
    assert!(!run.stderr.contains("column 0"), "{}", run.describe());
}
