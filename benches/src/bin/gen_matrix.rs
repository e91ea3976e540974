//! Writes the matrices the whole-process measurements of `tpl` read, as a dense matrix file
//! (one row per line, shortest round-trip decimals) on standard output, or as a `.npy` array
//! to the file named by a third argument:
//!
//! - `gen_matrix dense N [OUT.npy]` — [`tpl_benches::dense`] with the seed of the benches'
//!   dense family;
//! - `gen_matrix grid SIDE [OUT.npy]` — [`tpl_benches::grid_walk`] on a SIDE × SIDE grid
//!   (n = SIDE²), stay [`tpl_benches::GRID_STAY`], smoothing [`tpl_benches::GRID_SMOOTHING`].

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use tpl_benches::{Family, GRID_SMOOTHING, GRID_STAY, grid_walk};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size = args.get(1).and_then(|s| s.parse::<usize>().ok()).filter(|&s| (1..=20_000).contains(&s));
    let matrix = match (args.first().map(String::as_str), size) {
        (Some("dense"), Some(n)) => Family::Dense.matrix(n),
        (Some("grid"), Some(side)) if side <= 150 => grid_walk(side, GRID_STAY, GRID_SMOOTHING),
        _ => {
            eprintln!("usage: gen_matrix dense N (1..=20000) | gen_matrix grid SIDE (1..=150)");
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
    match written.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_matrix: {e}");
            ExitCode::FAILURE
        }
    }
}
