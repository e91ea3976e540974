//! Counting the moves of a user stream as it is read ([`docs/formats.md`](tpl_core::guide::formats)
//! §6, §6.1), with the checks of [`tpl_core::UserStream::from_records`] done as the rows come:
//! memory is a few numbers per user and per bucket plus the cells × cells counts while the rows
//! come in bucket order ([`InOrder`]), 2 bytes per (bucket, user) pair otherwise ([`Held`]). The
//! errors are `tpl-core`'s ([`CoreError::StreamGap`], [`CoreError::StreamDuplicate`],
//! [`CoreError::StreamMissing`], [`CoreError::EmptyStream`]): the same departure, named in the same
//! words, as the whole-stream check names.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tpl_core::{CoreError, StepRange, TransitionCounts};

use super::StreamCounts;
use crate::MAX_SPARSE_CELLS;
use crate::error::{IoError, Result};

/// A cell as stored per (bucket, user): its position among the distinct cell ids in order of
/// first appearance.
type Cell = u16;

/// No row for this (bucket, user) yet.
const ABSENT: Cell = Cell::MAX;

/// Stored for every cell past the first [`MAX_SPARSE_CELLS`] (such a stream is refused).
const BEYOND: Cell = MAX_SPARSE_CELLS as Cell;

const _: () = assert!(MAX_SPARSE_CELLS < ABSENT as usize);

/// How a cell position is stored.
fn stored(position: usize) -> Cell {
    position.min(MAX_SPARSE_CELLS) as Cell
}

/// Ids (users, cells or buckets) in order of first appearance.
#[derive(Default)]
struct Labels {
    position: HashMap<u64, usize>,
    ids: Vec<u64>,
}

impl Labels {
    /// The position of `id`, added if new; `guess` is tried before the table.
    #[inline]
    fn find(&mut self, id: u64, guess: usize) -> usize {
        if self.ids.get(guess) == Some(&id) {
            return guess;
        }
        let next = self.ids.len();
        let position = *self.position.entry(id).or_insert(next);
        if position == next {
            self.ids.push(id);
        }
        position
    }

    /// The ids ascending, and the rank among them of the id at each position.
    fn sorted(&self) -> (Vec<u64>, Vec<usize>) {
        let order = self.order();
        let mut rank = vec![0; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        (order.iter().map(|&i| self.ids[i]).collect(), rank)
    }

    /// The positions in ascending order of their ids.
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.ids.len()).collect();
        order.sort_unstable_by_key(|&i| self.ids[i]);
        order
    }
}

/// A row of the file: its 0-based position among the data rows (the record of
/// [`CoreError::StreamDuplicate`]) and its 1-based line.
#[derive(Clone, Copy, Default)]
struct Row {
    record: usize,
    line: usize,
}

/// The first departure from a dense stream seen so far, in the order of (bucket, user) ids:
/// the first pair given twice (with its second row) and the first pair missing.
#[derive(Default)]
struct Density {
    twice: Option<(u64, u64, Row)>,
    missing: Option<(u64, u64)>,
}

impl Density {
    fn twice(&mut self, bucket: u64, user: u64, row: Row) {
        if self.twice.is_none_or(|(b, u, _)| (bucket, user) < (b, u)) {
            self.twice = Some((bucket, user, row));
        }
    }

    fn missing(&mut self, bucket: u64, user: u64) {
        if self.missing.is_none_or(|first| (bucket, user) < first) {
            self.missing = Some((bucket, user));
        }
    }

    /// Notes the users (ids `users`, by position) that `cells` (by user position) lacks.
    fn check_bucket(&mut self, bucket: u64, cells: &[Cell], users: &[u64]) {
        if self.missing.is_some_and(|(b, _)| b <= bucket) {
            return;
        }
        let absent = users
            .iter()
            .enumerate()
            .filter(|&(u, _)| cells.get(u).is_none_or(|&c| c == ABSENT))
            .map(|(_, &id)| id)
            .min();
        if let Some(user) = absent {
            self.missing(bucket, user);
        }
    }

    /// The error of the first departure, if any.
    fn check(&self, path: &Path) -> Result<()> {
        match (self.twice, self.missing) {
            (Some((bucket, user, row)), first) if first.is_none_or(|m| (bucket, user) < m) => {
                let source = CoreError::StreamDuplicate { record: row.record, user, bucket };
                Err(IoError::core(path, row.line, source))
            }
            (_, Some((bucket, user))) => {
                Err(IoError::core(path, 0, CoreError::StreamMissing { user, bucket }))
            }
            _ => Ok(()),
        }
    }
}

