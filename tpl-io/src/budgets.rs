//! Budget files ([`docs/formats.md`](tpl_core::guide::formats) §3): the sequence ε_1..ε_T. `.json`
//! holds one array of numbers; any other file (and `-`, standard input) one ε per line (`#`
//! comments and blank lines allowed). ε_t = 0 is valid. Only the values are kept (8 bytes a step).

use std::path::Path;

use tpl_core::Short;

use crate::error::{IoError, Result};
use crate::text;

/// Reads a budget file ([`docs/formats.md`](tpl_core::guide::formats) §3): one finite ε ≥ 0 per
/// step.
///
/// # Errors
/// A file that cannot be read, a line with more than one value, a value that is not a
/// finite number ≥ 0 ([`tpl_core::is_budget`]) or a file without budgets, naming the file,
/// the line (or JSON entry) and the value.
pub fn read_budgets(path: &Path) -> Result<Vec<f64>> {
    let content = text::read(path)?;
    let bad = |line: usize, at: String, v: f64| {
        IoError::parse(path, line, format!("{at}budget {} must be a finite number ≥ 0", Short(v)))
    };
    let mut values: Vec<f64> = Vec::new();
    if text::is_json(path) {
        // Each number as typed, through the parser of every other input: JSON's own would
        // round 1e-400 to 0 and 1e400 to infinity silently.
        let raw: Vec<&serde_json::value::RawValue> =
            serde_json::from_str(&content).map_err(|e| text::json_error(path, &e))?;
        for (k, token) in raw.iter().enumerate() {
            let at = || format!("entry {}: ", k + 1);
            let v = text::finite_f64(token.get())
                .map_err(|why| IoError::parse(path, 0, format!("{}{why}", at())))?;
            if !tpl_core::is_budget(v) {
                return Err(bad(0, at(), v));
            }
            values.push(v);
        }
    } else {
        text::for_each_record(path, &content, |r| {
            if r.values.len() != 1 {
                return Err(IoError::parse(
                    path,
                    r.line,
                    format!("{} values on one line; a budget file holds one ε per line", r.values.len()),
                ));
            }
            if !tpl_core::is_budget(r.values[0]) {
                return Err(bad(r.line, String::new(), r.values[0]));
            }
            values.push(r.values[0]);
            Ok(())
        })?;
    }
    if values.is_empty() {
        return Err(IoError::parse(path, 0, "no budgets (empty file)"));
    }
    Ok(values)
}
