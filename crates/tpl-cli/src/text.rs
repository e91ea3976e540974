//! The plain-text conventions shared by every input file: `#` starts a comment, blank lines
//! are ignored, values are separated by commas and/or whitespace.

use std::path::Path;

use crate::error::{CliError, Result};

/// One non-blank line of a text file: its 1-based number and its values.
pub struct Record {
    /// 1-based line number in the file.
    pub line: usize,
    /// The numbers on the line, in order.
    pub values: Vec<f64>,
}

/// Reads a whole file to a string; names the file on failure.
pub fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| CliError::Read { path: path.to_path_buf(), source })
}

/// Splits `text` into records of numbers. A token that is not a number is an error naming
/// the line, the 1-based value position and the token; an empty field between two commas
/// too. Non-finite numbers ("inf", "NaN") parse here and are rejected by the caller's
/// validation with a message about their meaning.
pub fn records(path: &Path, text: &str) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut values = Vec::new();
        for field in content.split(',') {
            let field = field.trim();
            if field.is_empty() {
                return Err(CliError::parse(
                    path,
                    line,
                    format!("value {}: empty field between commas", values.len() + 1),
                ));
            }
            for token in field.split_whitespace() {
                let value = token.parse::<f64>().map_err(|_| {
                    CliError::parse(
                        path,
                        line,
                        format!("value {}: {token:?} is not a number", values.len() + 1),
                    )
                })?;
                values.push(value);
            }
        }
        out.push(Record { line, values });
    }
    Ok(out)
}

/// True when `path` ends in `.json` (any case).
pub fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// serde_json's error as "line L column C: reason".
pub fn json_error(path: &Path, e: &serde_json::Error) -> CliError {
    // serde_json's message ends with " at line L column C"; we put the position up front.
    let full = e.to_string();
    let reason = full.rsplit_once(" at line ").map_or(full.as_str(), |(r, _)| r);
    CliError::parse(path, e.line(), format!("column {}: invalid JSON: {reason}", e.column()))
}
