//! Writes the matrices the whole-process measurements of `tpl` read, as a dense matrix file
//! (one row per line, shortest round-trip decimals) on standard output, or as a `.npy` array
//! to the file named by a third argument:
//!
//! - `gen_matrix dense N [OUT.npy]` — [`tpl_benches::dense`] with the seed of the benches'
//!   dense family;
//! - `gen_matrix grid SIDE [OUT.npy]` — [`tpl_benches::grid_walk`] on a SIDE × SIDE grid
//!   (n = SIDE²), stay [`tpl_benches::GRID_STAY`], smoothing [`tpl_benches::GRID_SMOOTHING`];
//! - `gen_matrix sparse-grid SIDE` — the same walk unsmoothed, as a sparse `from,to,p` file
//!   (read it with `--smoothing 1e-4` for the same matrix), SIDE up to 1000.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use tpl_benches::{Family, GRID_SMOOTHING, GRID_STAY, grid_walk, grid_walk_rows};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let (Some("sparse-grid"), Some(side)) = (
        args.first().map(String::as_str),
        args.get(1).and_then(|s| s.parse::<usize>().ok()).filter(|&s| (1..=1000).contains(&s)),
    ) {
        let mut out = BufWriter::new(std::io::stdout().lock());
        let written = writeln!(out, "{}", tpl_io::SPARSE_HEADER).and_then(|()| {
            grid_walk_rows(side, GRID_STAY).iter().enumerate().try_for_each(|(from, row)| {
                row.iter().try_for_each(|&(to, p)| writeln!(out, "{from},{to},{p}"))
            })
        });
        return finish(written.and_then(|()| out.flush()));
    }
    let size = args.get(1).and_then(|s| s.parse::<usize>().ok()).filter(|&s| (1..=20_000).contains(&s));
    let matrix = match (args.first().map(String::as_str), size) {
        (Some("dense"), Some(n)) => Family::Dense.matrix(n),
        (Some("grid"), Some(side)) if side <= 150 => grid_walk(side, GRID_STAY, GRID_SMOOTHING),
        _ => {
            eprintln!(
                "usage: gen_matrix dense N (1..=20000) | gen_matrix grid SIDE (1..=150) | gen_matrix sparse-grid SIDE (1..=1000)"
            );
            return ExitCode::from(2);
        }
    };
    if let Some(path) = args.get(2) {
        let n = matrix.n();
        let values: Vec<f64> = matrix.rows().flatten().copied().collect();
        return match tpl_io::npy::write_npy(Path::new(path), &tpl_io::npy::npy_f64(&[n, n], &values)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gen_matrix: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    let written = matrix.rows().try_for_each(|row| {
        let line: Vec<String> = row.iter().map(f64::to_string).collect();
        writeln!(out, "{}", line.join(","))
    });
    finish(written.and_then(|()| out.flush()))
}

/// The exit code of a run whose writing ended with `written`.
fn finish(written: std::io::Result<()>) -> ExitCode {
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_matrix: {e}");
            ExitCode::FAILURE
        }
    }
}
