//! Output: the `--format table|json|csv` choice and the one writer of each format.
//!
//! JSON is the machine contract of DESIGN.md: one object per command, numbers at full
//! round-trip precision (serde_json prints the shortest decimal that parses back to the same
//! double). CSV has a header row and full-precision numbers (Rust's `Display` for f64 is
//! also shortest-round-trip). Tables are for people and may change.

use std::fmt::Write as _;
use std::io::Write as _;

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
}

/// What a command produced, in all three formats.
pub trait Report {
    /// The JSON object of the contract.
    fn json(&self) -> Value;
    /// CSV text, header first.
    fn csv(&self) -> String;
    /// Text for a terminal.
    fn table(&self) -> String;
}

/// Renders `report` in `format`.
pub fn render(report: &dyn Report, format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = report.json().to_string();
            s.push('\n');
            s
        }
        Format::Csv => report.csv(),
        Format::Table => report.table(),
    }
}

/// Writes to stdout; a closed pipe (`tpl … | head`) ends the program quietly.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
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

/// One CSV line from already formatted fields.
pub fn csv_line(fields: &[String]) -> String {
    let mut s = fields.join(",");
    s.push('\n');
    s
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
    fn human_numbers() {
        assert_eq!(human(0.1), "0.1");
        assert_eq!(human(1.609437912), "1.60944");
        assert_eq!(human(1234.5), "1234.5");
        assert_eq!(human(1e-7), "1.00000e-7");
        assert_eq!(human(0.0), "0");
    }
}
