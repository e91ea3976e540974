//! Rows as a background value and the few entries that differ from it, and the pairs of such
//! rows in a few numbers each ([`docs/model.md`](crate::guide::model) §3, "Rows with few
//! distinct entries").
//!
//! City-sized grids have rows with a handful of non-zero entries; Laplacian smoothing
//! ((p + s)/(1 + n·s), TKDE eq. 28) lifts every other entry of a row to one common value. For
//! two such rows q and d, every state outside both rows' exceptions has the same pair
//! (q_i, d_i) = (base_q, base_d). The loss of the pair depends only on the multiset of its
//! states' pairs, and states with the same ratio q_i/d_i are together in or out of every
//! optimal set (Theorem 8: the optimum is a prefix by ratio, and states tied in ratio change
//! nothing when moved together), so those states act as one [`Bulk`] state with m times their
//! masses. A pair then costs O(k) for k exceptions instead of O(n), and every algorithm of
//! the crate runs on the pair's k explicit states plus its bulk.
//!
//! Rounding: the bulk enters every sum as m times one state's term, which is one rounding
//! where the sum of m equal terms would have had m − 1; the bounds of
//! [`crate::support`] are stated for the matrix's n states and hold as they are.

use crate::matrix::{Form, TransitionMatrix};
use crate::row::Row;

/// A matrix is handled by its structure when its rows have, on average, at most one
/// exception in this many entries (and it is at least [`MIN_STATES`] states wide).
const SPARSITY: usize = 16;

/// Below this many states the dense algorithms are as fast and the structure is not looked
/// for.
const MIN_STATES: usize = 64;

/// The `m` states of a pair outside both rows' exceptions, each with (q_i, d_i) = (`q`, `d`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Bulk {
    /// m, as a double (exact: m ≤ n < 2⁵³).
    pub(crate) count: f64,
    /// q_i of each of them.
    pub(crate) q: f64,
    /// d_i of each of them.
    pub(crate) d: f64,
}

impl Bulk {
    /// No bulk: the pair's states are all explicit (a dense pair).
    pub(crate) const NONE: Bulk = Bulk { count: 0.0, q: 0.0, d: 0.0 };

    /// Whether the bulk has states with q_i > d_i (it then belongs to a pair's chain).
    pub(crate) fn gains(&self) -> bool {
        self.count > 0.0 && self.q > self.d
    }

    /// Its share of the support function, m·((q − d) − σ d)⁺, computed as one state's term
    /// (as [`crate::support`] computes every term) times m.
    pub(crate) fn support(&self, sigma: f64) -> f64 {
        let t = (self.q - self.d) - sigma * self.d;
        if t > 0.0 { self.count * t } else { 0.0 }
    }

    /// Its masses (m·d, m·(q − d)) as a set's sums.
    pub(crate) fn masses(&self) -> (f64, f64) {
        (self.count * self.d, self.count * (self.q - self.d))
    }
}

/// The rows of an n×n matrix as row j = `base[j]` everywhere except at the columns
/// `cols[start[j]..start[j + 1]]` (ascending), whose entries are `vals[…]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowStructure {
    n: usize,
    base: Vec<f64>,
    start: Vec<usize>,
    cols: Vec<u32>,
    vals: Vec<f64>,
}

impl RowStructure {
    /// The structure of `matrix` when it pays: at least [`MIN_STATES`] states and on
    /// average at most one entry in [`SPARSITY`] that differs from its row's smallest entry.
    /// O(n²), and it gives up as soon as the exceptions are too many.
    pub(crate) fn detect(matrix: &TransitionMatrix) -> Option<Self> {
        Self::build(matrix, Self::limit(matrix.n())?)
    }

    /// The most exceptions in all for which the structure of n×n rows pays: n²/[`SPARSITY`]
    /// from [`MIN_STATES`] states on (None below, and past 2³² states, whose columns do not
    /// fit the structure).
    fn limit(n: usize) -> Option<usize> {
        if n < MIN_STATES || n > u32::MAX as usize {
            return None;
        }
        n.checked_mul(n).map(|n2| n2 / SPARSITY)
    }

