//! A tiny grid through the binary: it runs, writes its CSV where it is told (a temporary
//! folder, never the source tree) and every ratio is finite and consistent.

use std::process::Command;

fn run_grid(extra: &[&str]) -> (String, Vec<csv::StringRecord>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested").join("grid.csv");
    let output = Command::new(env!("CARGO_BIN_EXE_accuracy-grid"))
        .args(["--populations", "100", "--train-steps", "40", "--score-steps", "30", "--schemes", "bd"])
        .args([
            "--epsilons",
            "1",
            "--seeds",
            "2",
            "--estimators",
            "map,mle",
            "--window",
            "5",
            "--matrices",
            "estimated",
        ])
        .args(extra)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let mut reader = csv::Reader::from_path(&out).unwrap();
    let header = reader.headers().unwrap().iter().map(str::to_owned).collect();
    (stdout, reader.records().map(Result::unwrap).collect(), header)
}

fn field(header: &[String], row: &csv::StringRecord, name: &str) -> String {
    let i = header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    row[i].to_owned()
}

#[test]
fn a_one_cell_grid_writes_finite_ratios() {
    let (stdout, rows, header) = run_grid(&["--streams", "uniform"]);
    assert_eq!(header.len(), 30);
    assert_eq!(rows.len(), 2, "one cell, two estimators");
    for row in &rows {
        let get = |name: &str| field(&header, row, name).parse::<f64>().unwrap();
        let (ratio_raw, ratio_ma) = (get("ratio_raw"), get("ratio_ma"));
        assert!(ratio_raw.is_finite() && ratio_raw > 0.0, "{row:?}");
        // The oracle's windows include the raw release itself (window 1).
        assert!(ratio_ma >= ratio_raw * (1.0 - 1e-12), "{row:?}");
        assert!(get("best_ma_window") as usize % 2 == 1);
        assert_eq!(get("seeds"), 2.0);
        assert_eq!(field(&header, row, "coverage_all"), "");
        // Every filter's stored intervals are scored, with or without --intervals.
        let model = get("model_coverage_all");
        assert!((0.0..=1.0).contains(&model) && get("model_width") > 0.0, "{row:?}");
        if field(&header, row, "estimator") == "mle" {
            // A projection onto the counts that sum to N is never farther from the truth.
            assert!(ratio_raw <= 1.0 + 1e-12, "{row:?}");
            assert_eq!(get("ratio_mle"), 1.0, "the mle baseline is mle itself");
        }
        // The strictly causal Kalman filter runs on every stream of at most 64 cells.
        assert!(get("kalman_causal_mse") > 0.0 && get("ratio_kalman_causal").is_finite(), "{row:?}");
        let dominant = get("model_coverage_dominant");
        assert!((0.0..=1.0).contains(&dominant), "{row:?}");
    }
    assert!(stdout.contains("summary over 1 cells"), "{stdout}");
}

#[test]
fn the_flights_day_is_a_real_stream_of_412_aircraft() {
    // Its matrices come from the first 144 buckets; the last 144 are scored.
    let (_, rows, header) = run_grid(&["--streams", "flights"]);
    assert_eq!(rows.len(), 2, "one cell, two estimators");
    for row in &rows {
        assert_eq!(field(&header, row, "stream"), "flights-us");
        assert_eq!(field(&header, row, "shape"), "real");
        assert_eq!(field(&header, row, "population"), "412");
    }
}

#[test]
fn intervals_give_coverages_between_0_and_1() {
    let (_, rows, header) = run_grid(&["--streams", "out", "--intervals", "--replicates", "4"]);
    for row in &rows {
        for name in ["coverage_all", "coverage_nonempty", "coverage_dominant"] {
            let c: f64 = field(&header, row, name).parse().unwrap();
            assert!((0.0..=1.0).contains(&c), "{name} {c}");
        }
    }
}

#[test]
fn unknown_names_are_refused() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_accuracy-grid")).args(["--schemes", "magic"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("magic"));
}
