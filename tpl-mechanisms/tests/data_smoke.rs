//! Data smoke ([`docs/w-event.md`](tpl_core::guide::w_event) §7): every scheme on the real count
//! streams copied into `testdata/` (ε = 1, w = 10 and 30) satisfies (W) and returns T releases of
//! length d. The runs use the release-grade discrete Laplace (the counts are integers) and are
//! checked step by step against [`docs/w-event.md`](tpl_core::guide::w_event) as well.

mod common;

use common::*;
use tpl_mechanisms::{PbaPool, SchemeKind, WEventParams};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata");

fn smoke(file: &str, rows: usize, cells: usize) {
    let stream = load_counts(&format!("{DATA}/{file}"));
    assert_eq!((stream.len(), stream[0].len()), (rows, cells), "{file}: shape");
    for w in [10, 30] {
        let p = WEventParams::new(1.0, w, 2.0).unwrap();
        for kind in SchemeKind::ALL {
            for corr in [PbaPool::Always, PbaPool::Never] {
                let noise = Noise::Discrete(w as u64);
                let (mut s, h) = build(kind, p, corr.clone(), noise);
                let trace = drive(s.as_mut(), &h, &stream, noise).unwrap();
                assert_eq!(trace.outcomes.len(), rows);
                assert!(trace.outcomes.iter().all(|o| o.release.len() == cells));
                let max = ledger_max(w, &trace.budgets());
                if kind == SchemeKind::Laplace {
                    assert_eq!(max, w as f64, "laplace reports min(T, w)·ε");
                } else {
                    assert!(max <= 1.0 + 1e-12, "{file} {} w = {w}: max window budget {max}", kind.name());
                }
                check_trace(kind, &p, &corr, &stream, &trace)
                    .unwrap_or_else(|e| panic!("{file} {} w = {w}: {e}", kind.name()));
                if kind != SchemeKind::Pba {
                    break;
                }
            }
        }
    }
}

#[test]
fn ais_new_york_harbor_week() {
    smoke("ais_nyharbor_week_5min/counts.csv", 1944, 23);
}

#[test]
fn auckland_pedestrians_2024() {
    smoke("akl_pedestrian_hourly_2024/counts.csv", 8783, 21);
}

/// The parser keeps only the c<digits> columns (the Auckland file has a label column).
#[test]
fn parser_keeps_only_cell_columns() {
    let dir = std::env::temp_dir().join(format!("tpl-mech-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("counts.csv");
    std::fs::write(
        &f,
        "timestamp_bucket,local_hour_start,c0,c1,cx,c12\n0,2024-01-01T06:00,1,2,9,3\n\n1,x,4,5,9,6\n",
    )
    .unwrap();
    let rows = load_counts(f.to_str().unwrap());
    assert_eq!(rows, vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]);
    std::fs::remove_dir_all(&dir).unwrap();
}