    /// Whether the loss algorithms read these rows by their structure: exactly when
    /// [`RowStructure::detect`] finds it in the dense matrix of the same entries (for a
    /// structure whose bases are the rows' smallest entries, as a sparse matrix keeps them).
    pub(crate) fn pays(&self) -> bool {
        Self::limit(self.n).is_some_and(|limit| self.cols.len() <= limit)
    }

    /// The structure of `matrix` with no size or sparsity condition (for the tests, which
    /// check the structured algorithms against the dense ones on small matrices).
    #[cfg(test)]
    pub(crate) fn of(matrix: &TransitionMatrix) -> Self {
        Self::build(matrix, usize::MAX).expect("no limit on the exceptions")
    }

    /// Each row's smallest entry as its base; None past `limit` exceptions in all (a sparse
    /// matrix gives its own structure, whatever the limit).
    fn build(matrix: &TransitionMatrix, limit: usize) -> Option<Self> {
        let n = matrix.n();
        let Some(data) = matrix.dense_entries() else {
            return matrix.sparse_structure().cloned();
        };
        let (mut base, mut start, mut cols, mut vals) =
            (Vec::with_capacity(n), Vec::with_capacity(n + 1), Vec::new(), Vec::new());
        start.push(0);
        for row in data.chunks(n) {
            let b = row.iter().copied().fold(f64::INFINITY, f64::min);
            for (i, &v) in row.iter().enumerate() {
                if v != b {
                    if cols.len() == limit {
                        return None;
                    }
                    cols.push(i as u32);
                    vals.push(v);
                }
            }
            base.push(b);
            start.push(cols.len());
        }
        Some(Self { n, base, start, cols, vals })
    }

    /// The structure of an n×n matrix given by its non-zero entries (row, column, value),
    /// sorted by row and column, each once: each row's base is 0 when some column is
    /// missing, else its smallest entry (the others being its exceptions).
    pub(crate) fn from_sorted_entries(n: usize, entries: &[(usize, usize, f64)]) -> Self {
        let (mut base, mut start, mut cols, mut vals) =
            (Vec::with_capacity(n), Vec::with_capacity(n + 1), Vec::with_capacity(entries.len()), Vec::new());
        start.push(0);
        let mut rest = entries;
        for j in 0..n {
            let len = rest.iter().take_while(|e| e.0 == j).count();
            let (row, after) = rest.split_at(len);
            rest = after;
            let b = if len == n { row.iter().map(|e| e.2).fold(f64::INFINITY, f64::min) } else { 0.0 };
            for &(_, i, v) in row.iter().filter(|e| e.2 != b) {
                cols.push(i as u32);
                vals.push(v);
            }
            base.push(b);
            start.push(cols.len());
        }
        vals.shrink_to_fit();
        Self { n, base, start, cols, vals }
    }

    /// The structure of given bases and exceptions (row, column, value), sorted by row and
    /// column, each value above its row's base (checked by the caller).
    pub(crate) fn from_parts(n: usize, base: Vec<f64>, entries: &[(usize, usize, f64)]) -> Self {
        let mut start = Vec::with_capacity(n + 1);
        start.push(0);
        let mut rest = entries;
        for j in 0..n {
            let len = rest.iter().take_while(|e| e.0 == j).count();
            rest = &rest[len..];
            start.push(start[j] + len);
        }
        let cols = entries.iter().map(|e| e.1 as u32).collect();
        let vals = entries.iter().map(|e| e.2).collect();
        Self { n, base, start, cols, vals }
    }

