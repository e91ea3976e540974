//! User-level streams (`stream.csv` of the project's shared data): header
//! `timestamp_bucket,user_id,location_cell`, one row per user per bucket (dense), buckets
//! 0..T−1 and users 0..N−1 without gaps, cells 0..k−1. The one stream parser and writer.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{CliError, Result};
use crate::text;

/// The header of a stream file.
pub const HEADER: &str = "timestamp_bucket,user_id,location_cell";

/// A dense stream: `states[t][u]` is user u's cell at bucket t.
pub struct Stream {
    /// States per bucket, per user.
    pub states: Vec<Vec<usize>>,
    /// 1 + the largest cell seen.
    pub cells: usize,
}

/// Reads a stream file; rows may come in any order, but every (bucket, user) pair must
/// appear exactly once. Errors name the file, line and value.
pub fn read_stream(path: &Path) -> Result<Stream> {
    parse_stream(path, &text::read(path)?)
}

/// Parses the text of a stream file; `path` names it in errors.
pub fn parse_stream(path: &Path, content: &str) -> Result<Stream> {
    let mut rows: Vec<(usize, usize, usize, usize)> = Vec::new(); // (bucket, user, cell, line)
    let mut header_seen = false;
    for (i, raw) in content.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !header_seen {
            let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
            if fields != ["timestamp_bucket", "user_id", "location_cell"] {
                return Err(CliError::parse(
                    path,
                    line,
                    format!("the header must be {HEADER:?}, found {trimmed:?}"),
                ));
            }
            header_seen = true;
            continue;
        }
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        if fields.len() != 3 {
            return Err(CliError::parse(
                path,
                line,
                format!("{} fields, but the header has 3", fields.len()),
            ));
        }
        let mut v = [0usize; 3];
        for (k, name) in ["timestamp_bucket", "user_id", "location_cell"].iter().enumerate() {
            v[k] = fields[k].parse().map_err(|_| {
                CliError::parse(
                    path,
                    line,
                    format!("column {} ({name}): {:?} is not a whole number ≥ 0", k + 1, fields[k]),
                )
            })?;
        }
        rows.push((v[0], v[1], v[2], line));
    }
    if rows.is_empty() {
        return Err(CliError::parse(path, 0, "no data rows (empty stream)"));
    }
    let buckets = 1 + rows.iter().map(|r| r.0).max().unwrap_or(0);
    let users = 1 + rows.iter().map(|r| r.1).max().unwrap_or(0);
    let cells = 1 + rows.iter().map(|r| r.2).max().unwrap_or(0);
    if rows.len() != buckets * users {
        // Find the first gap to name it.
        let mut seen_user = vec![false; users];
        let mut seen_bucket = vec![false; buckets];
        for r in &rows {
            seen_user[r.1] = true;
            seen_bucket[r.0] = true;
        }
        let what = if let Some(u) = seen_user.iter().position(|s| !s) {
            format!("user ids have a gap: user {u} never appears (ids must be 0..N−1)")
        } else if let Some(t) = seen_bucket.iter().position(|s| !s) {
            format!("buckets have a gap: bucket {t} never appears (buckets must be 0..T−1)")
        } else {
            format!(
                "{} rows, but a dense stream of {users} users over {buckets} buckets has {}",
                rows.len(),
                buckets * users
            )
        };
        return Err(CliError::parse(path, 0, what));
    }
    let mut states = vec![vec![usize::MAX; users]; buckets];
    for &(t, u, c, line) in &rows {
        if states[t][u] != usize::MAX {
            return Err(CliError::parse(path, line, format!("user {u} appears twice in bucket {t}")));
        }
        states[t][u] = c;
    }
    Ok(Stream { states, cells })
}

/// The stream file text of `states`.
pub fn stream_text(states: &[Vec<usize>]) -> String {
    let mut out = String::with_capacity(states.len() * states.first().map_or(0, Vec::len) * 10);
    out.push_str(HEADER);
    out.push('\n');
    for (t, step) in states.iter().enumerate() {
        for (u, c) in step.iter().enumerate() {
            let _ = writeln!(out, "{t},{u},{c}");
        }
    }
    out
}

/// The counts file text (`timestamp_bucket,c0,…`) of a histogram.
pub fn counts_text(counts: &[Vec<f64>]) -> String {
    let n = counts.first().map_or(0, Vec::len);
    let mut out = String::from("timestamp_bucket");
    for i in 0..n {
        let _ = write!(out, ",c{i}");
    }
    out.push('\n');
    for (t, row) in counts.iter().enumerate() {
        let _ = write!(out, "{t}");
        for v in row {
            let _ = write!(out, ",{v}");
        }
        out.push('\n');
    }
    out
}

/// The matrix file text of `rows`, under `#` comment lines.
pub fn matrix_text(comment: &str, rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut out = String::new();
    for line in comment.lines() {
        let _ = writeln!(out, "# {line}");
    }
    for row in rows {
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
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
        assert_eq!(s.cells, 3);
    }

    #[test]
    fn gaps_and_duplicates_are_named() {
        let e =
            parse("gap", "timestamp_bucket,user_id,location_cell\n0,0,1\n0,2,1\n").err().unwrap().to_string();
        assert!(e.contains("user 1 never appears"), "{e}");
        let e = parse("dup", "timestamp_bucket,user_id,location_cell\n0,0,1\n0,0,1\n1,0,0\n1,1,0\n")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("user 0 appears twice"), "{e}");
        let e = parse("hdr", "t,u,c\n0,0,1\n").err().unwrap().to_string();
        assert!(e.contains(":1:"), "{e}");
        let e = parse("neg", "timestamp_bucket,user_id,location_cell\n0,0,-1\n").err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("\"-1\""), "{e}");
        assert!(parse("empty", "timestamp_bucket,user_id,location_cell\n").is_err());
    }
}
