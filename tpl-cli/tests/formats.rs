//! The input file formats ([`docs/formats.md`](tpl_core::guide::formats)) through the built binary:
//! matrix separators, comments and tolerances, the default output format, and every malformed
//! matrix or budget file ending in exit 2 with one line naming the file, line and value.

mod common;

use common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Matrix file formats
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
    let [counts, counts_json, plain] = d.files([
        ("counts.csv", "# transition counts\n1, 2, 7\n0.3 0.3 0.4\n\n2 1.2 0.8\n"),
        ("counts.json", "[[1,2,7],[0.3,0.3,0.4],[2,1.2,0.8]]"),
        ("ex4.csv", EXAMPLE4),
    ]);
    let reference = json(&["loss", "--matrix", &plain, "--alpha", "1", "--alpha", "30"]);
    for m in [&counts, &counts_json] {
        let out = json(&["loss", "--matrix", m, "--alpha", "1", "--alpha", "30", "--normalize"]);
        for (g, e) in nums(&out, "loss").iter().zip(nums(&reference, "loss")) {
            assert_close(*g, e, 1e-12, "normalised counts = Example 4");
        }
        let sup = json(&["supremum", "--matrix", m, "--epsilon", "0.1", "--normalize"]);
        assert_eq!(sup["bounded"], Value::Bool(true));
        let lk =
            json(&cmd("leakage --backward {} --forward {} --epsilon 0.1 --horizon 3 --normalize", &[m, m]));
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
// Bad input: matrix files
// ---------------------------------------------------------------------------------------------

/// Runs the same bad matrix through every command that reads one.
fn bad_matrix_everywhere(path: &str, needles: &[&str], values: &[&str]) {
    bad_input(&["loss", "--matrix", path, "--alpha", "1"], needles, values);
    bad_input(&["supremum", "--matrix", path, "--epsilon", "0.1"], needles, values);
    bad_input(&["leakage", "--backward", path, "--epsilon", "0.1", "--horizon", "3"], needles, values);
    bad_input(&["leakage", "--forward", path, "--epsilon", "0.1", "--horizon", "3"], needles, values);
}

/// Writes each (file name, content, line, values) to `d` and checks that every matrix flag
/// refuses it with a message naming `path:line` (the path alone for line 0) and `values`.
/// A bad matrix file: its name, its content, the line the error names (0: the file alone) and
/// values the error quotes.
type BadFile = (&'static str, &'static str, usize, &'static [&'static str]);

/// Files without a matrix in them: named, with no line.
const EMPTY_MATRICES: &[BadFile] = &[
    ("empty.csv", "", 0, &[]),
    ("comments.csv", "# nothing but comments\n\n   # and blanks\n\n", 0, &[]),
    ("empty.json", "[]", 0, &[]),
    ("blank.json", "", 0, &[]),
];

/// Writes each of `cases` and runs `check(path, needles, values)` on it, the needle being the
/// path with its line (or the path alone for line 0); returns the paths.
fn bad_files(d: &Scratch, cases: &[BadFile], check: impl Fn(&str, &[&str], &[&str])) -> Vec<String> {
    let mut paths = Vec::new();
    for &(name, content, line, values) in cases {
        let path = d.file(name, content);
        let at = if line == 0 { path.clone() } else { format!("{path}:{line}") };
        check(&path, &[&at], values);
        paths.push(path);
    }
    paths
}

fn bad_matrix_files(d: &Scratch, cases: &[BadFile]) -> Vec<String> {
    bad_files(d, cases, bad_matrix_everywhere)
}

#[test]
fn bad_matrix_missing_unreadable_and_empty_files() {
    let d = Scratch::new("bad_matrix_files");
    let missing = d.path("does-not-exist.csv");
    bad_matrix_everywhere(&missing, &[&missing], &[]);
    let dir = path_str(&d.dir);
    bad_matrix_everywhere(&dir, &[&dir], &[]);
    bad_matrix_files(&d, EMPTY_MATRICES);
}

#[test]
fn bad_matrix_shape() {
    let d = Scratch::new("bad_matrix_shape");
    // Row 2 of the ragged CSV is on line 4 of the file.
    let cases: &[BadFile] = &[
        ("nonsquare.csv", "0.5,0.5\n0.5,0.5\n0.5,0.5\n", 0, &[]),
        ("wide.csv", "0.2 0.3 0.5\n0.2 0.3 0.5\n", 0, &[]),
        ("ragged.csv", "# ragged\n0.5,0.5\n\n1\n", 4, &[]),
        ("ragged.json", "[[0.5,0.5],[1]]", 0, &[]),
        ("nonsquare.json", "[[0.5,0.5]]", 0, &[]),
        ("empty_rows.json", "[[],[]]", 0, &[]),
    ];
    bad_matrix_files(&d, cases);
}

#[test]
fn bad_matrix_entries() {
    let d = Scratch::new("bad_matrix_entries");
    let paths = bad_matrix_files(
        &d,
        &[
            ("nan.csv", "# header\n0.5,0.5\n\nNaN,0.5\n", 4, &["NaN"]),
            ("inf.csv", "0.5 0.5\ninf 0\n", 2, &["inf"]),
            ("big.csv", "1e400 0\n0.5 0.5\n", 1, &[]),
            ("neg.csv", "0.5,0.5\n1.5,-0.5\n", 2, &["-0.5"]),
            ("sum.csv", "0.5,0.5\n\n0.5,0.4\n", 3, &["0.9"]),
            ("token.csv", "0.5,0.5\n0.5,abc\n", 2, &[]),
            ("empty_field.csv", "0.5,0.5\n0.5,,0.5\n", 2, &[]),
            ("trailing.csv", "0.5,0.5,\n0.5,0.5\n", 1, &[]),
            ("neg.json", "[[0.5,0.5],[1.5,-0.5]]", 0, &["-0.5"]),
            ("sum.json", "[[0.5,0.5],[0.5,0.4]]", 0, &["0.9"]),
        ],
    );
    let token = &paths[5];
    bad_input(&["loss", "--matrix", token, "--alpha", "1"], &["abc"], &[]);
    let semicolon = d.file("semicolon.csv", "0.5;0.5\n0.5;0.5\n");
    bad_matrix_everywhere(&semicolon, &[&format!("{semicolon}:1"), "0.5;0.5"], &[]);
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
// Bad input: budget files
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
    let cases: &[BadFile] = &[
        ("negative.txt", "0.1\n\n-0.2\n", 3, &["-0.2"]),
        ("two.txt", "0.1\n0.2 0.3\n", 2, &[]),
        ("two_commas.csv", "0.1,0.2\n", 1, &[]),
        ("inf.txt", "0.1\ninf\n", 2, &["inf"]),
        ("nan.txt", "0.1\n0.1\nNaN\n", 3, &["NaN"]),
        ("empty.txt", "", 0, &[]),
        ("comments.txt", "# only a comment\n\n", 0, &[]),
        ("empty.json", "[]", 0, &[]),
        ("neg.json", "[0.1, -1]", 0, &["-1"]),
        ("null.json", "[0.1, null]", 0, &[]),
        ("bad.json", "[0.1,", 0, &[]),
        ("nested.json", "[[0.1]]", 0, &[]),
    ];
    bad_files(&d, cases, check);
    let missing = d.path("missing.txt");
    check(&missing, &[&missing], &[]);
    let dir = path_str(&d.dir);
    check(&dir, &[&dir], &[]);
}
