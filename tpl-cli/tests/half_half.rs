//! The honest evaluation of post-processing on the AIS week (`testdata/`): the matrices are
//! estimated by `tpl estimate` from the first half of the vessel stream (public knowledge
//! from an earlier period), the second half is released and post-processed
//! ([`docs/map.md`](tpl_core::guide::map) §8–9):
//! - the default estimator `map` beats the raw release for laplace and sample, with the raw
//!   and with the smoothed matrices (with the smoothed ones the DBSec filter is far worse than
//!   the raw release);
//! - `smooth` beats the best centred moving average of the raw releases (±1..±10 steps) and
//!   stays below 0.15× the raw release's error for a Laplace release at ε = 0.5 per step.

mod common;

use std::path::PathBuf;

use common::*;

/// First bucket of the second half of the week (1944 five-minute buckets).
const HALF: u64 = 972;

fn week(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/ais_nyharbor_week_5min").join(file)
}

/// The scratch folder with `first.csv` (the user stream of the first half), `second.csv` (the
/// counts of the second half), and the matrices `tpl estimate` makes from the first half:
/// `raw/` and `smoothed/` (s = 0.01).
fn split(d: &Scratch) {
    let stream = std::fs::read_to_string(week("stream.csv")).unwrap();
    let mut first = String::new();
    for (k, line) in stream.lines().enumerate() {
        let bucket: Option<u64> = line.split(',').next().and_then(|b| b.parse().ok());
        if k == 0 || bucket.is_some_and(|b| b < HALF) {
            first.push_str(line);
            first.push('\n');
        }
    }
    d.file("first.csv", &first);
    let counts = std::fs::read_to_string(week("counts.csv")).unwrap();
    let mut second = String::new();
    for (k, line) in counts.lines().enumerate() {
        let bucket: Option<u64> = line.split(',').next().and_then(|b| b.parse().ok());
        if k == 0 || bucket.is_some_and(|b| b >= HALF) {
            second.push_str(line);
            second.push('\n');
        }
    }
    d.file("second.csv", &second);
    let first = d.path("first.csv");
    for (dir, smoothing) in [("raw", None), ("smoothed", Some("0.01"))] {
        let out = d.path(dir);
        let mut args = vec!["estimate", "--stream", first.as_str(), "--cells", "23", "--out", out.as_str()];
        if let Some(s) = smoothing {
            args.extend(["--smoothing", s]);
        }
        tpl_ok(&args);
    }
}

/// The counts of a CSV (a `tpl release` output or a counts file): the columns c0, c1, ….
fn counts_of(text: &str) -> Vec<Vec<f64>> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let first = header.iter().position(|h| *h == "c0").unwrap();
    lines.map(|l| l.split(',').skip(first).map(|v| v.parse().unwrap()).collect()).collect()
}

fn mse(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    let cells = a.len() * a[0].len();
    a.iter().zip(b).flat_map(|(x, y)| x.iter().zip(y).map(|(u, v)| (u - v).powi(2))).sum::<f64>()
        / cells as f64
}

/// The centred moving average of the releases over ±k steps (fewer at the ends).
fn moving_average(r: &[Vec<f64>], k: usize) -> Vec<Vec<f64>> {
    (0..r.len())
        .map(|t| {
            let (lo, hi) = (t.saturating_sub(k), (t + k + 1).min(r.len()));
            let width = (hi - lo) as f64;
            (0..r[0].len()).map(|i| r[lo..hi].iter().map(|x| x[i]).sum::<f64>() / width).collect()
        })
        .collect()
}

#[test]
fn default_postprocessing_beats_the_raw_release_with_matrices_from_the_first_half() {
    let d = Scratch::new("half_half_map");
    split(&d);
    for dir in ["raw", "smoothed"] {
        let (forward, backward) = (
            d.path(&format!("{dir}/transition_forward.csv")),
            d.path(&format!("{dir}/transition_backward.csv")),
        );
        let out = json(&cmd(
            "compare --counts {} --forward {} --backward {} --epsilon 1 --window 10 --schemes laplace,sample --runs 2 --postprocess map --seed 11",
            &[&d.path("second.csv"), &forward, &backward],
        ));
        assert_eq!(out["postprocess"], "map", "the output says which estimator made the +map rows");
        for scheme in ["laplace", "sample"] {
            let (raw, map) = (num(row(&out, scheme), "mse"), num(row(&out, &format!("{scheme}+map")), "mse"));
            assert!(
                map < raw,
                "{dir} matrices, {scheme}: map MSE {map} is not below the raw release's {raw}"
            );
        }
        if dir == "smoothed" {
            // The DBSec filter trusts the smoothed matrices fully and drifts off.
            let dbsec = json(&cmd(
                "compare --counts {} --forward {} --epsilon 1 --window 10 --schemes sample --runs 1 --postprocess map-dbsec --seed 11",
                &[&d.path("second.csv"), &forward],
            ));
            let (raw, filtered) =
                (num(row(&dbsec, "sample"), "mse"), num(row(&dbsec, "sample+map-dbsec"), "mse"));
            assert!(filtered > 10.0 * raw, "map-dbsec {filtered} vs raw {raw}");
        }
    }
}

#[test]
fn smooth_beats_the_best_moving_average_of_a_laplace_release_at_half_an_epsilon() {
    let d = Scratch::new("half_half_smooth");
    split(&d);
    let truth = counts_of(&std::fs::read_to_string(d.path("second.csv")).unwrap());
    let total: f64 = truth[0].iter().sum();
    let release = tpl_ok(&cmd(
        "release --counts {} --scheme laplace --epsilon 0.5 --window 1 --seed 3 --format csv",
        &[&d.path("second.csv")],
    ));
    let releases_file = d.file("releases.csv", &release.stdout);
    let releases = counts_of(&release.stdout);
    let raw = mse(&releases, &truth);
    let best_average =
        (1..=10).map(|k| mse(&moving_average(&releases, k), &truth)).fold(f64::INFINITY, f64::min);
    for dir in ["raw", "smoothed"] {
        let out = json(&cmd(
            "postprocess --releases {} --total {} --forward {} --backward {} --estimator smooth",
            &[
                &releases_file,
                &total.to_string(),
                &d.path(&format!("{dir}/transition_forward.csv")),
                &d.path(&format!("{dir}/transition_backward.csv")),
            ],
        ));
        assert_eq!(out["estimator"], "smooth");
        let estimates: Vec<Vec<f64>> = out["estimates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect())
            .collect();
        let smooth = mse(&estimates, &truth);
        assert!(
            smooth < best_average,
            "{dir} matrices: smooth MSE {smooth} is not below the best moving average's {best_average}"
        );
        assert!(smooth <= 0.15 * raw, "{dir} matrices: smooth MSE {smooth} vs raw {raw}");
    }
}