/// The moves between consecutive steps that a step range keeps, among cells by position of
/// first appearance.
struct Moves {
    range: StepRange,
    counts: Option<TransitionCounts>,
}

impl Moves {
    fn new(range: StepRange) -> Self {
        Self { range, counts: None }
    }

    /// Counts the moves from step `step` (from 1) to the next, `from[u]` → `to[u]` for each
    /// user u, when the range holds both steps; `cells` cells are known so far.
    fn count(&mut self, step: usize, from: &[Cell], to: &[Cell], cells: usize) -> tpl_core::Result<()> {
        if step < self.range.first().unwrap_or(1) || self.range.last().is_some_and(|last| step >= last) {
            return Ok(());
        }
        let needed = cells.min(MAX_SPARSE_CELLS);
        let counts = match self.counts.take() {
            None => TransitionCounts::new(needed)?,
            // Doubling keeps the copies a small multiple of the final table.
            Some(c) if c.n() < needed => {
                let n = needed.max((2 * c.n()).min(MAX_SPARSE_CELLS));
                c.relabeled(&(0..c.n()).collect::<Vec<_>>(), n)?
            }
            Some(c) => c,
        };
        let counts = self.counts.insert(counts);
        for (&a, &b) in from.iter().zip(to) {
            if a < BEYOND && b < BEYOND {
                counts.add(a as usize, b as usize, 1)?;
            }
        }
        Ok(())
    }

    /// The counts among the cells `cells`, renumbered in ascending order of their ids.
    fn into_counts(
        self,
        cells: &Labels,
        users: usize,
        steps: usize,
        buckets: (u64, u64),
    ) -> tpl_core::Result<StreamCounts> {
        let (cell_ids, rank) = cells.sorted();
        let counts = if cell_ids.len() > MAX_SPARSE_CELLS {
            None
        } else {
            Some(match self.counts {
                Some(c) => c.relabeled(&rank, cell_ids.len())?,
                None => TransitionCounts::new(cell_ids.len())?,
            })
        };
        Ok(StreamCounts { cell_ids, counts, users, steps, buckets })
    }
}

/// A stream counted as it is read, while its rows come in bucket order: the cells of every
/// user at the bucket before and at the current one.
pub(super) struct InOrder {
    /// The file, named in errors.
    path: PathBuf,
    users: Labels,
    cells: Labels,
    /// The buckets seen, ascending.
    buckets: Vec<u64>,
    previous: Vec<Cell>,
    current: Vec<Cell>,
    /// The position of the user expected next (rows often list users in the same order at
    /// every bucket).
    next_user: usize,
    /// Users seen in the first bucket.
    first_users: usize,
    /// Data rows read so far.
    records: usize,
    density: Density,
    moves: Moves,
}

impl InOrder {
    pub(super) fn new(path: &Path, range: StepRange) -> Self {
        Self {
            path: path.to_path_buf(),
            users: Labels::default(),
            cells: Labels::default(),
            buckets: Vec::new(),
            previous: Vec::new(),
            current: Vec::new(),
            next_user: 0,
            first_users: 0,
            records: 0,
            density: Density::default(),
            moves: Moves::new(range),
        }
    }

    /// Takes one row; false when it comes after a later bucket's row (the stream is then
    /// not in bucket order and must be read again).
    #[inline]
    pub(super) fn row(&mut self, bucket: u64, user: u64, cell: u64, line: usize) -> Result<bool> {
        match self.buckets.last() {
            Some(&last) if bucket == last => {}
            Some(&last) if bucket < last => return Ok(false),
            Some(_) => {
                self.close()?;
                self.open(bucket);
            }
            None => self.open(bucket),
        }
        let row = Row { record: self.records, line };
        self.records += 1;
        let u = self.users.find(user, self.next_user);
        self.next_user = u + 1;
        if u >= self.current.len() {
            self.current.resize(u + 1, ABSENT);
            self.previous.resize(u + 1, ABSENT);
        }
        // Most users stay where they were.
        let c = stored(self.cells.find(cell, self.previous[u] as usize));
        if self.current[u] == ABSENT {
            self.current[u] = c;
        } else {
            self.density.twice(bucket, user, row);
        }
        Ok(true)
    }

