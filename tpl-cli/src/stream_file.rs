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
//! Reading: the file is read a block at a time and parsed as it comes, never held whole. A
//! stream whose rows come in bucket order (as `tpl simulate` writes it, or a logger appends
//! it) is counted into transitions as it is read ([`count_stream`]): memory is a few numbers
//! per user and per bucket plus the cells × cells counts, whatever the size of the file. Rows
//! in another order, and standard input or a pipe (which cannot be read twice), are held at
//! 2 bytes per (bucket, user) pair until the end.
//!
//! The one stream parser and writer (CSV through the `csv` crate, with a byte-level reader
//! for the rows of plain whole numbers), and the writer of counts files.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use tpl_core::{StepRange, TransitionCounts};

use crate::error::{CliError, Result};
use crate::limits::{MAX_CELLS, check_stream_cells};
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
}

impl Stream {
    /// Number of distinct cells.
    pub fn cells(&self) -> usize {
        self.cell_ids.len()
    }
}

/// True when the distinct cell ids `ids` (ascending, not empty) are exactly 0..k−1.
pub fn ids_are_indices(ids: &[u64]) -> bool {
    ids.last().is_some_and(|&m| m as usize == ids.len() - 1)
}

/// Reads a stream file (`-`: standard input); rows may come in any order, but every
/// (bucket, user) pair must appear exactly once. Errors name the file, line and value; more
/// than [`MAX_CELLS`] distinct cells are refused.
pub fn read_stream(path: &Path) -> Result<Stream> {
    held_stream(path, &mut *text::open(path)?)
}

/// Parses the text of a stream file; `path` names it in errors.
pub fn parse_stream(path: &Path, content: &str) -> Result<Stream> {
    held_stream(path, &mut content.as_bytes())
}

/// A stream read whole.
fn held_stream(path: &Path, input: &mut dyn Read) -> Result<Stream> {
    let mut held = Held::default();
    scan(path, input, |b, u, c, line| {
        held.row(b, u, c, line);
        Ok(true)
    })?;
    held.into_stream(path)
}

/// The transitions of a stream file, counted as it was read.
pub struct StreamCounts {
    /// The distinct cell ids of the file, ascending.
    pub cell_ids: Vec<u64>,
    /// The moves between cells (row i: `cell_ids[i]`); `None` past [`MAX_CELLS`] cells.
    counts: Option<TransitionCounts>,
    /// Number of users.
    pub users: usize,
    /// Number of steps (distinct buckets).
    pub steps: usize,
    /// The first bucket and the spacing of the buckets (1 when there is one bucket).
    pub buckets: (u64, u64),
}

impl StreamCounts {
    /// The counts of the moves within the step range asked for, indexed as `cell_ids`.
    ///
    /// # Errors
    /// More than [`MAX_CELLS`] distinct cells, naming the file `path`.
    pub fn counts(self, path: &Path) -> Result<TransitionCounts> {
        check_stream_cells(path, self.cell_ids.len())?;
        self.counts.map_or_else(|| TransitionCounts::new(self.cell_ids.len()).map_err(CliError::from), Ok)
    }
}

/// Reads a stream file (`-`: standard input) and counts the moves between consecutive steps
/// that both lie in `range` (numbered from 1; as [`TransitionCounts::from_steps`], and
/// whether the range lies within the stream is for the caller to check against
/// [`StreamCounts::steps`]). The same checks and errors as [`read_stream`], except that more
/// than [`MAX_CELLS`] cells are reported by [`StreamCounts::counts`].
pub fn count_stream(path: &Path, range: StepRange) -> Result<StreamCounts> {
    // Only a regular file can be read a second time (not standard input, nor a pipe such as
    // `--stream <(zcat s.csv.gz)`).
    let again = !text::is_stdin(path) && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if again {
        let mut sorted = InOrder::new(range);
        if scan(path, &mut *text::open(path)?, |b, u, c, line| sorted.row(b, u, c, line))? {
            return sorted.finish(path);
        }
    }
    // A row before an earlier bucket's: read again, holding every row.
    let mut held = Held::default();
    scan(path, &mut *text::open(path)?, |b, u, c, line| {
        held.row(b, u, c, line);
        Ok(true)
    })?;
    held.into_counts(path, range)
}

