//! A user-level stream from its records (bucket, user, cell), in any order: the dense form
//! `states[t][u]` that [`crate::TransitionCounts`] counts moves in
//! ([`docs/formats.md`](crate::guide::formats) §6). Values are any whole numbers 0..2⁶⁴−1; nothing
//! is allocated by their size:
//!
//! - user ids are labels: the users are the distinct ids seen;
//! - buckets are time: the steps are the distinct buckets in ascending order, and they must be
//!   evenly spaced (0, 1, 2, … or, say, Unix minutes 28000000, 28000005, …), since a Markov
//!   chain's step is one fixed interval;
//! - cell ids are kept as the list of distinct ids seen, ascending
//!   ([`UserStream::cell_ids`]); `states` holds each user's position in that list. When the
//!   ids are 0..k−1 the position is the id itself.

use crate::error::{CoreError, Result};

/// A dense stream: `states[t][u]` is the index in [`UserStream::cell_ids`] of user u's cell
/// at the t-th bucket (users in ascending id order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserStream {
    /// States per bucket, per user: indices into `cell_ids`.
    pub states: Vec<Vec<usize>>,
    /// The distinct cell ids of the records, ascending.
    pub cell_ids: Vec<u64>,
    /// The first bucket and the spacing of the buckets (1 when there is one bucket).
    pub buckets: (u64, u64),
}

/// The distinct bucket and user ids of a stream, ascending.
struct Ids {
    buckets: Vec<u64>,
    users: Vec<u64>,
}

