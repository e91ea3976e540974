//! Output: the `--format table|json|csv|npy` choice and the one writer of each format.
//!
//! JSON is the machine contract ([`docs/cli.md`](tpl_core::guide::cli)): one object per command,
//! numbers at full round-trip precision (serde_json prints the shortest decimal that parses back to
//! the same double). CSV has a header row and full-precision numbers (Rust's `Display` for f64 is
//! also shortest-round-trip). Tables are for people and may change.

use std::io::Write;

use clap::ValueEnum;
use serde_json::Value;

/// Output format of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people (default).
    Table,
    /// One JSON object: the machine contract.
    Json,
    /// Comma-separated values with a header row.
    Csv,
    /// The command's main array (releases, estimates) as a NumPy `.npy` file on standard
    /// output, for large runs: `--format npy > out.npy` (refused on a terminal).
    Npy,
}

/// What a command produced, in all three formats.
pub trait Report {
    /// The JSON object of the contract.
    fn json(&self) -> Value;
    /// CSV text, header first. A report written record by record implements
    /// [`Report::write_csv`] instead and keeps this default (one of the two must be given).
    fn csv(&self) -> String {
        let mut out = Vec::new();
        // Writing to memory cannot fail.
        let _ = self.write_csv(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
    /// Text for a terminal.
    fn table(&self) -> String;

    /// Writes the JSON object and a newline to `w`. Reports whose output grows with the
    /// horizon override this to stream the same bytes without building the object.
    fn write_json(&self, w: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *w, &self.json())?;
        w.write_all(b"\n")
    }

    /// Writes the CSV text to `w`; overridden like [`Report::write_json`] (and then
    /// [`Report::csv`] is the same bytes in memory).
    fn write_csv(&self, w: &mut dyn Write) -> std::io::Result<()> {
        w.write_all(self.csv().as_bytes())
    }

    /// The command's main array for `--format npy`: its shape ([rows, columns]) and values
    /// row after row. Default: none (the command has no array output).
    fn array(&self) -> Option<(Vec<usize>, Vec<f64>)> {
        None
    }

    /// Undoes what the command created when its report could not be written (the command
    /// then fails, so nothing it made may stay behind as if it had succeeded), and says
    /// what was undone. Default: nothing to undo.
    fn withdraw(&self) -> Option<String> {
        None
    }
}

/// The commands whose report has a main array for `--format npy`, as messages name them.
pub const NPY_COMMANDS: &str = "npy is for the releases of `release`, `stream push` and `stream export` and the estimates of `postprocess`";

/// Why `--format npy` is refused when standard output is a terminal.
pub const NPY_ON_TERMINAL: &str = "--format npy writes binary: redirect it to a file (`> out.npy`)";

/// Writes `report` in `format` to `w`.
pub fn write(report: &dyn Report, format: Format, w: &mut dyn Write) -> std::io::Result<()> {
    match format {
        Format::Json => report.write_json(w),
        Format::Csv => report.write_csv(w),
        Format::Table => w.write_all(report.table().as_bytes()),
        Format::Npy => match report.array() {
            Some((shape, values)) => w.write_all(&tpl_io::npy::npy_f64(&shape, &values)),
            None => Err(std::io::Error::other(format!(
                "--format npy: this command has no array output ({NPY_COMMANDS})"
            ))),
        },
    }
}

/// The shape and values row after row of `rows` (T rows of d values each), for
/// [`Report::array`].
pub fn rows_array(rows: &[Vec<f64>]) -> (Vec<usize>, Vec<f64>) {
    (vec![rows.len(), rows.first().map_or(0, Vec::len)], rows.concat())
}

/// Writes `report` to stdout (buffered); a closed pipe (`tpl … | head`) ends the program
/// quietly.
pub fn print(report: &dyn Report, format: Format) -> std::io::Result<()> {
    use std::io::IsTerminal;
    if format == Format::Npy && std::io::stdout().is_terminal() {
        return Err(std::io::Error::other(NPY_ON_TERMINAL));
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match write(report, format, &mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The JSON value of an output type (serialising an output cannot fail: its maps have
/// string keys; a failure would be a bug, shown as null rather than a panic).
pub fn json_of(output: &impl serde::Serialize) -> Value {
    serde_json::to_value(output).unwrap_or(Value::Null)
}

/// Writes the JSON of an output type and a newline to `w`, number by number (the same
/// bytes as [`json_of`], never built in memory).
pub fn write_json_of(w: &mut dyn Write, output: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, output).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}

/// "1 step", "2 steps": `n` and `noun`, with an "s" unless `n` is 1.
pub fn count_of(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

pub use tpl_io::{CsvWriter, csv_text, write_csv_records};
pub use tpl_report::{Table, human};

/// The CSV text of `rows` records, record `i` written by `row(w, i)`: the same bytes as one
/// [`csv_text`] over every record, with blocks of records formatted on all cores (printing a
/// double is ~100 ns; 2·10⁶ of them are most of a `tpl postprocess`).
pub fn csv_rows_text(
    rows: usize,
    row: impl Fn(&mut CsvWriter<&mut Vec<u8>>, usize) -> std::io::Result<()> + Sync,
) -> String {
    use rayon::prelude::*;
    const BLOCK: usize = 256;
    let blocks: Vec<String> = (0..rows.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| csv_text(|w| (b * BLOCK..rows.min((b + 1) * BLOCK)).try_for_each(|i| row(w, i))))
        .collect();
    blocks.concat()
}

/// The per-step table of a leakage series (t, ε_t, BPL_t, FPL_t, TPL_t), `keep` rows at
/// each end of a long series (TKDE eqs. 11–15 name the quantities).
pub fn leakage_table(s: &tpl_core::CompactSeries, keep: usize) -> Table {
    let mut t = Table::new(&["t", "ε_t", "BPL_t", "FPL_t", "TPL_t"]);
    t.elided_rows(s.len(), keep, |i| {
        vec![
            (i + 1).to_string(),
            human(s.budgets().get(i)),
            human(s.bpl()[i]),
            human(s.fpl()[i]),
            human(s.tpl_at(i)),
        ]
    });
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_formatted_in_blocks_are_the_bytes_of_one_writer() {
        // Blocks of 256 records: none, one partial, several and a partial last one.
        for rows in [0, 1, 255, 256, 257, 1000] {
            let value = |i: usize| (i as f64 + 0.1).powi(3) / 7.0;
            let whole = csv_text(|w| {
                (0..rows).try_for_each(|i| {
                    w.value(i)?;
                    w.value(value(i))?;
                    w.field("a,b")?;
                    w.end()
                })
            });
            let blocks = csv_rows_text(rows, |w, i| {
                w.value(i)?;
                w.value(value(i))?;
                w.field("a,b")?;
                w.end()
            });
            assert_eq!(blocks, whole, "{rows} rows");
        }
    }
}
