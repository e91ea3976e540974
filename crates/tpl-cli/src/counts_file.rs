//! Reading count streams (`docs/formats.md` §5): the one counts parser of the binary.
//!
//! Comma-separated, fields trimmed, blank lines and `#` lines ignored. If the first field
//! of the first line is `timestamp_bucket`, that line is a header: the cell columns are the
//! fields named `c` + digits, in file order, if there is one; otherwise every column after
//! the first. Other columns (labels) are ignored; row t is step t. Without that header every
//! field is a cell. The release CSV of `tpl release --format csv` is a releases file (read
//! with `allow_negative`), not a counts file: its noisy values may be negative.

use std::path::Path;

use tpl_mechanisms::{MechError, Mechanism};

use crate::error::{CliError, Result};
use crate::text;

/// A stream of count vectors, one per step, with the file lines they came from.
pub struct Counts {
    /// c_t for t = 1..T.
    pub rows: Vec<Vec<f64>>,
    /// The 1-based file line of each row.
    pub lines: Vec<usize>,
    /// The `publication_budget` column, when the header has one (the CSV of `tpl release`:
    /// the budget that set each step's noise, 0 where a release repeats an earlier one).
    pub publication_budget: Option<Vec<f64>>,
}

/// Reads a counts file (`-`: standard input); `allow_negative` accepts negative values
/// (noisy releases).
pub fn read_counts(path: &Path, allow_negative: bool) -> Result<Counts> {
    let content = text::read(path)?;
    let mut header: Option<(usize, Vec<usize>)> = None; // (field count, cell columns)
    let mut budget_column: Option<usize> = None;
    let mut budgets = Vec::new();
    let mut width: Option<usize> = None;
    let (mut rows, mut lines) = (Vec::new(), Vec::new());
    for (i, raw) in content.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        if width.is_none() && fields[0] == "timestamp_bucket" {
            let named: Vec<usize> = (0..fields.len()).filter(|&k| is_cell_name(fields[k])).collect();
            let cells = if named.is_empty() { (1..fields.len()).collect() } else { named };
            if cells.is_empty() {
                return Err(CliError::parse(path, line, "header has no cell columns"));
            }
            width = Some(fields.len());
            budget_column = fields.iter().position(|f| *f == "publication_budget");
            header = Some((fields.len(), cells));
            continue;
        }
        let expected = *width.get_or_insert(fields.len());
        if fields.len() != expected {
            return Err(CliError::parse(
                path,
                line,
                format!(
                    "{} fields, but the {} has {expected}",
                    fields.len(),
                    if header.is_some() { "header" } else { "first row" }
                ),
            ));
        }
        let columns: Vec<usize> = match &header {
            Some((_, cells)) => cells.clone(),
            None => (0..fields.len()).collect(),
        };
        let mut row = Vec::with_capacity(columns.len());
        for k in columns {
            let token = fields[k];
            let value: f64 = token.parse().map_err(|_| {
                CliError::parse(path, line, format!("column {}: {token:?} is not a number", k + 1))
            })?;
            if !value.is_finite() {
                return Err(CliError::parse(
                    path,
                    line,
                    format!("column {}: {token} is not a finite number", k + 1),
                ));
            }
            if value < 0.0 && !allow_negative {
                return Err(CliError::parse(
                    path,
                    line,
                    format!("column {}: count {token} is negative", k + 1),
                ));
            }
            row.push(value);
        }
        if let Some(k) = budget_column {
            let token = fields[k];
            let budget: f64 =
                token.parse().ok().filter(|b: &f64| b.is_finite() && *b >= 0.0).ok_or_else(|| {
                    CliError::parse(
                        path,
                        line,
                        format!("column {}: publication budget {token:?} is not a number ≥ 0", k + 1),
                    )
                })?;
            budgets.push(budget);
        }
        rows.push(row);
        lines.push(line);
    }
    if rows.is_empty() {
        return Err(CliError::parse(path, 0, "no data rows"));
    }
    Ok(Counts { rows, lines, publication_budget: budget_column.map(|_| budgets) })
}

/// Checks every row of `counts` with the mechanism's own [`Mechanism::validate`] before any
/// noise is drawn (integers within ±2^52 for the exact sampler), naming file, line and value;
/// `hint` is appended to the message for non-integer counts.
///
/// # Errors
/// The first row the mechanism refuses.
pub fn check_counts<M: Mechanism>(mechanism: &M, path: &Path, counts: &Counts, hint: &str) -> Result<()> {
    for (row, &line) in counts.rows.iter().zip(&counts.lines) {
        mechanism.validate(row).map_err(|e| {
            let message = match e {
                MechError::NotInteger { value } => format!(
                    "count {value} is not an integer: the exact integer sampler needs integer counts{hint}"
                ),
                other => other.to_string(),
            };
            CliError::parse(path, line, message)
        })?;
    }
    Ok(())
}

fn is_cell_name(field: &str) -> bool {
    field.len() > 1 && field.starts_with('c') && field[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Counts> {
        let dir = std::env::temp_dir().join(format!("tpl-counts-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.csv");
        std::fs::write(&path, text).unwrap();
        let out = read_counts(&path, false);
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn header_with_named_cells_and_labels() {
        let c = parse("timestamp_bucket,local_hour_start,c0,c1\n0,2024-01-01 06:00,3,4\n1,x,5,6\n").unwrap();
        assert_eq!(c.rows, vec![vec![3.0, 4.0], vec![5.0, 6.0]]);
        assert_eq!(c.lines, vec![2, 3]);
    }

    #[test]
    fn release_csv_gives_its_publication_budgets() {
        let text = "timestamp_bucket,published,budget,publication_budget,c0,c1\n1,1,0.25,0.25,3,-4\n2,0,0.05,0,3,-4\n";
        let dir = std::env::temp_dir().join(format!("tpl-counts-pub-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.csv");
        std::fs::write(&path, text).unwrap();
        let c = read_counts(&path, true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(c.rows, vec![vec![3.0, -4.0], vec![3.0, -4.0]]);
        assert_eq!(c.publication_budget, Some(vec![0.25, 0.0]));
    }

    #[test]
    fn headerless_and_comments() {
        let c = parse("# counts\n\n1, 2\n3,4\n").unwrap();
        assert_eq!(c.rows, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse("1,2\n3\n").err().unwrap().to_string();
        assert!(e.contains(":2:"), "{e}");
        let e = parse("1,2\n3,-1\n").err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("column 2") && e.contains("-1"), "{e}");
        let e = parse("1,x\n").err().unwrap().to_string();
        assert!(e.contains("column 2") && e.contains("\"x\""), "{e}");
        assert!(parse("# nothing\n").is_err());
    }
}
