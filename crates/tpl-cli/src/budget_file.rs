//! Reading budget sequences ε_1..ε_T: `.json` holds one array of numbers; any other file one
//! ε per line (`#` comments and blank lines allowed). ε_t = 0 is valid.

use std::path::Path;

use crate::error::{CliError, Result};
use crate::text;

/// Reads a budget file; errors name the file, the line and the value.
pub fn read_budgets(path: &Path) -> Result<Vec<f64>> {
    let content = text::read(path)?;
    let (values, lines): (Vec<f64>, Vec<usize>) = if text::is_json(path) {
        let values: Vec<f64> = serde_json::from_str(&content).map_err(|e| text::json_error(path, &e))?;
        let lines = vec![0; values.len()];
        (values, lines)
    } else {
        let mut values = Vec::new();
        let mut lines = Vec::new();
        for r in text::records(path, &content)? {
            if r.values.len() != 1 {
                return Err(CliError::parse(
                    path,
                    r.line,
                    format!("{} values on one line; a budget file holds one ε per line", r.values.len()),
                ));
            }
            values.push(r.values[0]);
            lines.push(r.line);
        }
        (values, lines)
    };
    if values.is_empty() {
        return Err(CliError::parse(path, 0, "no budgets (empty file)"));
    }
    for (k, &v) in values.iter().enumerate() {
        if !(v.is_finite() && v >= 0.0) {
            let at = if lines[k] > 0 { String::new() } else { format!("entry {}: ", k + 1) };
            return Err(CliError::parse(
                path,
                lines[k],
                format!("{at}budget {v} must be a finite number ≥ 0"),
            ));
        }
    }
    Ok(values)
}