impl UserStream {
    /// The dense stream of `records` (bucket, user, cell): every (bucket, user) pair must
    /// appear exactly once and the buckets must be evenly spaced.
    ///
    /// ```
    /// use tpl_core::UserStream;
    /// let s = UserStream::from_records(&[(5, 7, 30), (4, 7, 10), (4, 9, 30), (5, 9, 30)])?;
    /// assert_eq!(s.states, vec![vec![0, 1], vec![1, 1]]);
    /// assert_eq!((s.cell_ids.clone(), s.buckets), (vec![10, 30], (4, 1)));
    /// assert!(UserStream::from_records(&[(0, 1, 0), (1, 1, 0), (3, 1, 0)]).is_err()); // bucket 2 missing
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::EmptyStream`]; [`CoreError::StreamGap`] naming the first missing bucket;
    /// [`CoreError::StreamDuplicate`] naming the 0-based record that repeats a (bucket, user)
    /// pair; [`CoreError::StreamMissing`] naming the first pair without a record.
    pub fn from_records(records: &[(u64, u64, u64)]) -> Result<Self> {
        if records.is_empty() {
            return Err(CoreError::EmptyStream);
        }
        // Each list of distinct ids is made at 8 bytes a record, then given back down to its
        // own length (a few ids per bucket, user or cell), one list at a time.
        let distinct = |key: fn(&(u64, u64, u64)) -> u64| {
            let mut ids: Vec<u64> = records.iter().map(key).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.shrink_to_fit();
            ids
        };
        let ids = Ids { buckets: distinct(|r| r.0), users: distinct(|r| r.1) };
        let cell_ids = distinct(|r| r.2);
        let buckets = spacing(&ids.buckets)?;
        let index = |ids: &[u64], id: u64| ids.binary_search(&id).unwrap_or_default();
        // (step, user, cell index, record), sorted by step, user, record: a dense stream is
        // then the sequence (0, 0), (0, 1), …, (T−1, N−1) and the first departure names what
        // is wrong.
        let mut dense: Vec<(usize, usize, usize, usize)> = records
            .iter()
            .enumerate()
            .map(|(k, &(b, u, c))| (index(&ids.buckets, b), index(&ids.users, u), index(&cell_ids, c), k))
            .collect();
        dense.sort_unstable_by_key(|&(t, u, _, k)| (t, u, k));
        check_dense(&ids, &dense)?;
        let states = dense.chunks(ids.users.len()).map(|step| step.iter().map(|r| r.2).collect()).collect();
        Ok(Self { states, cell_ids, buckets })
    }

    /// Number of distinct cells.
    pub fn cells(&self) -> usize {
        self.cell_ids.len()
    }

    /// True when the cell ids are exactly 0..k−1 (each id is its own index).
    pub fn ids_are_indices(&self) -> bool {
        self.cell_ids.last().is_some_and(|&m| m as usize == self.cell_ids.len() - 1)
    }
}

/// Checks that the sorted (step, user, cell, record) rows are exactly (0, 0), (0, 1), …,
/// (T−1, N−1): an error names the first pair given twice or missing.
fn check_dense(ids: &Ids, dense: &[(usize, usize, usize, usize)]) -> Result<()> {
    let users = ids.users.len();
    let missing =
        |(t, u): (usize, usize)| CoreError::StreamMissing { user: ids.users[u], bucket: ids.buckets[t] };
    for (k, &(t, u, _, record)) in dense.iter().enumerate() {
        let expected = (k / users, k % users);
        if (t, u) == expected {
            continue;
        }
        return Err(if (t, u) < expected {
            CoreError::StreamDuplicate { record, user: ids.users[u], bucket: ids.buckets[t] }
        } else {
            missing(expected)
        });
    }
    if !dense.len().is_multiple_of(users) {
        return Err(missing((dense.len() / users, dense.len() % users)));
    }
    if dense.len() / users < ids.buckets.len() {
        return Err(missing((dense.len() / users, 0)));
    }
    Ok(())
}

/// The first bucket and the spacing of `ids` (distinct, ascending); an error names the first
/// missing bucket when they are not evenly spaced.
fn spacing(ids: &[u64]) -> Result<(u64, u64)> {
    let step = ids.windows(2).map(|p| p[1] - p[0]).min().unwrap_or(1);
    match ids.windows(2).find(|p| p[1] - p[0] != step) {
        Some(p) => Err(CoreError::StreamGap { missing: p[0] + step, spacing: step, first: ids[0] }),
        None => Ok((ids[0], step)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_any_order_make_the_same_dense_stream() {
        let records = [(0, 0, 0), (0, 1, 2), (1, 0, 1), (1, 1, 2)];
        let mut shuffled = records;
        shuffled.reverse();
        let a = UserStream::from_records(&records).unwrap();
        assert_eq!(a, UserStream::from_records(&shuffled).unwrap());
        assert_eq!(a.states, vec![vec![0, 2], vec![1, 2]]);
        assert!(a.ids_are_indices() && a.cells() == 3);
    }

    #[test]
    fn largest_ids_are_labels_not_sizes() {
        let max = u64::MAX;
        let s = UserStream::from_records(&[(max, max, 0)]).unwrap();
        assert_eq!((s.states.clone(), s.cell_ids.clone(), s.buckets), (vec![vec![0]], vec![0], (max, 1)));
    }

    #[test]
    fn gaps_duplicates_and_missing_pairs_are_named() {
        let e = UserStream::from_records(&[(0, 0, 1), (0, 2, 1), (1, 0, 1)]).unwrap_err();
        assert_eq!(e, CoreError::StreamMissing { user: 2, bucket: 1 });
        let e = UserStream::from_records(&[(0, 0, 1), (1, 0, 1), (3, 0, 1)]).unwrap_err();
        assert_eq!(e, CoreError::StreamGap { missing: 2, spacing: 1, first: 0 });
        let e = UserStream::from_records(&[(0, 0, 1), (0, 0, 1), (1, 0, 0)]).unwrap_err();
        assert_eq!(e, CoreError::StreamDuplicate { record: 1, user: 0, bucket: 0 });
        assert_eq!(UserStream::from_records(&[]).unwrap_err(), CoreError::EmptyStream);
    }
}
