//! Numbers and aligned tables for people: what the command line prints as `--format table`
//! and what the pages write in their cells.

use std::fmt::Write as _;

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
    fn human_numbers() {
        assert_eq!(human(0.1), "0.1");
        assert_eq!(human(1.609437912), "1.60944");
        assert_eq!(human(1234.5), "1234.5");
        assert_eq!(human(1e-7), "1.00000e-7");
        assert_eq!(human(0.0), "0");
    }
}
