//! Output: the `--format table|json|csv|npy` choice and the one writer of each format.
//!
//! JSON is the machine contract ([`docs/cli.md`](tpl_core::guide::cli)): one object per command,
//! numbers at full round-trip precision (serde_json prints the shortest decimal that parses back to
//! the same double). CSV has a header row and full-precision numbers (Rust's `Display` for f64 is
//! also shortest-round-trip). Tables are for people and may change.

use std::fmt::Write as _;
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

/// One number of a JSON output, exactly as serde_json prints it (shortest round-trip
/// digits, `1.0` for integral values); for reports that stream their JSON.
pub fn json_number(w: &mut dyn Write, x: f64) -> std::io::Result<()> {
    serde_json::to_writer(w, &x).map_err(std::io::Error::other)
}

/// Writes `"key":[v(0),…,v(len−1)]`, serde_json's rendering of a number array, number by
/// number (for reports that stream their JSON).
pub fn json_array(
    w: &mut dyn Write,
    key: &str,
    len: usize,
    mut v: impl FnMut(usize) -> f64,
) -> std::io::Result<()> {
    write!(w, "\"{key}\":[")?;
    for t in 0..len {
        if t > 0 {
            w.write_all(b",")?;
        }
        json_number(w, v(t))?;
    }
    w.write_all(b"]")
}

/// "1 step", "2 steps": `n` and `noun`, with an "s" unless `n` is 1.
pub fn count_of(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A number for people: 6 significant digits, plain notation when that is short.
pub fn human(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor();
    if (-4.0..7.0).contains(&magnitude) {
        let decimals = (5.0 - magnitude).max(0.0) as usize;
        let s = format!("{x:.decimals$}");
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
    } else {
        format!("{x:.5e}")
    }
}

pub use tpl_io::{CsvWriter, csv_text, write_csv_records};

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

/// A text table with right-aligned columns.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Self { header: header.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }

    /// Appends a row (as many cells as titles).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Appends the rows `row(i)` of a table of `len` rows as [`Table::elide`] would show
    /// them, building only those: all rows when len ≤ 2 keep + 1, else `keep` at each end
    /// around an ellipsis row.
    pub fn elided_rows(&mut self, len: usize, keep: usize, mut row: impl FnMut(usize) -> Vec<String>) {
        if len > 2 * keep + 1 {
            self.rows.extend((0..keep).map(&mut row));
            self.rows.push(vec!["…".to_string(); self.header.len()]);
            self.rows.extend((len - keep..len).map(row));
        } else {
            self.rows.extend((0..len).map(row));
        }
    }

    /// Rows `keep` at each end of a long table, with an ellipsis row in between.
    pub fn elide(&mut self, keep: usize) {
        if self.rows.len() > 2 * keep + 1 {
            let tail = self.rows.split_off(self.rows.len() - keep);
            self.rows.truncate(keep);
            self.rows.push(vec!["…".to_string(); self.header.len()]);
            self.rows.extend(tail);
        }
    }

    /// The aligned text, indented by two spaces.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.header[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut s = String::from(" ");
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(s, " {cell:>w$}");
            }
            s.push('\n');
            s
        };
        let mut out = line(&self.header);
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
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

    #[test]
    fn human_numbers() {
        assert_eq!(human(0.1), "0.1");
        assert_eq!(human(1.609437912), "1.60944");
        assert_eq!(human(1234.5), "1234.5");
        assert_eq!(human(1e-7), "1.00000e-7");
        assert_eq!(human(0.0), "0");
    }
}
