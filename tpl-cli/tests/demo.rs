//! `tpl demo` through the built binary: the report, its JSON and every file it writes.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// demo
// ---------------------------------------------------------------------------------------------

/// The files `tpl demo` writes into its folder, and how each starts.
const DEMO_FILES: [(&str, &str); 7] = [
    ("report.html", "<!DOCTYPE html>"),
    ("matrix.csv", "#"),
    ("leakage_example.svg", "<svg"),
    ("compare_synthetic.svg", "<svg"),
    ("compare_ais_hour.svg", "<svg"),
    ("synthetic/stream.csv", "timestamp_bucket,user_id,location_cell"),
    ("synthetic/counts.csv", "timestamp_bucket,c0"),
];

/// Every key of the demo's JSON with the right type (`out` = `dir`), and every file it wrote
/// (in `written`: `dir` seen from the test).
#[track_caller]
fn check_demo(j: &Value, dir: &Path, written: &Path) {
    let numbers = |v: &Value, what: &str| -> Vec<f64> {
        let a = v.as_array().unwrap_or_else(|| panic!("{what} must be an array: {v}"));
        assert!(!a.is_empty(), "{what} is empty");
        a.iter().map(|x| x.as_f64().unwrap_or_else(|| panic!("{what} holds a non-number: {x}"))).collect()
    };
    let matrix = j["matrix"].as_array().expect("matrix: array of rows");
    assert!(!matrix.is_empty());
    for row in matrix {
        assert_eq!(numbers(row, "matrix row").len(), matrix.len(), "matrix is square");
    }
    let alphas = numbers(&j["loss"]["alpha"], "loss.alpha");
    assert_eq!(numbers(&j["loss"]["loss"], "loss.loss").len(), alphas.len());
    let leakage = &j["leakage"];
    let steps = numbers(&leakage["epsilon"], "leakage.epsilon").len();
    for key in ["bpl", "fpl", "tpl"] {
        assert_eq!(numbers(&leakage[key], key).len(), steps, "leakage.{key}");
    }
    for key in ["max_tpl", "max_window_leakage"] {
        assert!(leakage[key].is_f64(), "leakage.{key} is a number: {}", leakage[key]);
    }
    assert!(leakage["window"].is_u64(), "leakage.window is a whole number");
    let suprema = j["supremum"].as_array().expect("supremum: array");
    assert!(!suprema.is_empty());
    for s in suprema {
        assert!(s["epsilon"].is_f64(), "{s}");
        let bounded = s["bounded"].as_bool().unwrap_or_else(|| panic!("bounded is a boolean: {s}"));
        assert_eq!(s["supremum"].is_f64(), bounded, "a bounded supremum is a number, else null: {s}");
    }
    for key in ["synthetic", "ais_hour"] {
        let rows = j[key]["rows"].as_array().unwrap_or_else(|| panic!("{key}.rows: array in {}", j[key]));
        assert!(!rows.is_empty(), "{key} compares strategies");
        for r in rows {
            assert!(r["strategy"].is_string(), "{key}: {r}");
        }
    }
    let out = j["out"].as_str().expect("out: string");
    assert_eq!(Path::new(out), dir, "out names the folder written");
    for (file, start) in DEMO_FILES {
        let path = written.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.trim_start().starts_with(start) || text.contains(start), "{file} starts {start:?}");
    }
}

#[test]
fn demo_without_arguments_prints_a_report_and_writes_tpl_demo_in_the_working_folder() {
    let d = Scratch::new("demo_default");
    let run = tpl_with(Some(&d.dir), None, &["demo"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.lines().count() >= 10, "a report of several lines\n{}", run.describe());
    assert!(run.stdout.contains("tpl leakage"), "the report shows how to use tpl\n{}", run.describe());
    assert!(
        run.stdout.contains("tpl-demo/report.html"),
        "the report says where its page is\n{}",
        run.describe()
    );
    let report = html_page(&path_str(&d.dir.join("tpl-demo/report.html")));
    // The page holds what the terminal shows: every section, the comparisons' strategies, and
    // the three charts inline.
    assert!(report.contains("<title>tpl demo — what a stream of ε-DP releases really leaks</title>"));
    for section in
        ["The adversary&#39;s knowledge", "1. One step of correlation", "3. If the releases never stop"]
    {
        assert!(report.contains(&format!("<h2>{section}</h2>")), "{section}");
    }
    for strategy in ["laplace+smooth", "window+kalman", "prior-mean"] {
        assert!(report.contains(&format!("<td>{strategy}</td>")), "{strategy} in the tables");
    }
    assert!(report.contains("<dt>command</dt><dd>tpl demo --out tpl-demo --runs 10 --seed 2018</dd>"));
    let charts = inline_charts(&report);
    assert_eq!(charts.len(), 3, "{:?}", charts.iter().map(|c| &c.0).collect::<Vec<_>>());
    assert!(charts[0].1.iter().any(|t| t == "TPL_t (temporal)"), "{:?}", charts[0].1);
    for (label, texts) in &charts[1..] {
        assert!(label.starts_with("Error against audited leakage"), "{label}");
        assert!(texts.iter().any(|t| t == "laplace+smooth"), "{label}: {texts:?}");
    }
    // Not a text dump: the numbers are in HTML tables.
    assert_eq!(report.matches("<pre>").count(), 1, "one block of commands to try, no text dump");
    assert!(report.contains("<td class=\"num\">0.875</td>"));

    let run = tpl_with(Some(&d.dir), None, &["demo", "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let j: Value = serde_json::from_str(&run.stdout).expect("JSON");
    check_demo(&j, Path::new("tpl-demo"), &d.dir.join("tpl-demo"));

    let run = tpl_with(Some(&d.dir), None, &["demo", "--format", "csv"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some("t,epsilon,bpl,fpl,tpl"));
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(parse_exact).collect()).collect();
    assert_eq!(rows.len(), nums(&j["leakage"], "tpl").len(), "one CSV row per step");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 5);
        assert_eq!(r[0], (i + 1) as f64);
        assert_eq!(r[4], nums(&j["leakage"], "tpl")[i], "CSV and JSON agree");
    }
}

#[test]
fn demo_out_writes_report_and_a_matrix_that_loss_accepts() {
    let d = Scratch::new("demo_out");
    let out_dir = d.dir.join("nested/out");
    let out = path_str(&out_dir);
    // Run from the scratch folder: nothing may land in the working folder but --out.
    let run = tpl_with(Some(&d.dir), None, &["demo", "--out", &out, "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let demo: Value = serde_json::from_str(&run.stdout).expect("JSON");
    check_demo(&demo, &out_dir, &out_dir);
    assert!(!d.dir.join("tpl-demo").exists(), "--out replaces the default folder");

    // The written matrix is accepted back, and gives the losses the demo reported.
    let matrix = path_str(&out_dir.join("matrix.csv"));
    let alphas = nums(&demo["loss"], "alpha");
    let expected = nums(&demo["loss"], "loss");
    let losses = loss_of(&matrix, &alphas);
    assert_eq!(losses.len(), expected.len());
    for (g, e) in losses.iter().zip(&expected) {
        assert_close(*g, *e, 1e-12, "loss of the written matrix vs the demo's");
    }
    let sup = json(&["supremum", "--matrix", &matrix, "--epsilon", "0.1"]);
    assert_eq!(sup["bounded"], true);
}
