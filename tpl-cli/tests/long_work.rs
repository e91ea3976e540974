//! Long work says what it costs before it starts, and refuses past its documented limits:
//! a series of 10⁷ steps or more is announced on standard error with its size and expected
//! time, `tpl demo --runs` beyond 1000 is refused before anything is written.

mod common;

use common::*;

#[test]
fn a_long_leakage_series_is_announced_before_it_is_computed() {
    let run = tpl_ok(&["leakage", "--epsilon", "0.1", "--horizon", "10000000", "--format", "table"]);
    let note = run.stderr.lines().next().unwrap_or_default();
    assert!(
        note.starts_with("tpl: note: tpl leakage over 10000000 steps: expect about"),
        "{}",
        run.describe()
    );
    assert!(note.contains("of memory") && note.contains("MB of JSON output"), "{note}");
    // Below the threshold, nothing is said.
    let short = tpl_ok(&["leakage", "--epsilon", "0.1", "--horizon", "9999999", "--format", "table"]);
    assert!(short.stderr.is_empty(), "{}", short.describe());
}

#[test]
fn demo_runs_past_the_limit_are_refused_before_anything_is_written() {
    let d = Scratch::new("long_work_demo");
    let out = d.path("demo");
    for runs in ["10000", "1001", "0"] {
        bad_input(&["demo", "--runs", runs, "--out", &out], &["--runs", "1 to 1000", "tpl compare"], &[runs]);
        assert!(!std::path::Path::new(&out).exists(), "--runs {runs}: the folder was made");
    }
}