/// A cell as stored per (bucket, user): its position among the distinct cell ids in order of
/// first appearance.
type Cell = u16;

/// No row for this (bucket, user) yet.
const ABSENT: Cell = Cell::MAX;

/// Stored for every cell past the first [`MAX_CELLS`] (such a stream is refused).
const BEYOND: Cell = MAX_CELLS as Cell;

const _: () = assert!(MAX_CELLS < ABSENT as usize);

/// How a cell position is stored.
fn stored(position: usize) -> Cell {
    position.min(MAX_CELLS) as Cell
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

/// The first departure from a dense stream seen so far, in the order of (bucket, user) ids:
/// the first pair given twice (with the line of its second row) and the first pair missing.
#[derive(Default)]
struct Density {
    twice: Option<(u64, u64, usize)>,
    missing: Option<(u64, u64)>,
}

impl Density {
    fn twice(&mut self, bucket: u64, user: u64, line: usize) {
        if self.twice.is_none_or(|(b, u, _)| (bucket, user) < (b, u)) {
            self.twice = Some((bucket, user, line));
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
            (Some((b, u, line)), first) if first.is_none_or(|m| (b, u) < m) => {
                Err(CliError::parse(path, line, format!("user {u} appears twice in bucket {b}")))
            }
            (_, Some((b, u))) => Err(CliError::parse(
                path,
                0,
                format!("user {u} never appears in bucket {b}: a stream lists every user at every bucket"),
            )),
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
    fn count(&mut self, step: usize, from: &[Cell], to: &[Cell], cells: usize) -> Result<()> {
        if step < self.range.first().unwrap_or(1) || self.range.last().is_some_and(|last| step >= last) {
            return Ok(());
        }
        let needed = cells.min(MAX_CELLS);
        let counts = match self.counts.take() {
            None => TransitionCounts::new(needed)?,
            // Doubling keeps the copies a small multiple of the final table.
            Some(c) if c.n() < needed => {
                let n = needed.max((2 * c.n()).min(MAX_CELLS));
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
    ) -> Result<StreamCounts> {
        let (cell_ids, rank) = cells.sorted();
        let counts = if cell_ids.len() > MAX_CELLS {
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
struct InOrder {
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
    density: Density,
    moves: Moves,
}

impl InOrder {
    fn new(range: StepRange) -> Self {
        Self {
            users: Labels::default(),
            cells: Labels::default(),
            buckets: Vec::new(),
            previous: Vec::new(),
            current: Vec::new(),
            next_user: 0,
            first_users: 0,
            density: Density::default(),
            moves: Moves::new(range),
        }
    }

    /// Takes one row; false when it comes after a later bucket's row (the stream is then
    /// not in bucket order and must be read again).
    #[inline]
    fn row(&mut self, bucket: u64, user: u64, cell: u64, line: usize) -> Result<bool> {
        match self.buckets.last() {
            Some(&last) if bucket == last => {}
            Some(&last) if bucket < last => return Ok(false),
            Some(_) => {
                self.close()?;
                self.open(bucket);
            }
            None => self.open(bucket),
        }
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
            self.density.twice(bucket, user, line);
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
        self.moves.count(step - 1, &self.previous, &self.current, self.cells.ids.len())
    }

    fn finish(mut self, path: &Path) -> Result<StreamCounts> {
        if self.buckets.is_empty() {
            return Err(no_rows(path));
        }
        self.close()?;
        // A user first seen after the first bucket is missing there, before anything later.
        if let Some(&user) = self.users.ids[self.first_users..].iter().min() {
            self.density.missing(self.buckets[0], user);
        }
        let buckets = check_spacing(path, &self.buckets)?;
        self.density.check(path)?;
        self.moves.into_counts(&self.cells, self.users.ids.len(), self.buckets.len(), buckets)
    }
}

/// A stream held whole, its rows in any order: the cell of every (bucket, user) pair, by
/// bucket and user in order of first appearance.
#[derive(Default)]
struct Held {
    buckets: Labels,
    users: Labels,
    cells: Labels,
    rows: Vec<Vec<Cell>>,
    last_bucket: usize,
    next_user: usize,
    density: Density,
}

impl Held {
    #[inline]
    fn row(&mut self, bucket: u64, user: u64, cell: u64, line: usize) {
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
            self.density.twice(bucket, user, line);
        }
    }

    /// The checks of a whole stream; the bucket positions in ascending order of their ids,
    /// and the first bucket and spacing.
    fn check(&mut self, path: &Path) -> Result<(Vec<usize>, (u64, u64))> {
        if self.rows.is_empty() {
            return Err(no_rows(path));
        }
        let order = self.buckets.order();
        let ids: Vec<u64> = order.iter().map(|&b| self.buckets.ids[b]).collect();
        let buckets = check_spacing(path, &ids)?;
        for (&b, &id) in order.iter().zip(&ids) {
            self.density.check_bucket(id, &self.rows[b], &self.users.ids);
        }
        self.density.check(path)?;
        Ok((order, buckets))
    }

    fn into_counts(mut self, path: &Path, range: StepRange) -> Result<StreamCounts> {
        let (order, buckets) = self.check(path)?;
        let mut moves = Moves::new(range);
        for (t, pair) in order.windows(2).enumerate() {
            moves.count(t + 1, &self.rows[pair[0]], &self.rows[pair[1]], self.cells.ids.len())?;
        }
        moves.into_counts(&self.cells, self.users.ids.len(), order.len(), buckets)
    }

    fn into_stream(mut self, path: &Path) -> Result<Stream> {
        let (order, _) = self.check(path)?;
        let (cell_ids, cell_rank) = self.cells.sorted();
        check_stream_cells(path, cell_ids.len())?;
        let (_, user_rank) = self.users.sorted();
        let users = user_rank.len();
        let states = order
            .iter()
            .map(|&b| {
                let mut step = vec![0; users];
                for (u, &c) in self.rows[b].iter().enumerate() {
                    step[user_rank[u]] = cell_rank[c as usize];
                }
                step
            })
            .collect();
        Ok(Stream { states, cell_ids })
    }
}

/// The error of a stream without data rows.
fn no_rows(path: &Path) -> CliError {
    CliError::parse(path, 0, "no data rows (empty stream)")
}

/// Bytes read at a time.
const BLOCK: usize = 1 << 18;

/// Reads the stream file `input` (named `path` in errors) a block at a time and calls
/// `row(bucket, user, cell, line)` for each data row after the header, in file order; stops
/// when `row` returns false. Returns whether it read to the end. Lines are those of
/// [`text::for_each_csv_record_from`]; a row of three plain whole numbers is parsed in place, any
/// other line goes through the `csv` crate.
fn scan(
    path: &Path,
    input: &mut dyn Read,
    mut row: impl FnMut(u64, u64, u64, usize) -> Result<bool>,
) -> Result<bool> {
    let mut buf = vec![0u8; BLOCK];
    let (mut start, mut end, mut eof) = (0, 0, false);
    let mut line = 0;
    let mut header = false;
    let mut bom_checked = false;
    let mut bom = [0; 4];
    let bom = text::BOM.encode_utf8(&mut bom).as_bytes();
    loop {
        let data = &buf[start..end];
        if !bom_checked && (data.len() >= bom.len() || eof) {
            if let Some(rest) = data.strip_prefix(bom) {
                start = end - rest.len();
            }
            bom_checked = true;
            continue;
        }
        if header && let Some((values, used)) = plain_row(data) {
            line += 1;
            start += used;
            if !row(values[0], values[1], values[2], line)? {
                return Ok(false);
            }
            continue;
        }
        let newline = data.iter().position(|&b| b == b'\n');
        if !bom_checked || (newline.is_none() && !eof) {
            eof = refill(path, input, &mut buf, &mut start, &mut end)?;
            continue;
        }
        if data.is_empty() {
            return Ok(true);
        }
        let len = newline.map_or(data.len(), |i| i + 1);
        line += 1;
        if !other_line(path, line, &data[..len], &mut header, &mut row)? {
            return Ok(false);
        }
        start += len;
    }
}

/// Moves the unread bytes `buf[start..end]` to the front and reads more after them (the
/// buffer doubles when one line fills it); true at the end of the input.
fn refill(
    path: &Path,
    input: &mut dyn Read,
    buf: &mut Vec<u8>,
    start: &mut usize,
    end: &mut usize,
) -> Result<bool> {
    buf.copy_within(*start..*end, 0);
    *end -= *start;
    *start = 0;
    if *end == buf.len() {
        buf.resize(2 * buf.len(), 0);
    }
    loop {
        match input.read(&mut buf[*end..]) {
            Ok(0) => return Ok(true),
            Ok(k) => {
                *end += k;
                return Ok(false);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(CliError::Read { path: path.to_path_buf(), source }),
        }
    }
}

/// The row at the start of `data` when its line is three plain whole numbers (digits only,
/// each below 2⁶⁴, separated by commas, spaces or tabs around them) ended by `\n` or
/// `\r\n`: the numbers and the length of the line. `None` for any other line, or one that
/// does not end within `data`.
#[inline]
fn plain_row(data: &[u8]) -> Option<([u64; 3], usize)> {
    let blank = |b: u8| b == b' ' || b == b'\t';
    let mut i = 0;
    let mut values = [0u64; 3];
    for (k, value) in values.iter_mut().enumerate() {
        while data.get(i).copied().is_some_and(blank) {
            i += 1;
        }
        let digits = i;
        while let Some(&b) = data.get(i).filter(|b| b.is_ascii_digit()) {
            *value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            i += 1;
        }
        if i == digits {
            return None;
        }
        while data.get(i).copied().is_some_and(blank) {
            i += 1;
        }
        i += match (k, data.get(i), data.get(i + 1)) {
            (0 | 1, Some(b','), _) | (2, Some(b'\n'), _) => 1,
            (2, Some(b'\r'), Some(b'\n')) => 2,
            _ => return None,
        };
    }
    Some((values, i))
}

/// Any line but a plain row (`raw`, with its line end): the header, comments, blank lines,
/// quoted fields, and every error, through the `csv` crate as [`text::for_each_csv_record_from`]
/// reads a whole file. Returns false when `row` does.
fn other_line(
    path: &Path,
    line: usize,
    raw: &[u8],
    header: &mut bool,
    row: &mut impl FnMut(u64, u64, u64, usize) -> Result<bool>,
) -> Result<bool> {
    let content = std::str::from_utf8(raw).map_err(|e| {
        CliError::parse(path, line, format!("byte {} of the line is not UTF-8 text", e.valid_up_to() + 1))
    })?;
    let mut more = true;
    text::for_each_csv_record_from(path, content, line, |line, fields| {
        if !*header {
            if fields.iter().ne(COLUMNS) {
                let found = content.lines().next().unwrap_or_default().trim();
                let message = format!("the header must be {HEADER:?}, found {found:?}");
                return Err(CliError::parse(path, line, message));
            }
            *header = true;
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
        if more {
            more = row(v[0], v[1], v[2], line)?;
        }
        Ok(())
    })?;
    Ok(more)
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
    use proptest::prelude::*;

    /// A file of `text` in a fresh temporary folder (removed when dropped).
    struct File(#[allow(dead_code)] tempfile::TempDir, std::path::PathBuf);

    impl File {
        fn new(text: &[u8]) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.csv");
            std::fs::write(&path, text).unwrap();
            Self(dir, path)
        }
    }

    fn parse(text: &str) -> Result<Stream> {
        read_stream(&File::new(text.as_bytes()).1)
    }

    /// The first bucket and the spacing of the buckets.
    type Buckets = (u64, u64);

    /// A stream's counts, cell ids and buckets.
    type Counted = (TransitionCounts, Vec<u64>, Buckets);

    /// The counts, cell ids and buckets of `text` counted as read, or the error message.
    fn counted(text: &[u8], range: StepRange) -> std::result::Result<Counted, String> {
        counted_file(&File::new(text).1, range)
    }

    fn counted_file(path: &Path, range: StepRange) -> std::result::Result<Counted, String> {
        let c = count_stream(path, range).map_err(|e| e.to_string())?;
        let (ids, buckets) = (c.cell_ids.clone(), c.buckets);
        Ok((c.counts(path).map_err(|e| e.to_string())?, ids, buckets))
    }

    #[test]
    fn round_trip() {
        let states = vec![vec![0, 2], vec![1, 2]];
        let s = parse(&stream_text(&states)).unwrap();
        assert_eq!(s.states, states);
        assert_eq!(s.cell_ids, vec![0, 1, 2]);
        assert!(ids_are_indices(&s.cell_ids));
        let (counts, _, buckets) = counted(stream_text(&states).as_bytes(), StepRange::ALL).unwrap();
        assert_eq!((counts, buckets), (TransitionCounts::from_paths(3, &states).unwrap(), (0, 1)));
    }

    #[test]
    fn largest_ids_are_labels_not_sizes() {
        let max = u64::MAX;
        let s = parse(&format!("{HEADER}\n{max},{max},0\n")).unwrap();
        assert_eq!((s.states.clone(), s.cell_ids.clone()), (vec![vec![0]], vec![0]));
        assert_eq!(
            counted(format!("{HEADER}\n{max},{max},0\n").as_bytes(), StepRange::ALL).unwrap().2,
            (max, 1)
        );
        let text =
            format!("{HEADER}\n7,1000000000000,99999\n7,5,{}\n9,5,3\n9,1000000000000,99999\n", max - 1);
        let s = parse(&text).unwrap();
        assert_eq!(s.cell_ids, vec![3, 99999, max - 1]);
        // Users in id order: 5, then 10¹².
        assert_eq!(s.states, vec![vec![2, 1], vec![0, 1]]);
        assert!(!ids_are_indices(&s.cell_ids));
        let (counts, ids, buckets) = counted(text.as_bytes(), StepRange::ALL).unwrap();
        assert_eq!((ids, buckets), (s.cell_ids.clone(), (7, 2)));
        assert_eq!(counts, TransitionCounts::from_paths(3, &s.states).unwrap());
    }

    #[test]
    fn gaps_and_duplicates_are_named() {
        let e = parse(&format!("{HEADER}\n0,0,1\n0,2,1\n1,0,1\n")).err().unwrap().to_string();
        assert!(e.contains("user 2 never appears in bucket 1"), "{e}");
        let e = parse(&format!("{HEADER}\n0,0,1\n1,0,1\n3,0,1\n")).err().unwrap().to_string();
        assert!(e.contains("bucket 2 never appears"), "{e}");
        let e = parse(&format!("{HEADER}\n0,0,1\n0,0,1\n1,0,0\n1,1,0\n")).err().unwrap().to_string();
        assert!(e.contains(":3:") && e.contains("user 0 appears twice in bucket 0"), "{e}");
        let e = parse("t,u,c\n0,0,1\n").err().unwrap().to_string();
        assert!(e.contains(":1:"), "{e}");
        let e = parse(&format!("{HEADER}\n0,0,-1\n")).err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("\"-1\""), "{e}");
        let e = parse(&format!("{HEADER}\n0,0,18446744073709551616\n")).err().unwrap().to_string();
        assert!(e.contains(":2:") && e.contains("18446744073709551616"), "{e}");
        assert!(parse(&format!("{HEADER}\n")).is_err());
    }

    #[test]
    fn a_user_who_comes_late_is_missing_from_the_first_bucket() {
        // In bucket order, user 1 first shows up in bucket 2: missing from bucket 0, which
        // comes before bucket 1, where user 0 is missing too.
        let text = format!("{HEADER}\n0,0,0\n1,1,0\n2,0,0\n2,1,0\n");
        for e in
            [parse(&text).err().unwrap().to_string(), counted(text.as_bytes(), StepRange::ALL).unwrap_err()]
        {
            assert!(e.contains("user 1 never appears in bucket 0"), "{e}");
        }
        // A duplicate before the first missing pair is named first, with its second line.
        let text = format!("{HEADER}\n0,0,0\n0,0,1\n0,0,1\n1,0,0\n1,5,0\n0,5,0\n2,0,0\n");
        for e in
            [parse(&text).err().unwrap().to_string(), counted(text.as_bytes(), StepRange::ALL).unwrap_err()]
        {
            assert!(e.ends_with(":3: user 0 appears twice in bucket 0"), "{e}");
        }
    }

    #[test]
    fn a_line_past_the_read_block_and_a_file_without_a_last_line_end_are_read() {
        // One comment line longer than a block, then a last row with no line end.
        let long = format!("# {}\n", "x".repeat(3 * BLOCK));
        let text = format!("\u{feff}{HEADER}\r\n{long}0,0,1\r\n1,0,2");
        let s = parse(&text).unwrap();
        assert_eq!(s.states, vec![vec![0], vec![1]]);
        assert_eq!(counted(text.as_bytes(), StepRange::ALL).unwrap().1, vec![1, 2]);
        let e = counted(b"timestamp_bucket,user_id,location_cell\n0,0,\xff\n", StepRange::ALL).unwrap_err();
        assert!(e.ends_with(":2: byte 5 of the line is not UTF-8 text"), "{e}");
    }

    /// The stream parser as it was before streaming (the whole text, sorted rows): the
    /// reference the streaming reader must agree with, result and error.
    fn reference(path: &Path, text: &str) -> Result<(Vec<Vec<usize>>, Vec<u64>, Buckets)> {
        let text = text.strip_prefix(text::BOM).unwrap_or(text);
        let mut rows: Vec<(u64, u64, u64, usize)> = Vec::new();
        let mut header_seen = false;
        text::for_each_csv_record_from(path, text, 1, |line, fields| {
            if !header_seen {
                if fields.iter().ne(COLUMNS) {
                    let found = text.lines().nth(line - 1).unwrap_or_default().trim();
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
            return Err(no_rows(path));
        }
        let distinct = |key: fn(&(u64, u64, u64, usize)) -> u64| {
            let mut ids: Vec<u64> = rows.iter().map(key).collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        };
        let (bucket_ids, user_ids, cell_ids) = (distinct(|r| r.0), distinct(|r| r.1), distinct(|r| r.2));
        let buckets = check_spacing(path, &bucket_ids)?;
        let index = |ids: &[u64], id: u64| ids.binary_search(&id).unwrap_or_default();
        let mut dense: Vec<(usize, usize, usize, usize)> = rows
            .iter()
            .map(|&(b, u, c, line)| (index(&bucket_ids, b), index(&user_ids, u), index(&cell_ids, c), line))
            .collect();
        dense.sort_unstable_by_key(|&(t, u, _, line)| (t, u, line));
        let users = user_ids.len();
        let missing = |(t, u): (usize, usize)| {
            CliError::parse(
                path,
                0,
                format!(
                    "user {} never appears in bucket {}: a stream lists every user at every bucket",
                    user_ids[u], bucket_ids[t]
                ),
            )
        };
        for (k, &(t, u, _, line)) in dense.iter().enumerate() {
            let expected = (k / users, k % users);
            if (t, u) < expected {
                let message = format!("user {} appears twice in bucket {}", user_ids[u], bucket_ids[t]);
                return Err(CliError::parse(path, line, message));
            } else if (t, u) > expected {
                return Err(missing(expected));
            }
        }
        if !dense.len().is_multiple_of(users) {
            return Err(missing((dense.len() / users, dense.len() % users)));
        }
        if dense.len() / users < bucket_ids.len() {
            return Err(missing((dense.len() / users, 0)));
        }
        let states = dense.chunks(users).map(|step| step.iter().map(|r| r.2).collect()).collect();
        Ok((states, cell_ids, buckets))
    }

    /// How a stream file is written: the rows in bucket order or not, a byte-order mark or
    /// not, and the style of each line (spaces, signs, quotes, CRLF, comments, errors).
    #[derive(Debug, Clone)]
    struct Layout {
        sorted: bool,
        bom: bool,
        order: Vec<usize>,
        styles: Vec<u8>,
    }

    /// A stream file's text: every (bucket, user) row of `states`, some given twice (in
    /// another cell) and some dropped, laid out as `layout` says.
    fn stream_file(
        ids: (u64, u64, &[u64], &[u64]),
        states: &[Vec<usize>],
        edits: (Vec<usize>, Vec<usize>),
        layout: &Layout,
    ) -> String {
        let (first, spacing, users, cells) = ids;
        let mut rows: Vec<(u64, u64, u64)> = Vec::new();
        for (t, step) in states.iter().enumerate() {
            for (u, &c) in step.iter().enumerate() {
                rows.push((first + spacing * t as u64, users[u], cells[c]));
            }
        }
        let (drops, twice) = edits;
        for k in twice {
            let (b, u, c) = rows[k % rows.len()];
            let other = cells.iter().position(|&id| id == c).map_or(0, |i| (i + 1) % cells.len());
            rows.push((b, u, cells[other]));
        }
        for k in drops {
            if rows.len() > 1 {
                rows.remove(k % rows.len());
            }
        }
        let mut rows: Vec<(u64, u64, u64)> =
            layout.order.iter().filter(|&&i| i < rows.len()).map(|&i| rows[i]).collect();
        if layout.sorted {
            rows.sort_by_key(|r| r.0);
        }
        let mut text = String::from(if layout.bom { "\u{feff}" } else { "" });
        text.push_str(HEADER);
        text.push('\n');
        for (k, &(b, u, c)) in rows.iter().enumerate() {
            let line = match layout.styles.get(k).copied().unwrap_or(0) {
                1 => format!(" {b} ,\t{u},{c} \r\n"),
                2 => format!("+{b},{u},{c}\n"),
                3 => format!("{b},\"{u}\",{c}\n"),
                4 => format!("# a comment\n\n   \n{b},{u},{c}\n"),
                5 => format!("{b},{u},{c},\n"),
                6 => format!("{b},{u}x,{c}\n"),
                _ => format!("{b},{u},{c}\n"),
            };
            text.push_str(&line);
        }
        text
    }

    /// Streams of up to 5 buckets, 3 users and 4 cells, ids from both ends of the range, up
    /// to 3 rows dropped and 2 given twice, laid out in every way.
    fn streams() -> impl Strategy<Value = String> {
        (1usize..6, 1usize..4, 1usize..5).prop_flat_map(|(steps, users, cells)| {
            let states = prop::collection::vec(prop::collection::vec(0..cells, users), steps);
            let ids = (
                prop::sample::select(vec![0u64, 7, u64::MAX - 40]),
                prop::sample::select(vec![1u64, 3]),
                prop::sample::subsequence(vec![0u64, 1, 2, 5, 1_000_000_000_000, u64::MAX], users)
                    .prop_shuffle(),
                prop::sample::subsequence(vec![0u64, 1, 2, 3, 99_999, u64::MAX - 1], cells),
            );
            let rows = steps * users + 2;
            let edit = |most: usize| prop_oneof![Just(Vec::new()), prop::collection::vec(0..rows, 1..=most)];
            let edits = (edit(3), edit(2));
            // Mostly plain rows; one in 50 lines a malformed one.
            let style = prop_oneof![40 => Just(0u8), 8 => 1u8..5, 2 => 5u8..7];
            let styles = prop::collection::vec(style, rows);
            let layout =
                (any::<bool>(), prop::bool::weighted(0.2), Just((0..rows).collect()).prop_shuffle(), styles)
                    .prop_map(|(sorted, bom, order, styles)| Layout { sorted, bom, order, styles });
            (states, ids, edits, layout).prop_map(|(states, ids, edits, layout)| {
                let (first, spacing, users, cells): (u64, u64, Vec<u64>, Vec<u64>) = ids;
                let states: Vec<Vec<usize>> = states;
                stream_file((first, spacing, &users, &cells), &states, edits, &layout)
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

        /// Read as it comes, a stream gives the states, cells and errors of the whole-text
        /// parser, and its counts in any step range are those of the states.
        #[test]
        fn reading_as_it_comes_agrees_with_the_whole_text_parser(
            text in streams(),
            a in 1usize..7,
            b in 1usize..7,
            open in 0usize..4,
        ) {
            let file = File::new(text.as_bytes());
            let expected = reference(&file.1, &text).map_err(|e| e.to_string());
            let held = read_stream(&file.1).map(|s| (s.states, s.cell_ids)).map_err(|e| e.to_string());
            prop_assert_eq!(held, expected.clone().map(|(s, c, _)| (s, c)));
            let (a, b) = (a.min(b), a.max(b));
            let range = StepRange::new((open & 1 == 0).then_some(a), (open & 2 == 0).then_some(b)).unwrap();
            let got = counted_file(&file.1, range);
            match expected {
                Err(e) => prop_assert_eq!(got.unwrap_err(), e),
                Ok((states, cells, buckets)) => {
                    let (counts, ids, got_buckets) = got.unwrap();
                    prop_assert_eq!((ids, got_buckets), (cells.clone(), buckets));
                    if let Ok(steps) = range.resolve(states.len()) {
                        prop_assert_eq!(counts, TransitionCounts::from_steps(cells.len(), &states, steps).unwrap());
                    }
                }
            }
        }
    }
}
