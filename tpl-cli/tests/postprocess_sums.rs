//! `tpl postprocess` estimates sum to N in floating point (issue 37; map.md §11): read from
//! the JSON output as Python reads it (every number correctly rounded — the workspace's
//! serde_json parses with `float_roundtrip`) and summed left to right as Python's `sum(row)`
//! does, each row is N exactly, for releases with spikes of ±10⁹ and N = 1.

mod common;

use common::*;

/// Python's `sum(row)`: left to right, from 0.
fn python_sum(row: &[f64]) -> f64 {
    row.iter().fold(0.0, |s, v| s + v)
}

/// Integer releases of 3 cells with spikes of −10⁹ (the case the library's reproduction found:
/// `kalman` summed to 1 − 2⁻²⁴ at step 8 before the fix).
const NEGATIVE_SPIKES: &str = "0,-2,-1000000000\n0,1,1\n-2,2,-1000000000\n2,-2,0\n2,-1,-1\n\
-1,-1,-2\n0,-1,1\n2,-1000000000,2\n";

/// Real releases around 1/3 with one spike of 10⁹.
const POSITIVE_SPIKE: &str = "0.41,0.29,0.3\n0.12,0.53,0.35\n1000000000,0.2,-0.4\n0.37,0.31,0.32\n\
0.8,-0.3,0.5\n0.33,0.33,0.34\n-0.2,0.9,0.3\n0.25,0.45,0.3\n";

#[test]
fn estimates_of_releases_with_a_billion_spike_sum_to_n_left_to_right() {
    let d = Scratch::new("pp_sums");
    // The identity smoothed with s = 0.01: (1 + s)/(1 + 3s) on the diagonal, s/(1 + 3s) off it.
    let (on, off) = ("0.9805825242718447", "0.009708737864077669");
    let pf = d.file("pf.csv", &format!("{on} {off} {off}\n{off} {on} {off}\n{off} {off} {on}\n"));
    for (name, releases) in [("negative.csv", NEGATIVE_SPIKES), ("positive.csv", POSITIVE_SPIKE)] {
        let r = d.file(name, releases);
        for total in ["1", "140"] {
            let n: f64 = total.parse().unwrap();
            for estimator in ["map", "smooth", "kalman", "map-dbsec", "map-integer", "mle"] {
                let out = json(&cmd(
                    "postprocess --releases {} --total {} --epsilon 0.1 --forward {} --estimator {}",
                    &[&r, total, &pf, estimator],
                ));
                let rows = number_rows(&out["estimates"]);
                assert_eq!(rows.len(), 8, "{out}");
                for (t, x) in rows.iter().enumerate() {
                    let at = format!("{name}, N = {total}, {estimator}, step {}: {x:?}", t + 1);
                    assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0), "{at}");
                    assert_eq!(python_sum(x), n, "{at}");
                }
            }
        }
    }
}
