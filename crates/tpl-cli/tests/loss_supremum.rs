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
        let run = tpl(&args);
        assert_eq!(run.code, Some(0), "{}", run.describe());
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
