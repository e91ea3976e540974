//! User-level streams (`docs/formats.md` §6): header
//! `timestamp_bucket,user_id,location_cell`, one row per user per bucket (dense). Values are
//! any whole numbers 0..2⁶⁴−1; nothing is allocated by their size:
//!
//! - user ids are labels: the users are the distinct ids seen;
//! - buckets are time: the steps are the distinct buckets in ascending order, and they must be
//!   evenly spaced (0, 1, 2, … or, say, Unix minutes 28000000, 28000005, …), since a Markov
//!   chain's step is one fixed interval; a missing bucket is an error naming it;
//! - cell ids are kept as the list of distinct ids seen, ascending ([`Stream::cell_ids`]);
//!   `states` holds each user's position in that list. When the ids are 0..k−1 the position
//!   is the id itself.
//!
//! The one stream parser and writer.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{CliError, Result};
use crate::text;

/// The header of a stream file.
pub const HEADER: &str = "timestamp_bucket,user_id,location_cell";

/// A dense stream: `states[t][u]` is the index in [`Stream::cell_ids`] of user u's cell at
/// the t-th bucket.
pub struct Stream {
    /// States per bucket, per user: indices into `cell_ids`.
    pub states: Vec<Vec<usize>>,
    /// The distinct cell ids of the file, ascending.
    pub cell_ids: Vec<u64>,
    /// The first bucket and the spacing of the buckets (1 when there is one bucket).
    pub buckets: (u64, u64),
}

impl Stream {
    /// Number of distinct cells.
    pub fn cells(&self) -> usize {
        self.cell_ids.len()
    }

    /// True when the cell ids are exactly 0..k−1 (each id is its own index).
    pub fn ids_are_indices(&self) -> bool {
        self.cell_ids.last().is_some_and(|&m| m as usize == self.cell_ids.len() - 1)
    }
}

/// Reads a stream file (`-`: standard input); rows may come in any order, but every
/// (bucket, user) pair must appear exactly once. Errors name the file, line and value.
pub fn read_stream(path: &Path) -> Result<Stream> {
    parse_stream(path, &text::read(path)?)
}

/// One data row: bucket, user, cell and the 1-based line.
type Row = (u64, u64, u64, usize);

/// Parses the text of a stream file; `path` names it in errors.
pub fn parse_stream(path: &Path, content: &str) -> Result<Stream> {
    let mut rows: Vec<Row> = Vec::new();
    let mut header_seen = false;
    for (i, raw) in content.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        if !header_seen {
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
        if fields.len() != 3 {
            return Err(CliError::parse(
                path,
                line,
                format!("{} fields, but the header has 3", fields.len()),
            ));
        }
        let mut v = [0u64; 3];
        for (k, name) in ["timestamp_bucket", "user_id", "location_cell"].iter().enumerate() {
            v[k] = fields[k].parse().map_err(|_| {
                CliError::parse(
                    path,
                    line,
                    format!(
                        "column {} ({name}): {:?} is not a whole number from 0 to {}",
                        k + 1,
                        fields[k],
                        u64::MAX
                    ),
                )
            })?;
        }
        rows.push((v[0], v[1], v[2], line));
    }
    if rows.is_empty() {
        return Err(CliError::parse(path, 0, "no data rows (empty stream)"));
    }
    let distinct = |key: fn(&Row) -> u64| {
        let mut ids: Vec<u64> = rows.iter().map(key).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let bucket_ids = distinct(|r| r.0);
    let user_ids = distinct(|r| r.1);
    let cell_ids = distinct(|r| r.2);
    let buckets = check_spacing(path, &bucket_ids)?;
    let index = |ids: &[u64], id: u64| ids.binary_search(&id).unwrap_or_default();
    // (step, user, cell index, line), sorted by step, user, line: a dense stream is then the
    // sequence (0, 0), (0, 1), …, (T−1, N−1) and the first departure names what is wrong.
    let mut dense: Vec<(usize, usize, usize, usize)> = rows
        .iter()
        .map(|&(b, u, c, line)| (index(&bucket_ids, b), index(&user_ids, u), index(&cell_ids, c), line))
        .collect();
    drop(rows);
    dense.sort_unstable_by_key(|&(t, u, _, line)| (t, u, line));
    let users = user_ids.len();
    for (k, &(t, u, _, line)) in dense.iter().enumerate() {
        let expected = (k / users, k % users);
        if (t, u) == expected {
            continue;
        }
        return Err(if (t, u) < expected {
            CliError::parse(
                path,
                line,
                format!("user {} appears twice in bucket {}", user_ids[u], bucket_ids[t]),
            )
        } else {
            missing(path, &user_ids, &bucket_ids, expected)
        });
    }
    if !dense.len().is_multiple_of(users) {
        return Err(missing(path, &user_ids, &bucket_ids, (dense.len() / users, dense.len() % users)));
    }
    if dense.len() / users < bucket_ids.len() {
        return Err(missing(path, &user_ids, &bucket_ids, (dense.len() / users, 0)));
    }
    let states = dense.chunks(users).map(|step| step.iter().map(|r| r.2).collect()).collect();
    Ok(Stream { states, cell_ids, buckets })
}

/// The error for a (bucket, user) pair that has no row.
fn missing(path: &Path, user_ids: &[u64], bucket_ids: &[u64], (t, u): (usize, usize)) -> CliError {
    CliError::parse(
        path,
        0,
        format!(
            "user {} never appears in bucket {}: a stream lists every user at every bucket",
            user_ids[u], bucket_ids[t]
        ),
    )
}

/// The first bucket and the spacing of `ids` (distinct, ascending); an error names the first
/// missing bucket when they are not evenly spaced.
fn check_spacing(path: &Path, ids: &[u64]) -> Result<(u64, u64)> {
    let step = ids.windows(2).map(|p| p[1] - p[0]).min().unwrap_or(1);
    match ids.windows(2).find(|p| p[1] - p[0] != step) {
        Some(p) => Err(CliError::parse(
            path,
            0,
            format!(
                "buckets have a gap: bucket {} never appears (buckets are steps of {step} from {})",
                p[0] + step,
                ids[0]
            ),
        )),
        None => Ok((ids[0], step)),
    }
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
