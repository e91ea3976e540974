//! Peak resident memory of building a loss evaluator.
//!
//! `memory` alone measures the default cases (piecewise and pair-table setup of both
//! families at n = 200 and n = 1000), each in a fresh child process so that one case's peak
//! does not hide another's; `memory FAMILY EVALUATOR N` measures one case in this process.
//! FAMILY is `dense` or `smoothed-identity`, EVALUATOR `piecewise`, `pairtable` or `direct`.
//!
//! Reported per case: what the evaluator kept (pieces of L, or pair chains), the setup time
//! (one run, not a benchmark), the process peak RSS (`VmHWM`) including the matrix and the runtime,
//! and the peak of the setup alone (the peak is reset to the current RSS after the matrix is
//! built, via `/proc/self/clear_refs`), in MiB.

use std::hint::black_box;
use std::process::{Command, ExitCode};
use std::time::Instant;

use tpl_benches::{ALPHA, Family, peak_rss_kib, reset_peak_rss, rss_kib};
use tpl_core::{DirectLoss, LossEvaluator, PairTableLoss, PiecewiseLoss};

const DEFAULT_CASES: [(&str, &str, usize); 8] = [
    ("dense", "piecewise", 200),
    ("dense", "piecewise", 1000),
    ("smoothed-identity", "piecewise", 200),
    ("smoothed-identity", "piecewise", 1000),
    ("dense", "pairtable", 200),
    ("dense", "pairtable", 1000),
    ("smoothed-identity", "pairtable", 200),
    ("smoothed-identity", "pairtable", 1000),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => all_cases(),
        [family, evaluator, n] => match one_case(family, evaluator, n) {
            Ok(()) => ExitCode::SUCCESS,
            Err(msg) => {
                eprintln!("memory: {msg}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("usage: memory [FAMILY EVALUATOR N]");
            ExitCode::from(2)
        }
    }
}

fn all_cases() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("memory: cannot find own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("| family | evaluator | n | kept | setup time | peak RSS, process | peak RSS, setup only |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    let mut ok = true;
    for (family, evaluator, n) in DEFAULT_CASES {
        let status = Command::new(&exe).args([family, evaluator, &n.to_string()]).status();
        ok &= matches!(status, Ok(s) if s.success());
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn one_case(family: &str, evaluator: &str, n: &str) -> Result<(), String> {
    let fam = Family::parse(family).ok_or_else(|| format!("unknown family {family:?}"))?;
    let n: usize = n.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("bad size {n:?}"))?;
    let m = fam.matrix(n);
    let before = rss_kib().ok_or("no /proc/self/status")?;
    let reset = reset_peak_rss();
    let start = Instant::now();
    let (value, kept) = match evaluator {
        "piecewise" => {
            let l = PiecewiseLoss::new(&m);
            let v = l.loss(ALPHA);
            black_box(&l);
            (v, format!("{} pieces", l.candidates().len()))
        }
        "pairtable" => {
            let l = PairTableLoss::new(&m);
            let v = l.loss(ALPHA);
            black_box(&l);
            (v, format!("{} of {} pair chains", l.kept_pairs(), n * (n - 1)))
        }
        "direct" => (DirectLoss::new(&m).loss(ALPHA), "-".into()),
        other => return Err(format!("unknown evaluator {other:?}")),
    };
    let elapsed = start.elapsed();
    let peak = peak_rss_kib().ok_or("no VmHWM in /proc/self/status")?;
    let setup_only =
        if reset { format!("{:.1} MiB", mib(peak.saturating_sub(before))) } else { "n/a".into() };
    // Without the reset, VmHWM also covers building the matrix from nested vectors.
    println!(
        "| {family} | {evaluator} | {n} | {kept} | {:.3} s | {:.1} MiB | {setup_only} |",
        elapsed.as_secs_f64(),
        mib(peak),
    );
    black_box(value);
    Ok(())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