    /// The same structure with every row mapped by `f(base, exceptions)`, which returns the
    /// row's new base and rewrites its exceptions in place; exceptions that become equal to
    /// the base are dropped. A row for which `f` fails stops the mapping with its error.
    pub(crate) fn map_rows<E>(
        &self,
        mut f: impl FnMut(usize, f64, &mut [f64]) -> Result<f64, E>,
    ) -> Result<Self, E> {
        let mut out = self.clone();
        out.cols.clear();
        out.vals.clear();
        out.start.clear();
        out.start.push(0);
        let mut scratch = Vec::new();
        for j in 0..self.n {
            let (cols, vals) = self.exceptions(j);
            scratch.clear();
            scratch.extend_from_slice(vals);
            let b = f(j, self.base[j], &mut scratch)?;
            for (&c, &v) in cols.iter().zip(&scratch) {
                if v != b {
                    out.cols.push(c);
                    out.vals.push(v);
                }
            }
            out.base[j] = b;
            out.start.push(out.cols.len());
        }
        Ok(out)
    }

    /// Number of states n.
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// Row j as a [`Row`].
    pub(crate) fn row(&self, j: usize) -> Row<'_> {
        let (cols, vals) = self.exceptions(j);
        Row::sparse(self.n, &self.base[j], cols, vals)
    }

    /// Σ f(p) over row j's n entries, as [`crate::matrix::row_total`] sums a row: its
    /// exceptions, then f(base) times the other columns.
    pub(crate) fn row_total(&self, j: usize, f: impl Fn(f64) -> f64) -> f64 {
        let (cols, vals) = self.exceptions(j);
        crate::matrix::row_total(vals.iter().copied(), self.base[j], self.n - cols.len(), f)
    }

    /// The exceptions of row j: columns ascending and their entries.
    fn exceptions(&self, j: usize) -> (&[u32], &[f64]) {
        let range = self.start[j]..self.start[j + 1];
        (&self.cols[range.clone()], &self.vals[range])
    }

    /// The largest entry of row j.
    pub(crate) fn row_max(&self, j: usize) -> f64 {
        let (cols, vals) = self.exceptions(j);
        let base = if cols.len() < self.n { self.base[j] } else { 0.0 };
        vals.iter().copied().fold(base, f64::max)
    }

    /// The smallest positive entry of row j (∞ for none).
    pub(crate) fn row_min_positive(&self, j: usize) -> f64 {
        let (cols, vals) = self.exceptions(j);
        let base = self.base[j];
        let from_base = if cols.len() < self.n && base > 0.0 { base } else { f64::INFINITY };
        vals.iter().copied().filter(|&v| v > 0.0).fold(from_base, f64::min)
    }

    /// The pair (q = row a, d = row b): its explicit states (the union of both rows'
    /// exceptions, in `buf`) and its bulk.
    pub(crate) fn pair<'b>(&self, a: usize, b: usize, buf: &'b mut PairBuf) -> (&'b [f64], &'b [f64], Bulk) {
        buf.q.clear();
        buf.d.clear();
        let (ca, va) = self.exceptions(a);
        let (cb, vb) = self.exceptions(b);
        let (base_a, base_b) = (self.base[a], self.base[b]);
        let (mut i, mut j) = (0, 0);
        while i < ca.len() || j < cb.len() {
            let (col_a, col_b) =
                (ca.get(i).copied().unwrap_or(u32::MAX), cb.get(j).copied().unwrap_or(u32::MAX));
            let col = col_a.min(col_b);
            buf.q.push(if col_a == col { va[i] } else { base_a });
            buf.d.push(if col_b == col { vb[j] } else { base_b });
            i += usize::from(col_a == col);
            j += usize::from(col_b == col);
        }
        let count = (self.n - buf.q.len()) as f64;
        (&buf.q, &buf.d, Bulk { count, q: base_a, d: base_b })
    }
}

