//! The check of a counts file against a mechanism before any noise is drawn: the rows
//! `tpl-io` read ([`docs/formats.md`](tpl_core::guide::formats) §5), refused by
//! [`Mechanism::validate`] with the file, line, column and value as typed.

use std::path::Path;

use tpl_io::Counts;
use tpl_mechanisms::{MechError, Mechanism};

use crate::error::{CliError, Result};

/// Checks every row of `counts` with the mechanism's own [`Mechanism::validate`] before any
/// noise is drawn (integers within ±2^52 for the exact sampler), naming file, line, column
/// and the value as typed; `hint` is appended to the message for non-integer counts.
///
/// # Errors
/// The first row the mechanism refuses.
pub fn check_counts<M: Mechanism>(mechanism: &M, path: &Path, counts: &Counts, hint: &str) -> Result<()> {
    for (t, &line) in counts.lines.iter().enumerate() {
        if let Some(message) = refused_row(mechanism, counts, t, hint) {
            return Err(CliError::parse(path, line, message));
        }
    }
    Ok(())
}

/// Why the mechanism refuses row `t` (0-based) of `counts` ([`Mechanism::validate`]), naming
/// the column and the value as typed (`hint` appended for a non-integer count); `None` when
/// it takes the row.
pub fn refused_row<M: Mechanism>(mechanism: &M, counts: &Counts, t: usize, hint: &str) -> Option<String> {
    let row = &counts.rows[t];
    mechanism.validate(row).err().map(|e| match e {
        MechError::NotInteger { .. } => {
            let k = row.iter().position(|v| v.fract() != 0.0).unwrap_or(0);
            format!(
                "column {}: count {} is not an integer: the exact integer sampler needs integer counts{hint}",
                counts.column(k),
                counts.token(t, k)
            )
        }
        MechError::CountTooLarge { cell, .. } => format!(
            "column {}: count {} is beyond ±2^52 = 4503599627370496, the largest the exact integer release \
             supports (larger counts, or integers that are not exact doubles, cannot take noise without rounding)",
            counts.column(cell),
            counts.token(t, cell)
        ),
        other => other.to_string(),
    })
}
