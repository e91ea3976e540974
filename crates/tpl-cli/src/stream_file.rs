//! User-level streams (`docs/formats.md` §6): header
//! `timestamp_bucket,user_id,location_cell`, one row per user per bucket (dense), in any
//! order. Values are any whole numbers 0..2⁶⁴−1; the records are arranged into the dense
//! stream by [`tpl_core::UserStream::from_records`] (user ids are labels, buckets evenly
//! spaced steps, cell ids the distinct ids seen, ascending), whose errors are reported here
//! with the file and, for a repeated (bucket, user) pair, its line.
//!
//! The one stream parser and writer (CSV through the `csv` crate), and the writer of
//! counts files.

use std::path::Path;

use tpl_core::CoreError;

use crate::error::{CliError, Result};
use crate::render::csv_text;
use crate::text;

/// The header of a stream file.
pub const HEADER: &str = "timestamp_bucket,user_id,location_cell";

/// The columns of [`HEADER`].
const COLUMNS: [&str; 3] = ["timestamp_bucket", "user_id", "location_cell"];

/// A dense stream: the records of a stream file as `tpl-core` arranges them.
pub use tpl_core::UserStream as Stream;

/// Reads a stream file (`-`: standard input); rows may come in any order, but every
/// (bucket, user) pair must appear exactly once. Errors name the file, line and value.
pub fn read_stream(path: &Path) -> Result<Stream> {
    parse_stream(path, &text::read(path)?)
}

/// Parses the text of a stream file; `path` names it in errors.
pub fn parse_stream(path: &Path, content: &str) -> Result<Stream> {
    let (records, lines) = read_rows(path, content)?;
    Stream::from_records(&records).map_err(|e| {
        let line = match e {
            CoreError::StreamDuplicate { record, .. } => lines.get(record).copied().unwrap_or(0),
            _ => 0,
        };
        CliError::parse(path, line, e.to_string())
    })
}

/// The records (bucket, user, cell) of a stream file, and the 1-based line of each.
type Records = (Vec<(u64, u64, u64)>, Vec<usize>);

/// The data rows of a stream file, after its header.
fn read_rows(path: &Path, content: &str) -> Result<Records> {
    let mut rows: Vec<(u64, u64, u64)> = Vec::new();
    let mut lines: Vec<usize> = Vec::new();
    let mut header_seen = false;
    text::for_each_csv_record(path, content, |line, fields| {
        if !header_seen {
            if fields.iter().ne(COLUMNS) {
                let found = content.lines().nth(line - 1).unwrap_or_default().trim();
                let message = format!("the header must be {HEADER:?}, found {found:?}");
                return Err(CliError::parse(path, line, message));
            }
            header_seen = true;
            return Ok(());
        }
        if fields.len() != 3 {
            return Err(CliError::parse(
                path,
                line,
                format!("{} fields, but the header has 3", fields.len()),
            ));
        }
        let mut v = [0u64; 3];
        for (k, name) in COLUMNS.iter().enumerate() {
            v[k] = fields[k].parse().map_err(|_| {
                let message = format!(
                    "column {} ({name}): {:?} is not a whole number from 0 to {}",
                    k + 1,
                    &fields[k],
                    u64::MAX
                );
                CliError::parse(path, line, message)
            })?;
        }
        rows.push((v[0], v[1], v[2]));
        lines.push(line);
        Ok(())
    })?;
    if rows.is_empty() {
        return Err(CliError::parse(path, 0, "no data rows (empty stream)"));
    }
    Ok((rows, lines))
}

/// The stream file text of `states`.
pub fn stream_text(states: &[Vec<usize>]) -> String {
    csv_text(|w| {
        w.record(COLUMNS)?;
        for (t, step) in states.iter().enumerate() {
            for (u, c) in step.iter().enumerate() {
                w.value(t)?;
                w.value(u)?;
                w.value(c)?;
                w.end()?;
            }
        }
        Ok(())
    })
}

/// The counts file text (`timestamp_bucket,c0,…`) of a histogram.
pub fn counts_text(counts: &[Vec<f64>]) -> String {
    let n = counts.first().map_or(0, Vec::len);
    csv_text(|w| {
        w.field("timestamp_bucket")?;
        for i in 0..n {
            w.value(format_args!("c{i}"))?;
        }
        w.end()?;
        for (t, row) in counts.iter().enumerate() {
            w.value(t)?;
            for v in row {
                w.value(v)?;
            }
            w.end()?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<Stream> {
        let dir = std::env::temp_dir().join(format!("tpl-stream-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.csv");
        std::fs::write(&path, text).unwrap();
        let out = read_stream(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn round_trip() {
        let states = vec![vec![0, 2], vec![1, 2]];
        let s = parse("rt", &stream_text(&states)).unwrap();
        assert_eq!(s.states, states);
        assert_eq!(s.cell_ids, vec![0, 1, 2]);
        assert!(s.ids_are_indices());
        assert_eq!(s.buckets, (0, 1));
    }

    #[test]
    fn largest_ids_are_labels_not_sizes() {
        let max = u64::MAX;
        let s = parse("max", &format!("{HEADER}\n{max},{max},0\n")).unwrap();
        assert_eq!((s.states.clone(), s.cell_ids.clone(), s.buckets), (vec![vec![0]], vec![0], (max, 1)));
        let text =
            format!("{HEADER}\n7,1000000000000,99999\n7,5,{}\n9,5,3\n9,1000000000000,99999\n", max - 1);
        let s = parse("sparse", &text).unwrap();
        assert_eq!(s.cell_ids, vec![3, 99999, max - 1]);
        // Users in id order: 5, then 10¹².
        assert_eq!(s.states, vec![vec![2, 1], vec![0, 1]]);
        assert_eq!(s.buckets, (7, 2));
        assert!(!s.ids_are_indices());
    }

    #[test]
    fn gaps_and_duplicates_are_named() {
        let e = parse("gap", &format!("{HEADER}\n0,0,1\n0,2,1\n1,0,1\n")).err().unwrap().to_string();
        assert!(e.contains("user 2 never appears in bucket 1"), "{e}");
        let e = parse("tgap", &format!("{HEADER}\n0,0,1\n1,0,1\n3,0,1\n")).err().unwrap().to_string();
        assert!(e.contains("bucket 2 never appears"), "{e}");
        let e = parse("dup", &format!("{HEADER}\n0,0,1\n0,0,1\n1,0,0\n1,1,0\n")).err().unwrap().to_string();
        assert!(e.contains(":3:") && e.contains("user 0 appears twice in bucket 0"), "{e}");
        let e = parse("hdr", "t,u,c\n0,0,1\n").err().unwrap().to_string();
        assert!(e.contains(":1:"), "{e}");
        let e = parse("neg", &format!("{HEADER}\n0,0,-1\n")).err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("\"-1\""), "{e}");
        let e = parse("big", &format!("{HEADER}\n0,0,18446744073709551616\n")).err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("18446744073709551616"), "{e}");
        assert!(parse("empty", &format!("{HEADER}\n")).is_err());
    }
}
