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
//! The one stream parser and writer (CSV through the `csv` crate), and the writer of
//! counts files.

use std::path::Path;

use crate::error::{CliError, Result};
use crate::render::csv_text;
use crate::text;

/// The header of a stream file.
pub const HEADER: &str = "timestamp_bucket,user_id,location_cell";

/// The columns of [`HEADER`].
const COLUMNS: [&str; 3] = ["timestamp_bucket", "user_id", "location_cell"];

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
    let rows = read_rows(path, content)?;
    let distinct = |key: fn(&Row) -> u64| {
        let mut ids: Vec<u64> = rows.iter().map(key).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let ids = Ids { buckets: distinct(|r| r.0), users: distinct(|r| r.1) };
    let cell_ids = distinct(|r| r.2);
    let buckets = check_spacing(path, &ids.buckets)?;
    let index = |ids: &[u64], id: u64| ids.binary_search(&id).unwrap_or_default();
    // (step, user, cell index, line), sorted by step, user, line: a dense stream is then the
    // sequence (0, 0), (0, 1), …, (T−1, N−1) and the first departure names what is wrong.
    let mut dense: Vec<(usize, usize, usize, usize)> = rows
        .iter()
        .map(|&(b, u, c, line)| (index(&ids.buckets, b), index(&ids.users, u), index(&cell_ids, c), line))
        .collect();
    drop(rows);
    dense.sort_unstable_by_key(|&(t, u, _, line)| (t, u, line));
    check_dense(path, &ids, &dense)?;
    let states = dense.chunks(ids.users.len()).map(|step| step.iter().map(|r| r.2).collect()).collect();
    Ok(Stream { states, cell_ids, buckets })
}

/// The data rows of a stream file, after its header.
fn read_rows(path: &Path, content: &str) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
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
        rows.push((v[0], v[1], v[2], line));
        Ok(())
    })?;
    if rows.is_empty() {
        return Err(CliError::parse(path, 0, "no data rows (empty stream)"));
    }
    Ok(rows)
}

/// The distinct bucket and user ids of a stream, ascending.
struct Ids {
    buckets: Vec<u64>,
    users: Vec<u64>,
}

/// Checks that the sorted (step, user, cell, line) rows are exactly (0, 0), (0, 1), …,
/// (T−1, N−1): an error names the first pair given twice or missing.
fn check_dense(path: &Path, ids: &Ids, dense: &[(usize, usize, usize, usize)]) -> Result<()> {
    let users = ids.users.len();
    for (k, &(t, u, _, line)) in dense.iter().enumerate() {
        let expected = (k / users, k % users);
        if (t, u) == expected {
            continue;
        }
        return Err(if (t, u) < expected {
            let message = format!("user {} appears twice in bucket {}", ids.users[u], ids.buckets[t]);
            CliError::parse(path, line, message)
        } else {
            missing(path, ids, expected)
        });
    }
    if !dense.len().is_multiple_of(users) {
        return Err(missing(path, ids, (dense.len() / users, dense.len() % users)));
    }
    if dense.len() / users < ids.buckets.len() {
        return Err(missing(path, ids, (dense.len() / users, 0)));
    }
    Ok(())
}

/// The error for a (bucket, user) pair that has no row.
fn missing(path: &Path, ids: &Ids, (t, u): (usize, usize)) -> CliError {
    CliError::parse(
        path,
        0,
        format!(
            "user {} never appears in bucket {}: a stream lists every user at every bucket",
            ids.users[u], ids.buckets[t]
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