/// Pairs of rows that are the same pair in all but the order of their states.
///
/// Rows are of one *type* when they have the same base and the same multiset of exceptions
/// (a grid has a handful: inner cells, edges, corners). When the exceptions of rows a and b
/// sit in different columns, the pair (a, b) has the states (exception of a, base of b),
/// (base of a, exception of b) and the bulk: it depends on the types of a and b only. Of all
/// such pairs of two given types, the scans need the first one alone; the others would add
/// the same candidates, summed in another order ([`docs/model.md`](crate::guide::model) §3).
/// Pairs whose exceptions share a column (neighbouring cells) are scanned one by one.
#[derive(Debug, Clone)]
pub(crate) struct PairClasses {
    n: usize,
    /// For each row, the rows whose exceptions share a column with its own, ascending.
    overlaps: Vec<Vec<u32>>,
    /// For each pair of types (ta·count + tb), the first pair a·n + b of those types with
    /// exceptions in different columns (`u64::MAX`: none).
    first: Vec<u64>,
}

/// At most this many row types: the table of first pairs has the square of it.
const MAX_TYPES: usize = 1024;

/// At most this many overlapping rows per row on average.
const MAX_OVERLAPS: usize = 256;

impl PairClasses {
    /// The classes of `rows`, when they are few: None past [`MAX_TYPES`] row types or
    /// [`MAX_OVERLAPS`] overlapping rows per row, where the table would cost more than it
    /// saves.
    pub(crate) fn new(rows: &RowStructure) -> Option<Self> {
        let n = rows.n;
        let mut ids: std::collections::HashMap<Vec<u64>, u32> = std::collections::HashMap::new();
        let mut types = Vec::with_capacity(n);
        for j in 0..n {
            let (_, vals) = rows.exceptions(j);
            let mut key: Vec<u64> = vals.iter().map(|v| v.to_bits()).collect();
            key.sort_unstable();
            key.push(rows.base[j].to_bits());
            let next = ids.len() as u32;
            types.push(*ids.entry(key).or_insert(next));
            if ids.len() > MAX_TYPES {
                return None;
            }
        }
        let count = ids.len();
        let mut in_column: Vec<Vec<u32>> = vec![Vec::new(); n];
        for j in 0..n {
            rows.exceptions(j).0.iter().for_each(|&c| in_column[c as usize].push(j as u32));
        }
        let (mut overlaps, mut total) = (Vec::with_capacity(n), 0);
        for j in 0..n {
            let mut near: Vec<u32> =
                rows.exceptions(j).0.iter().flat_map(|&c| in_column[c as usize].iter().copied()).collect();
            near.sort_unstable();
            near.dedup();
            total += near.len();
            if total > MAX_OVERLAPS * n {
                return None;
            }
            overlaps.push(near);
        }
        // The first pair of each pair of types: for type ta, its first row a that has, for
        // type tb, a row b ≠ a of that type whose exceptions are apart from a's; rows of one
        // type ascending, so the first such a gives the smallest a·n + b.
        let mut of_type: Vec<Vec<u32>> = vec![Vec::new(); count];
        types.iter().enumerate().for_each(|(j, &t)| of_type[t as usize].push(j as u32));
        let mut first = vec![u64::MAX; count * count];
        for ta in 0..count {
            let mut open: Vec<usize> = (0..count).collect();
            for &a in &of_type[ta] {
                let a = a as usize;
                open.retain(|&tb| {
                    let apart = of_type[tb]
                        .iter()
                        .map(|&b| b as usize)
                        .find(|&b| b != a && overlaps[a].binary_search(&(b as u32)).is_err());
                    match apart {
                        Some(b) => {
                            first[ta * count + tb] = (a * n + b) as u64;
                            false
                        }
                        None => true,
                    }
                });
                if open.is_empty() {
                    break;
                }
            }
        }
        Some(Self { n, overlaps, first })
    }

    /// The ordered pairs a·n + b the set-ups scan, ascending: every pair of distinct rows
    /// whose exceptions share a column, and the first pair of each pair of types.
    pub(crate) fn pairs_to_scan(&self) -> Vec<usize> {
        let near = self.overlaps.iter().enumerate().flat_map(|(a, near)| {
            near.iter().map(|&b| b as usize).filter(move |&b| b != a).map(move |b| a * self.n + b)
        });
        let firsts = self.first.iter().filter(|&&p| p != u64::MAX).map(|&p| p as usize);
        let mut pairs: Vec<usize> = near.chain(firsts).collect();
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }
}