    fn open(&mut self, bucket: u64) {
        self.buckets.push(bucket);
        std::mem::swap(&mut self.previous, &mut self.current);
        self.current.fill(ABSENT);
        self.next_user = 0;
    }

    /// Checks the current bucket and counts the moves into it.
    fn close(&mut self) -> Result<()> {
        let step = self.buckets.len();
        self.density.check_bucket(self.buckets[step - 1], &self.current, &self.users.ids);
        if step == 1 {
            self.first_users = self.users.ids.len();
            return Ok(());
        }
        let cells = self.cells.ids.len();
        self.moves
            .count(step - 1, &self.previous, &self.current, cells)
            .map_err(|e| IoError::core(&self.path, 0, e))
    }

    /// The counts of the whole stream, once every row is read.
    pub(super) fn finish(mut self) -> Result<StreamCounts> {
        let path = self.path.clone();
        let core = |e| IoError::core(&path, 0, e);
        if self.buckets.is_empty() {
            return Err(core(CoreError::EmptyStream));
        }
        self.close()?;
        // A user first seen after the first bucket is missing there, before anything later.
        if let Some(&user) = self.users.ids[self.first_users..].iter().min() {
            self.density.missing(self.buckets[0], user);
        }
        let buckets = spacing(&self.buckets).map_err(core)?;
        self.density.check(&path)?;
        self.moves.into_counts(&self.cells, self.users.ids.len(), self.buckets.len(), buckets).map_err(core)
    }
}

/// A stream held whole, its rows in any order: the cell of every (bucket, user) pair, by
/// bucket and user in order of first appearance.
#[derive(Default)]
pub(super) struct Held {
    buckets: Labels,
    users: Labels,
    cells: Labels,
    rows: Vec<Vec<Cell>>,
    last_bucket: usize,
    next_user: usize,
    /// Data rows read so far.
    records: usize,
    density: Density,
}

impl Held {
    /// Takes one row.
    #[inline]
    pub(super) fn row(&mut self, bucket: u64, user: u64, cell: u64, line: usize) {
        let record = Row { record: self.records, line };
        self.records += 1;
        let b = self.buckets.find(bucket, self.last_bucket);
        self.last_bucket = b;
        if b == self.rows.len() {
            self.rows.push(Vec::new());
        }
        let u = self.users.find(user, self.next_user);
        self.next_user = u + 1;
        let c = stored(self.cells.find(cell, usize::MAX));
        let row = &mut self.rows[b];
        if u >= row.len() {
            row.resize(self.users.ids.len(), ABSENT);
        }
        if row[u] == ABSENT {
            row[u] = c;
        } else {
            self.density.twice(bucket, user, record);
        }
    }

    /// The checks of the whole stream and its counts within `range`; `path` names the file.
    pub(super) fn into_counts(mut self, path: &Path, range: StepRange) -> Result<StreamCounts> {
        let core = |e| IoError::core(path, 0, e);
        if self.rows.is_empty() {
            return Err(core(CoreError::EmptyStream));
        }
        let order = self.buckets.order();
        let ids: Vec<u64> = order.iter().map(|&b| self.buckets.ids[b]).collect();
        let buckets = spacing(&ids).map_err(core)?;
        for (&b, &id) in order.iter().zip(&ids) {
            self.density.check_bucket(id, &self.rows[b], &self.users.ids);
        }
        self.density.check(path)?;
        let mut moves = Moves::new(range);
        for (t, pair) in order.windows(2).enumerate() {
            moves
                .count(t + 1, &self.rows[pair[0]], &self.rows[pair[1]], self.cells.ids.len())
                .map_err(core)?;
        }
        moves.into_counts(&self.cells, self.users.ids.len(), order.len(), buckets).map_err(core)
    }
}

/// The first bucket and the spacing of `ids` (distinct, ascending, not empty), or
/// [`CoreError::StreamGap`] naming the first missing bucket: the check of
/// [`tpl_core::UserStream::from_records`] on the buckets alone, which `tpl-core` keeps
/// private (a public `tpl_core` bucket check would replace these lines).
fn spacing(ids: &[u64]) -> tpl_core::Result<(u64, u64)> {
    let first = ids.first().copied().unwrap_or_default();
    let step = ids.windows(2).map(|p| p[1] - p[0]).min().unwrap_or(1);
    match ids.windows(2).find(|p| p[1] - p[0] != step) {
        Some(p) => Err(CoreError::StreamGap { missing: p[0] + step, spacing: step, first }),
        None => Ok((first, step)),
    }
}
