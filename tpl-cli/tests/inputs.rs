//! Input and output edges of the binary: streams with the largest and sparse ids, matrices of
//! different sizes, numbers beyond a double, `-` for standard input, unwritable output, and
//! the help and messages of `leakage` and `simulate`.

mod common;

use common::*;
use serde_json::Value;

const HEADER: &str = "timestamp_bucket,user_id,location_cell\n";

fn rows_of(path: &str) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
        .collect()
}

#[test]
fn estimate_takes_the_largest_ids_as_labels() {
    let d = Scratch::new("inputs_max_ids");
    let stream = d.file("max.csv", &format!("{HEADER}18446744073709551615,18446744073709551615,0\n"));
    let out = d.path("out");
    let j = json(&["estimate", "--stream", &stream, "--out", &out]);
    assert_eq!(
        (j["users"].as_u64(), j["horizon"].as_u64(), j["cells"].as_u64()),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(rows_of(&format!("{out}/transition_forward.csv")), vec![vec![1.0]]);
}

#[test]
fn estimate_maps_sparse_cell_user_and_bucket_ids_to_rows() {
    let d = Scratch::new("inputs_sparse");
    // Two users (ids 10¹² and 7) over buckets 600, 900, 1200 (every 300) in cells
    // 99999, 18446744073709551614 and 5.
    let big = "18446744073709551614";
    let text = format!(
        "{HEADER}600,1000000000000,99999\n600,7,{big}\n900,1000000000000,99999\n900,7,5\n\
         1200,1000000000000,{big}\n1200,7,5\n"
    );
    let stream = d.file("sparse.csv", &text);
    let out = d.path("out");
    let run = tpl(&["estimate", "--stream", &stream, "--out", &out, "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stderr.contains("cells.csv"), "a note says rows are cell ids in order\n{}", run.describe());
    let j: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (j["users"].as_u64(), j["horizon"].as_u64(), j["cells"].as_u64()),
        (Some(2), Some(3), Some(3))
    );
    let ids: Vec<u64> = j["cell_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(ids, vec![5, 99999, 18446744073709551614]);
    assert!(j["files"].as_array().unwrap().iter().any(|f| f == "cells.csv"));
    let cells = std::fs::read_to_string(format!("{out}/cells.csv")).unwrap();
    assert_eq!(cells, format!("index,cell_id\n0,5\n1,99999\n2,{big}\n"));
    // Transitions: 99999 → 99999 → big (user 10¹²), big → 5 → 5 (user 7).
    let forward = rows_of(&format!("{out}/transition_forward.csv"));
    assert_eq!(forward, vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.5, 0.5], vec![1.0, 0.0, 0.0]]);
    // --cells n indexes by id: an id ≥ n is refused, naming it; n is bounded.
    bad_input(
        &["estimate", "--stream", &stream, "--cells", "4", "--out", &out],
        &["--cells", "sparse.csv"],
        &[big],
    );
    bad_input(
        &["estimate", "--stream", &stream, "--cells", "100000000", "--out", &out],
        &["--cells"],
        &["4096"],
    );
    // More distinct cells than a matrix can hold are refused, not allocated.
    let many: String = (0..5000).map(|u| format!("0,{u},{}\n", u * 1000)).collect();
    let many = d.file("many.csv", &format!("{HEADER}{many}"));
    bad_input(&["estimate", "--stream", &many, "--out", &out], &["many.csv", "distinct cells"], &["5000"]);
    // A missing bucket is named; unevenly spaced buckets are not steps of one chain.
    let gap = d.file("gap.csv", &format!("{HEADER}600,1,0\n900,1,0\n1500,1,0\n"));
    bad_input(&["estimate", "--stream", &gap, "--out", &out], &["gap.csv", "bucket 1200 never appears"], &[]);
    let missing = d.file("missing.csv", &format!("{HEADER}0,4,0\n0,9,0\n1,4,0\n"));
    bad_input(
        &["estimate", "--stream", &missing, "--out", &out],
        &["missing.csv", "user 9 never appears in bucket 1"],
        &[],
    );
}

#[test]
fn leakage_refuses_matrices_of_different_sizes_naming_both() {
    let d = Scratch::new("inputs_sizes");
    let b = d.file("b2.csv", "0.9,0.1\n0.2,0.8\n");
    let f = d.file("f3.csv", "0.5,0.3,0.2\n0.1,0.8,0.1\n0.3,0.3,0.4\n");
    let run = bad_input(
        &["leakage", "--backward", &b, "--forward", &f, "--epsilon", "0.1", "--horizon", "3"],
        &["b2.csv", "f3.csv", "2×2", "3×3"],
        &[],
    );
    assert!(!run.stderr.contains("--epsilon"), "{}", run.describe());
}

#[test]
fn leakage_says_which_flag_is_missing() {
    for (args, needle) in [
        (vec!["leakage", "--horizon", "3"], "--horizon 3 needs --epsilon"),
        (vec!["leakage", "--epsilon", "0.1"], "--epsilon 0.1 needs --horizon"),
        (vec!["leakage"], "give --budgets FILE, or --epsilon E with --horizon T"),
    ] {
        let run = bad_input(&args, &[needle, "--budgets FILE"], &[]);
        assert!(!run.stderr.contains("required"), "{}", run.describe());
    }
}

#[test]
fn numbers_beyond_a_double_are_refused_as_typed() {
    let d = Scratch::new("inputs_overflow");
    let m = d.file("m.csv", "0.9,0.1\n0.2,0.8\n");
    let counts = d.file("c.csv", "timestamp_bucket,c0,c1\n0,3,4\n1,2,5\n");
    let flags: Vec<Vec<&str>> = vec![
        vec!["leakage", "--backward", &m, "--horizon", "3", "--epsilon"],
        vec!["loss", "--matrix", &m, "--alpha"],
        vec!["supremum", "--matrix", &m, "--epsilon"],
        vec!["allocate", "--strategy", "upper-bound", "--backward", &m, "--horizon", "3", "--alpha"],
        vec!["release", "--counts", &counts, "--scheme", "uniform", "--window", "2", "--epsilon"],
        vec!["compare", "--counts", &counts, "--window", "2", "--epsilon"],
        vec!["loss", "--matrix", &m, "--alpha", "1", "--smoothing"],
        vec!["simulate", "--cells", "2", "--users", "2", "--horizon", "2", "--out", "x", "--smoothing"],
    ];
    for args in flags {
        let flag = *args.last().unwrap();
        for value in ["1e400", "-1e400", "inf", "NaN"] {
            let mut all = args.clone();
            all.push(value);
            let run = usage_error(&all);
            assert!(
                run.stderr.contains(flag) && run.stderr.contains(value),
                "names {flag} and {value} as typed\n{}",
                run.describe()
            );
            if value.ends_with("e400") {
                assert!(!has_token(&run.stderr, "inf"), "no echo of inf\n{}", run.describe());
            }
        }
    }
    // Files: the line and the value as typed.
    let big = d.file("big.csv", "0.9,0.1\n1e400,0.8\n");
    bad_input(&["loss", "--matrix", &big, "--alpha", "1"], &["big.csv:2"], &["1e400"]);
    let budgets = d.file("eps.txt", "0.1\n1e400\n");
    let run = bad_input(&["leakage", "--budgets", &budgets], &["eps.txt:2"], &["1e400"]);
    assert!(!has_token(&run.stderr, "inf"), "{}", run.describe());
}

#[test]
fn a_dash_reads_standard_input() {
    let d = Scratch::new("inputs_stdin");
    let m = "0.9,0.1\n0.2,0.8\n";
    let file = d.file("m.csv", m);
    let expected = json(&["leakage", "--backward", &file, "--epsilon", "0.1", "--horizon", "4"]);
    let run = tpl_with(
        None,
        Some(m),
        &["leakage", "--backward", "-", "--epsilon", "0.1", "--horizon", "4", "--format", "json"],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(serde_json::from_str::<Value>(&run.stdout).unwrap(), expected);
    let run = tpl_with(None, Some("0.1\n0.2\n0.3\n"), &["leakage", "--budgets", "-", "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(nums(&serde_json::from_str(&run.stdout).unwrap(), "epsilon"), vec![0.1, 0.2, 0.3]);
    let out = d.path("est");
    let run = tpl_with(
        None,
        Some(&format!("{HEADER}0,0,1\n1,0,0\n")),
        &["estimate", "--stream", "-", "--out", &out],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let run = tpl_with(
        None,
        Some("timestamp_bucket,c0,c1\n0,3,4\n1,2,5\n"),
        &cmd("release --counts - --scheme uniform --epsilon 1 --window 2 --seed 1", &[]),
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    // Errors name standard input; it cannot be read for two files.
    let run = tpl_with(None, Some("0.9,0.1\n0.5\n"), &["loss", "--matrix", "-", "--alpha", "1"]);
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(run.stderr.contains("<stdin>:2"), "{}", run.describe());
    let run = tpl_with(
        None,
        Some(m),
        &["leakage", "--backward", "-", "--forward", "-", "--epsilon", "0.1", "--horizon", "4"],
    );
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(run.stderr.contains("<stdin>") && run.stderr.contains("already read"), "{}", run.describe());
}

#[cfg(target_os = "linux")]
#[test]
fn a_stream_out_of_bucket_order_through_a_pipe_is_read_once() {
    // /dev/stdin names a pipe here: it cannot be read a second time from the start.
    let d = Scratch::new("inputs_pipe");
    let text = format!("{HEADER}1,0,0\n0,0,1\n1,1,1\n0,1,1\n");
    let file = d.file("s.csv", &text);
    let expected = json(&["estimate", "--stream", &file, "--out", &d.path("from_file")]);
    let run = tpl_with(
        None,
        Some(&text),
        &["estimate", "--stream", "/dev/stdin", "--out", &d.path("from_pipe"), "--format", "json"],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let got: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((got["transitions"].as_u64(), got["users"].as_u64()), (Some(2), Some(2)));
    assert_eq!(got["cell_ids"], expected["cell_ids"]);
    for f in ["transition_forward.csv", "transition_counts.csv"] {
        let read = |dir: &str| std::fs::read_to_string(format!("{}/{f}", d.path(dir))).unwrap();
        assert_eq!(read("from_pipe"), read("from_file"), "{f}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written_exits_2() {
    let stderr =
        tpl_to_full_device(&["leakage", "--epsilon", "0.1", "--horizon", "100000", "--format", "csv"]);
    assert!(stderr.starts_with("tpl: error: cannot write output"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // --out folders that cannot be made: also exit 2.
    let d = Scratch::new("inputs_full");
    let stream = d.file("s.csv", &format!("{HEADER}0,0,1\n1,0,0\n"));
    let run = tpl(&["estimate", "--stream", &stream, "--out", "/dev/full/x"]);
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(run.stderr.contains("/dev/full/x"), "{}", run.describe());
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tpl"))
        .args(["leakage", "--epsilon", "0.1", "--horizon", "1000000", "--format", "csv"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then the pipe closes
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn simulate_help_lists_each_flag_once() {
    let run = tpl(&["simulate", "--help"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    for flag in ["--smoothing", "--forward", "--cells", "--normalize", "--users"] {
        let defined = run.stdout.lines().filter(|l| l.trim_start().starts_with(flag)).count();
        assert_eq!(defined, 1, "{flag} is listed once\n{}", run.describe());
    }
    // --smoothing smooths a --forward matrix too.
    let d = Scratch::new("inputs_simulate");
    let pf = d.file("pf.csv", "1,0\n0,1\n");
    let out = d.path("sim");
    let j = json(&cmd(
        "simulate --forward {} --smoothing 1 --users 3 --horizon 2 --seed 1 --out {}",
        &[&pf, &out],
    ));
    assert_eq!(j["cells"], 2);
    assert_eq!(
        rows_of(&format!("{out}/transition_forward.csv")),
        vec![vec![2.0 / 3.0, 1.0 / 3.0], vec![1.0 / 3.0, 2.0 / 3.0]]
    );
}

#[test]
fn leakage_table_of_a_long_horizon_shows_both_ends() {
    let text = table(&["leakage", "--epsilon", "0.5", "--horizon", "2000000"]);
    assert!(text.contains("2000000") && text.contains('…'), "{text}");
    assert!(text.lines().count() < 40, "{text}");
}

/// Regression: counts columns were taken by position, so a header `c1,c0` released c1's
/// counts as cell 0. Cells are mapped by name: the same counts in either column order give
/// the same release (seeded), and a header that is not c0…c{n−1} is refused.
#[test]
fn counts_columns_are_cells_by_name() {
    let d = Scratch::new("inputs_by_name");
    let [ordered, swapped] = d.files([
        ("a.csv", "timestamp_bucket,c0,c1\n0,7,500\n1,8,400\n"),
        ("b.csv", "timestamp_bucket,c1,c0\n0,500,7\n1,400,8\n"),
    ]);
    let release =
        |c: &str| json(&cmd("release --counts {} --scheme uniform --epsilon 1 --window 2 --seed 4", &[c]));
    assert_eq!(release(&ordered)["releases"], release(&swapped)["releases"]);
    let gapped = d.file("g.csv", "timestamp_bucket,c0,c5\n0,7,500\n");
    bad_input(
        &["release", "--counts", &gapped, "--scheme", "uniform", "--epsilon", "1", "--window", "2"],
        &["g.csv:1:", "c1 is missing"],
        &[],
    );
    let rounded = d.file("r.csv", "timestamp_bucket,c0\n0,4503599627370496.5\n");
    bad_input(
        &["release", "--counts", &rounded, "--scheme", "uniform", "--epsilon", "1", "--window", "2"],
        &["r.csv:2:", "not an integer"],
        &[],
    );
}

/// Messages that used to mislead or say too little: `--db -` (created a file named `-`), an
/// `--out` that is a file ("File exists"), JSON budgets below the smallest double (became 0
/// while the same text in a budget file was refused), and a file that is not UTF-8 (no line).
#[test]
fn edge_inputs_get_messages_that_say_what_is_wrong() {
    let d = Scratch::new("inputs_edges");
    let run = bad_input(
        &["stream", "init", "--db", "-", "--scheme", "bd", "--epsilon", "1", "--window", "2"],
        &["--db -", "standard input"],
        &[],
    );
    assert!(run.stdout.is_empty());
    let file = d.file("plain.txt", "x");
    let run = bad_input(&["demo", "--out", &file], &["plain.txt", "not a folder"], &[]);
    assert!(!run.stderr.contains("File exists"), "{}", run.describe());
    let tiny = d.file("b.json", "[0.5, 1e-400]");
    bad_input(&["leakage", "--budgets", &tiny], &["b.json", "entry 2", "1e-400 rounds to 0"], &[]);
    let latin = d.path("latin.txt");
    std::fs::write(&latin, b"0.5\n0.\xff2\n").unwrap();
    bad_input(&["leakage", "--budgets", &latin], &["latin.txt:2:", "not UTF-8"], &[]);
}