/// Where the scans read the pairs of rows: the dense rows, or their [`RowStructure`] (each
/// pair as its explicit states and its bulk) with the classes of repeated pairs, if any.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'m> {
    Dense { data: &'m [f64], n: usize },
    Structured(&'m RowStructure, Option<&'m PairClasses>),
}

impl<'m> Rows<'m> {
    /// The rows of `form`, with `classes` for a structured one.
    pub(crate) fn new(form: &'m Form<'_>, classes: Option<&'m PairClasses>) -> Self {
        match form {
            Form::Dense(data) => Rows::Dense { data, n: data.len().isqrt() },
            Form::Structured(rows) => Rows::Structured(rows, classes),
        }
    }

    /// Number of states n.
    pub(crate) fn n(self) -> usize {
        match self {
            Rows::Dense { n, .. } => n,
            Rows::Structured(rows, _) => rows.n,
        }
    }

    /// Dense row j.
    fn dense_row(data: &'m [f64], n: usize, j: usize) -> &'m [f64] {
        &data[j * n..(j + 1) * n]
    }

    /// The pair (q = row a, d = row b), in `buf` when it has to be assembled.
    pub(crate) fn pair<'b>(self, a: usize, b: usize, buf: &'b mut PairBuf) -> (&'b [f64], &'b [f64], Bulk)
    where
        'm: 'b,
    {
        match self {
            Rows::Dense { data, n } => (Self::dense_row(data, n, a), Self::dense_row(data, n, b), Bulk::NONE),
            Rows::Structured(rows, _) => rows.pair(a, b, buf),
        }
    }

    /// The ordered pairs a·n + b a scan visits: those [`PairClasses::pairs_to_scan`] gives,
    /// or all n² of them.
    pub(crate) fn pairs(self) -> PairList {
        match self {
            Rows::Structured(_, Some(classes)) => PairList::Listed(classes.pairs_to_scan()),
            _ => PairList::All(self.n() * self.n()),
        }
    }

    /// max_i of row j, and its smallest positive entry (∞ for none).
    pub(crate) fn extremes(self, j: usize) -> (f64, f64) {
        match self {
            Rows::Dense { data, n } => {
                let r = Self::dense_row(data, n, j);
                (
                    r.iter().copied().fold(0.0, f64::max),
                    r.iter().copied().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min),
                )
            }
            Rows::Structured(rows, _) => (rows.row_max(j), rows.row_min_positive(j)),
        }
    }
}

/// The ordered pairs a·n + b a scan visits, ascending.
pub(crate) enum PairList {
    /// All pairs 0..N.
    All(usize),
    /// These.
    Listed(Vec<usize>),
}

impl PairList {
    /// Number of pairs.
    pub(crate) fn len(&self) -> usize {
        match self {
            PairList::All(total) => *total,
            PairList::Listed(pairs) => pairs.len(),
        }
    }

    /// The k-th pair.
    pub(crate) fn get(&self, k: usize) -> usize {
        match self {
            PairList::All(_) => k,
            PairList::Listed(pairs) => pairs[k],
        }
    }
}

