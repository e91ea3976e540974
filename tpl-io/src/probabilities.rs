//! Prior files and initial distributions ([`docs/formats.md`](tpl_core::guide::formats) §4): one
//! row of n probabilities. Whether they are probabilities (finite, ≥ 0, summing to 1) is for the
//! estimator or the simulation to check; this module reads the row.

use std::path::Path;

use crate::error::{IoError, Result};
use crate::text;

/// Reads a prior file ([`docs/formats.md`](tpl_core::guide::formats) §4; `tpl postprocess --prior
/// FILE`): numeric text with exactly one non-comment line, or a `.json` array of numbers.
///
/// # Errors
/// A file that cannot be read, a token that is not a finite number, more than one row
/// (naming the line of the second) or no value.
pub fn read_prior(path: &Path) -> Result<Vec<f64>> {
    let row: Vec<f64> = if text::is_json(path) {
        text::read_json_numbers(path)?
    } else {
        let mut records = text::read_records(path)?;
        if records.len() > 1 {
            return Err(IoError::parse(
                path,
                records[1].line,
                format!("a prior file holds one row of probabilities, found {} rows", records.len()),
            ));
        }
        records.pop().map(|r| r.values).unwrap_or_default()
    };
    if row.is_empty() {
        return Err(IoError::parse(path, 0, "no prior values (empty file)"));
    }
    Ok(row)
}

/// Reads an initial distribution ([`docs/formats.md`](tpl_core::guide::formats) §4; `tpl simulate
/// --initial FILE`): numeric text with exactly one non-comment line of `n` values (no JSON form).
///
/// # Errors
/// A file that cannot be read, a token that is not a finite number, a row of another
/// length than `n`, more than one row (naming the line of the second) or none.
pub fn read_initial_distribution(path: &Path, n: usize) -> Result<Vec<f64>> {
    let records = text::read_records(path)?;
    match records.as_slice() {
        [one] if one.values.len() == n => Ok(one.values.clone()),
        [one] => Err(IoError::parse(
            path,
            one.line,
            format!("{} probabilities, but the matrix has {n} cells", one.values.len()),
        )),
        [] => Err(IoError::parse(path, 0, "no values (empty file)")),
        [_, second, ..] => Err(IoError::parse(path, second.line, "an initial distribution is one row")),
    }
}