/// Scratch space of [`RowStructure::pair`], reused across pairs.
#[derive(Debug, Default)]
pub(crate) struct PairBuf {
    q: Vec<f64>,
    d: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_expands_back_to_its_rows() {
        let m = TransitionMatrix::new(vec![
            vec![0.1, 0.1, 0.6, 0.1, 0.1],
            vec![0.05, 0.05, 0.05, 0.05, 0.8],
            vec![0.2, 0.2, 0.2, 0.2, 0.2],
            vec![0.0, 0.5, 0.0, 0.5, 0.0],
            vec![0.0, 0.0, 0.0, 0.0, 1.0],
        ])
        .unwrap();
        let rows = RowStructure::of(&m);
        let mut buf = PairBuf::default();
        for a in 0..5 {
            assert_eq!(rows.row_max(a), m.row(a).iter().copied().fold(0.0, f64::max));
            let positive = m.row(a).iter().copied().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min);
            assert_eq!(rows.row_min_positive(a), positive);
            for b in 0..5 {
                let (q, d, bulk) = rows.pair(a, b, &mut buf);
                // The multiset of (q_i, d_i) of the pair: explicit ones plus m bulk copies.
                let mut got: Vec<(f64, f64)> = q.iter().copied().zip(d.iter().copied()).collect();
                got.extend(std::iter::repeat_n((bulk.q, bulk.d), bulk.count as usize));
                let mut want: Vec<(f64, f64)> =
                    m.row(a).iter().copied().zip(m.row(b).iter().copied()).collect();
                let key = |v: &(f64, f64)| (v.0.to_bits(), v.1.to_bits());
                got.sort_unstable_by_key(key);
                want.sort_unstable_by_key(key);
                assert_eq!(got, want, "pair ({a}, {b})");
            }
        }
    }

    #[test]
    fn pairs_of_far_apart_rows_of_the_same_types_repeat_the_first() {
        // A ring of 8 cells: stay 0.5, a quarter to each neighbour; one type.
        let n = 8;
        let rows = (0..n)
            .map(|i| {
                let mut r = vec![0.0; n];
                r[i] = 0.5;
                r[(i + 1) % n] = 0.25;
                r[(i + n - 1) % n] = 0.25;
                r
            })
            .collect();
        let m = TransitionMatrix::new(rows).unwrap();
        let structure = RowStructure::of(&m);
        let scanned = PairClasses::new(&structure).unwrap().pairs_to_scan();
        // Rows within two cells share a column: all scanned. Of the far pairs (one type of
        // row, so one class), the first, (0, 3), alone: 8 × 4 + 1 pairs.
        assert_eq!(scanned.len(), 8 * 4 + 1);
        for (a, b) in [(0, 1), (0, 2), (3, 1), (7, 0), (0, 6), (0, 3)] {
            assert!(scanned.contains(&(a * n + b)), "({a}, {b}) is scanned");
        }
        let mut buf = PairBuf::default();
        let sorted = |(q, d, bulk): (&[f64], &[f64], Bulk)| {
            let mut v: Vec<(u64, u64)> = q.iter().zip(d).map(|(a, b)| (a.to_bits(), b.to_bits())).collect();
            v.sort_unstable();
            (v, bulk)
        };
        let first = sorted(structure.pair(0, 3, &mut buf));
        // Every far pair left out is the first one, its states in another order.
        for (a, b) in [(0, 4), (0, 5), (1, 4), (2, 7), (5, 1)] {
            assert!(!scanned.contains(&(a * n + b)), "({a}, {b}) is left out");
            assert_eq!(sorted(structure.pair(a, b, &mut buf)), first, "({a}, {b})");
        }
    }

    #[test]
    fn dense_random_rows_are_not_worth_a_structure() {
        let rows =
            (0..80).map(|i| (0..80).map(|j| 1.0 + ((i * 31 + j * 17) % 97) as f64).collect()).collect();
        assert!(RowStructure::detect(&TransitionMatrix::normalized(rows).unwrap()).is_none());
        let grid = TransitionMatrix::smoothed_identity(80, 1e-3).unwrap();
        let rows = RowStructure::detect(&grid).expect("one exception per row");
        assert_eq!(rows.cols.len(), 80);
        assert!(RowStructure::detect(&TransitionMatrix::smoothed_identity(10, 1e-3).unwrap()).is_none());
    }

    #[test]
    fn the_bulk_counts_as_m_states() {
        let bulk = Bulk { count: 3.0, q: 0.25, d: 0.125 };
        assert!(bulk.gains());
        assert_eq!(bulk.support(0.5), 3.0 * (0.125 - 0.0625));
        assert_eq!(bulk.support(1.0), 0.0);
        assert_eq!(bulk.masses(), (0.375, 0.375));
        assert!(!Bulk::NONE.gains());
        assert_eq!(Bulk::NONE.support(0.0), 0.0);
    }
}
