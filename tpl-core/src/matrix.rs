//! Validated row-stochastic transition matrices (the adversary's knowledge of temporal
//! correlation, TKDE paper §2.2) and the Laplacian smoothing of TKDE eq. (28).

use std::borrow::Cow;

use crate::envelope::pow2;
use crate::error::{CoreError, Result};
use crate::row::Row;
use crate::structure::RowStructure;

/// How far a row sum may be from 1 before a matrix is rejected.
pub const ROW_SUM_TOLERANCE: f64 = 1e-9;

/// An n×n row-stochastic matrix: square, n ≥ 1, finite non-negative entries, every row
/// summing to 1 within [`ROW_SUM_TOLERANCE`].
///
/// Orientation follows the TKDE paper: in a backward matrix P_B, row j is
/// Pr(value at t−1 = · | value at t = j); in a forward matrix P_F, row j is
/// Pr(value at t = · | value at t−1 = j). The leakage only depends on the set of rows.
///
/// Entries are stored as given (no silent rescaling); use [`TransitionMatrix::normalized`]
/// to rescale rows explicitly.
///
/// **Dense or sparse.** A matrix built from its rows ([`TransitionMatrix::new`]) holds n²
/// numbers; one built from its non-zero entries ([`TransitionMatrix::from_entries`]) holds,
/// for each row, a base value and the entries that differ from it, and stays that way
/// through [`TransitionMatrix::smoothed`] (the smoothing's common value becomes the base).
/// Every algorithm of the workspace takes either; on a sparse matrix the loss functions cost
/// O(k) per pair of rows with k entries, not O(n) ([`docs/model.md`](crate::guide::model)
/// §3). [`TransitionMatrix::row`] reads a row of either kind.
///
/// ```
/// use tpl_core::TransitionMatrix;
/// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
/// assert_eq!(p.n(), 2);
/// assert!(TransitionMatrix::new(vec![vec![0.5, 0.4], vec![0.0, 1.0]]).is_err());
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TransitionMatrix {
    n: usize,
    storage: Storage,
}

/// How a matrix holds its entries.
#[derive(Debug, Clone, PartialEq)]
enum Storage {
    /// Row-major entries, `n * n` of them.
    Dense(Vec<f64>),
    /// Each row as a base value and its exceptions.
    Sparse(RowStructure),
}

/// Σ f(p) over the entries p of one row, in the one order both storages share: f of the
/// entries other than the row's smallest, `rest`, in column order, then f(`low`) times
/// `count`, the number of columns that hold the smallest entry. A sparse row is stored that
/// way (its exceptions above its base), and a dense row is read that way
/// ([`dense_row_total`]), so a sparse matrix and its dense twin get the same bits from every
/// row sum — of the entries, of their smoothing terms (eq. 28), of their rescaled values —
/// and with them the same entries. Summing a dense row in column order instead puts the
/// base's terms among the others and rounds differently: a few ulps, enough for budgets
/// allocated from one form to exceed α when audited with the other
/// ([`docs/model.md`](crate::guide::model) §8, "One answer per matrix").
pub(crate) fn row_total(
    rest: impl Iterator<Item = f64>,
    low: f64,
    count: usize,
    f: impl Fn(f64) -> f64,
) -> f64 {
    rest.map(&f).sum::<f64>() + count as f64 * f(low)
}

/// [`row_total`] of a row given as its n ≥ 1 entries.
fn dense_row_total(row: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let low = row.iter().copied().fold(f64::INFINITY, f64::min);
    let count = row.iter().filter(|&&p| p == low).count();
    row_total(row.iter().copied().filter(|&p| p != low), low, count, f)
}

/// How the loss algorithms read a matrix's rows ([`TransitionMatrix::form`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Form<'a> {
    /// The n² entries row after row.
    Dense(Cow<'a, [f64]>),
    /// Each row as a base value and its exceptions.
    Structured(Cow<'a, RowStructure>),
}

impl Form<'_> {
    /// The same form, owning what it holds (for an evaluator that keeps it).
    pub(crate) fn into_owned(self) -> Form<'static> {
        match self {
            Form::Dense(data) => Form::Dense(Cow::Owned(data.into_owned())),
            Form::Structured(rows) => Form::Structured(Cow::Owned(rows.into_owned())),
        }
    }
}

/// Two matrices are equal when they have the same entries, however they store them.
impl PartialEq for TransitionMatrix {
    fn eq(&self, other: &Self) -> bool {
        match (&self.storage, &other.storage) {
            (Storage::Dense(a), Storage::Dense(b)) => self.n == other.n && a == b,
            (Storage::Sparse(a), Storage::Sparse(b)) if a == b => true,
            _ => self.n == other.n && self.rows().zip(other.rows()).all(|(a, b)| a == b),
        }
    }
}

/// Serialised as its list of rows, the JSON matrix format of
/// [`docs/formats.md`](crate::guide::formats).
#[cfg(feature = "serde")]
impl serde::Serialize for TransitionMatrix {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.rows())
    }
}

impl TransitionMatrix {
    /// Validates `rows` as a row-stochastic matrix.
    ///
    /// # Errors
    /// [`CoreError::EmptyMatrix`], [`CoreError::NotSquare`], [`CoreError::BadEntry`] or
    /// [`CoreError::RowSum`], naming the first offending row (and column), 1-based.
    pub fn new(rows: Vec<Vec<f64>>) -> Result<Self> {
        let m = Self::checked_entries(rows)?;
        m.check_row_sums()?;
        Ok(m)
    }

    /// Every row sums to 1 within [`ROW_SUM_TOLERANCE`] (summed by [`row_total`], so that a
    /// sparse matrix and its dense twin pass or fail alike).
    fn check_row_sums(&self) -> Result<()> {
        for j in 0..self.n {
            let sum = match &self.storage {
                Storage::Dense(data) => dense_row_total(&data[j * self.n..(j + 1) * self.n], |p| p),
                Storage::Sparse(rows) => rows.row_total(j, |p| p),
            };
            if (sum - 1.0).abs() > ROW_SUM_TOLERANCE {
                return Err(CoreError::RowSum { row: j + 1, sum });
            }
        }
        Ok(())
    }

    /// Like [`TransitionMatrix::new`], but first rescales every row to sum to 1. Rows of any
    /// finite magnitude work: a row like (10^308, 10^308), whose sum overflows, becomes
    /// (0.5, 0.5).
    ///
    /// # Errors
    /// As [`TransitionMatrix::new`] for the shape and entries; [`CoreError::ZeroRow`] for a
    /// row that sums to 0.
    pub fn normalized(rows: Vec<Vec<f64>>) -> Result<Self> {
        Self::checked_entries(rows)?.normalize_rows()
    }

    /// As [`TransitionMatrix::new`], from the n² entries of an n×n matrix row after row
    /// (`data[j·n + i]` is row j, column i): no row is copied, so a large matrix read from a
    /// file is held once.
    ///
    /// # Errors
    /// As [`TransitionMatrix::new`]; [`CoreError::NotSquare`] when `data` does not hold n²
    /// entries (naming the last row, short or long).
    ///
    /// ```
    /// use tpl_core::TransitionMatrix;
    /// let p = TransitionMatrix::from_row_major(2, vec![0.8, 0.2, 0.0, 1.0])?;
    /// assert_eq!(p, TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn from_row_major(n: usize, data: Vec<f64>) -> Result<Self> {
        let m = Self::checked_flat(n, data)?;
        m.check_row_sums()?;
        Ok(m)
    }

    /// As [`TransitionMatrix::normalized`], from the entries row after row
    /// ([`TransitionMatrix::from_row_major`]).
    ///
    /// # Errors
    /// As [`TransitionMatrix::from_row_major`] for the shape and entries;
    /// [`CoreError::ZeroRow`] for a row that sums to 0.
    pub fn normalized_row_major(n: usize, data: Vec<f64>) -> Result<Self> {
        Self::checked_flat(n, data)?.normalize_rows()
    }

    /// Rescales every row to sum to 1 (see [`TransitionMatrix::normalized`]).
    fn normalize_rows(self) -> Result<Self> {
        // First scale by the power of two that brings the largest entry into [1, 2): exact
        // (bar entries 2^1022 times smaller than the largest, which end up subnormal either
        // way), and the sum of at most n such entries cannot overflow.
        let scale = |j: usize, top: f64| {
            if top <= 0.0 { Err(CoreError::ZeroRow { row: j + 1 }) } else { Ok(-(top.log2().floor() as i32)) }
        };
        let n = self.n;
        let storage = match self.storage {
            Storage::Dense(mut data) => {
                for (j, row) in data.chunks_mut(n).enumerate() {
                    let k = scale(j, row.iter().copied().fold(0.0, f64::max))?;
                    let sum = dense_row_total(row, |v| pow2(v, k));
                    row.iter_mut().for_each(|v| *v = pow2(*v, k) / sum);
                }
                Storage::Dense(data)
            }
            Storage::Sparse(rows) => Storage::Sparse(rows.map_rows(|j, base, vals| {
                let k = scale(j, vals.iter().copied().fold(base, f64::max))?;
                let sum = row_total(vals.iter().copied(), base, n - vals.len(), |v| pow2(v, k));
                vals.iter_mut().for_each(|v| *v = pow2(*v, k) / sum);
                Ok(pow2(base, k) / sum)
            })?),
        };
        Ok(Self { n, storage })
    }

    /// The n×n matrix whose non-zero entries are `entries`, each (row, column, value) with
    /// 0-based row and column below n, in any order: a sparse matrix (see the type's
    /// documentation), validated as [`TransitionMatrix::new`] validates rows. Entries equal to
    /// 0 may be given or left out.
    ///
    /// # Errors
    /// [`CoreError::EmptyMatrix`] for n = 0; [`CoreError::EntryOutside`] for a row or column
    /// not below n; [`CoreError::RepeatedEntry`] for a position given twice;
    /// [`CoreError::BadEntry`] for a negative or non-finite value; [`CoreError::RowSum`] for a
    /// row whose entries do not sum to 1 (a row with no entry sums to 0).
    ///
    /// ```
    /// use tpl_core::TransitionMatrix;
    /// let p = TransitionMatrix::from_entries(3, vec![(0, 0, 0.9), (0, 1, 0.1), (1, 2, 1.0), (2, 0, 1.0)])?;
    /// assert!(p.is_sparse());
    /// assert_eq!(p.row(0), [0.9, 0.1, 0.0]);
    /// // Smoothing keeps it sparse: the common value (0 + s)/(1 + 3s) becomes each row's base.
    /// let s = p.smoothed(0.01)?;
    /// assert!(s.is_sparse());
    /// assert!((s.row(1)[0] - 0.01 / 1.03).abs() < 1e-17);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn from_entries(n: usize, entries: Vec<(usize, usize, f64)>) -> Result<Self> {
        let m = Self::checked_entry_list(n, entries, false)?;
        m.check_row_sums()?;
        Ok(m)
    }

    /// As [`TransitionMatrix::from_entries`], but first rescales every row to sum to 1 (as
    /// [`TransitionMatrix::normalized`]).
    ///
    /// # Errors
    /// As [`TransitionMatrix::from_entries`] for the positions and values;
    /// [`CoreError::ZeroRow`] for a row with no positive entry.
    pub fn normalized_entries(n: usize, entries: Vec<(usize, usize, f64)>) -> Result<Self> {
        Self::checked_entry_list(n, entries, true)?.normalize_rows()
    }

    /// The n×n sparse matrix whose row j is `rows[j].0` in every column except those of
    /// `rows[j].1`, (column, entry) pairs with columns ascending, entries above the base: the
    /// form [`Row::sparse_parts`] reads back (a smoothed sparse matrix has a base > 0). A row
    /// that lists all n columns has no use for its base: it is stored with its smallest entry
    /// as the base instead, as [`TransitionMatrix::from_entries`] stores a full row.
    ///
    /// # Errors
    /// [`CoreError::NotSquare`] unless there are n rows; [`CoreError::EntryOutside`] for a
    /// column not below n; [`CoreError::RepeatedEntry`] for columns not strictly ascending;
    /// [`CoreError::BadEntry`] for a base or entry that is negative or not finite, or an entry
    /// not above its row's base (column 0 names the base); [`CoreError::RowSum`] for a row
    /// that does not sum to 1.
    ///
    /// ```
    /// use tpl_core::TransitionMatrix;
    /// let p = TransitionMatrix::from_entries(3, vec![(0, 0, 1.0), (1, 2, 1.0), (2, 1, 1.0)])?.smoothed(0.5)?;
    /// let rows = p.rows().map(|r| r.sparse_parts().map(|(b, c, v)| (b, c.iter().map(|&c| c as usize).zip(v.iter().copied()).collect())))
    ///     .collect::<Option<Vec<(f64, Vec<(usize, f64)>)>>>().unwrap();
    /// assert_eq!(TransitionMatrix::from_sparse_rows(3, rows)?, p);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn from_sparse_rows(n: usize, rows: Vec<(f64, Vec<(usize, f64)>)>) -> Result<Self> {
        if n == 0 {
            return Err(CoreError::EmptyMatrix);
        }
        if rows.len() != n {
            return Err(CoreError::NotSquare { row: rows.len().min(n) + 1, len: 0, expected: n });
        }
        let mut entries = Vec::new();
        let mut bases = Vec::with_capacity(n);
        for (j, (base, row)) in rows.into_iter().enumerate() {
            if !(base.is_finite() && base >= 0.0) {
                return Err(CoreError::BadEntry { row: j + 1, col: 0, value: base });
            }
            for (k, &(col, value)) in row.iter().enumerate() {
                if col >= n {
                    return Err(CoreError::EntryOutside { from: j, to: col, n });
                }
                if k > 0 && row[k - 1].0 >= col {
                    return Err(CoreError::RepeatedEntry { from: j, to: col });
                }
                if !(value.is_finite() && value > base) {
                    return Err(CoreError::BadEntry { row: j + 1, col: col + 1, value });
                }
            }
            // A row that lists every column keeps its smallest entry as its base (what
            // `from_entries` and `TransitionMatrix::form` read as the base), the others as
            // its exceptions; 0 is stored as +0.
            let base = if row.len() == n {
                row.iter().map(|e| e.1).fold(f64::INFINITY, f64::min)
            } else {
                base + 0.0
            };
            entries.extend(row.into_iter().filter(|e| e.1 != base).map(|(col, value)| (j, col, value)));
            bases.push(base);
        }
        let m = Self { n, storage: Storage::Sparse(RowStructure::from_parts(n, bases, &entries)) };
        m.check_row_sums()?;
        Ok(m)
    }

    /// The sparse matrix of `entries` after the checks of each entry.
    fn checked_entry_list(n: usize, mut entries: Vec<(usize, usize, f64)>, normalize: bool) -> Result<Self> {
        if n == 0 {
            return Err(CoreError::EmptyMatrix);
        }
        for &(from, to, value) in &entries {
            if from >= n || to >= n {
                return Err(CoreError::EntryOutside { from, to, n });
            }
            if !(value.is_finite() && value >= 0.0) {
                return Err(CoreError::BadEntry { row: from + 1, col: to + 1, value });
            }
        }
        entries.sort_unstable_by_key(|&(from, to, _)| (from, to));
        if let Some(w) = entries.windows(2).find(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1)) {
            return Err(CoreError::RepeatedEntry { from: w[0].0, to: w[0].1 });
        }
        entries.retain(|e| e.2 != 0.0);
        // A row with no positive entry sums to 0: found from the entries, before anything of
        // size n is allocated (n may be any number a caller passes; ids must fit 32 bits).
        let mut next = 0;
        for &(from, _, _) in &entries {
            if from > next {
                break;
            }
            next = from + 1;
        }
        if next < n {
            return Err(if normalize {
                CoreError::ZeroRow { row: next + 1 }
            } else {
                CoreError::RowSum { row: next + 1, sum: 0.0 }
            });
        }
        if u32::try_from(n).is_err() {
            return Err(CoreError::EntryOutside { from: n - 1, to: n - 1, n: u32::MAX as usize + 1 });
        }
        Ok(Self { n, storage: Storage::Sparse(RowStructure::from_sorted_entries(n, &entries)) })
    }

    /// Laplacian smoothing of TKDE eq. (28): every entry becomes (p + s)/Σ_k(p_k + s).
    /// Larger `s` means weaker correlation; `s = 0` returns the matrix unchanged. For s > 1
    /// the same value is computed as (p/s + 1)/Σ_k(p_k/s + 1), whose terms lie in [1, 2], so
    /// that no sum overflows for any finite `s` (s = 1e308 gives the uniform matrix).
    ///
    /// # Errors
    /// [`CoreError::BadSmoothing`] when `s` is negative or not finite.
    ///
    /// ```
    /// use tpl_core::TransitionMatrix;
    /// let p = TransitionMatrix::new(vec![vec![1.0, 0.0], vec![0.0, 1.0]])?.smoothed(1.0)?;
    /// assert_eq!(p.row(0), &[2.0 / 3.0, 1.0 / 3.0]);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// A sparse matrix stays sparse: each row's base b becomes term(b)/total and each
    /// exception v becomes term(v)/total, with total = Σ term(v) + (n − k)·term(b) over its k
    /// exceptions, in O(k) per row, never n² numbers. A dense row's total is summed in that
    /// order too (the entries above its smallest one, then the smallest one's term times its
    /// count), so both forms of a matrix smooth to the same entries, bit for bit.
    pub fn smoothed(&self, s: f64) -> Result<Self> {
        Self::check_smoothing(s)?;
        let n = self.n;
        // (p + s) scaled by 1/s when s > 1: the same ratios, without overflow.
        let term = |p: f64| if s > 1.0 { p / s + 1.0 } else { p + s };
        let storage = match &self.storage {
            Storage::Dense(data) => {
                let mut data = data.clone();
                for row in data.chunks_mut(n) {
                    let total = dense_row_total(row, term);
                    row.iter_mut().for_each(|p| *p = term(*p) / total);
                }
                Storage::Dense(data)
            }
            Storage::Sparse(rows) => Storage::Sparse(rows.map_rows(|_, base, vals| {
                let total = row_total(vals.iter().copied(), base, n - vals.len(), term);
                vals.iter_mut().for_each(|p| *p = term(*p) / total);
                Ok::<f64, CoreError>(term(base) / total)
            })?),
        };
        Ok(Self { n, storage })
    }

    /// Checks a Laplacian smoothing parameter (eq. 28) before any matrix exists: `s` must be
    /// finite and ≥ 0.
    ///
    /// # Errors
    /// [`CoreError::BadSmoothing`] otherwise.
    pub fn check_smoothing(s: f64) -> Result<()> {
        if s.is_finite() && s >= 0.0 { Ok(()) } else { Err(CoreError::BadSmoothing(s)) }
    }

    /// The n×n identity smoothed with parameter `s` (TKDE §6: the "strong to weak
    /// correlation" family of the experiments): diagonal (1 + s)/(1 + n s), elsewhere
    /// s/(1 + n s).
    ///
    /// # Errors
    /// [`CoreError::EmptyMatrix`] for n = 0; [`CoreError::BadSmoothing`] for a bad `s`.
    pub fn smoothed_identity(n: usize, s: f64) -> Result<Self> {
        if n == 0 {
            return Err(CoreError::EmptyMatrix);
        }
        Self::identity(n).smoothed(s)
    }

    /// The n×n identity (strongest correlation: Theorem 7 applies when n ≥ 2).
    pub fn identity(n: usize) -> Self {
        let mut data = vec![0.0; n * n];
        (0..n).for_each(|i| data[i * n + i] = 1.0);
        Self { n, storage: Storage::Dense(data) }
    }

    /// Number of states n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// True when the matrix stores each row as a base value and its exceptions
    /// ([`TransitionMatrix::from_entries`]).
    pub fn is_sparse(&self) -> bool {
        matches!(self.storage, Storage::Sparse(_))
    }

    /// Row `j` (0-based), dense or sparse.
    ///
    /// # Panics
    /// When `j >= n`.
    pub fn row(&self, j: usize) -> Row<'_> {
        match &self.storage {
            Storage::Dense(data) => Row::dense(&data[j * self.n..(j + 1) * self.n]),
            Storage::Sparse(rows) => {
                assert!(j < self.n, "row {j} of a matrix of {} rows", self.n);
                rows.row(j)
            }
        }
    }

    /// All rows in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = Row<'_>> + '_ {
        (0..self.n).map(|j| self.row(j))
    }

    /// The rows as owned vectors of n entries each (n² numbers, also for a sparse matrix).
    pub fn to_rows(&self) -> Vec<Vec<f64>> {
        self.rows().map(|r| r.to_vec()).collect()
    }

    /// The n² entries row after row, for a dense matrix.
    pub(crate) fn dense_entries(&self) -> Option<&[f64]> {
        match &self.storage {
            Storage::Dense(data) => Some(data),
            Storage::Sparse(_) => None,
        }
    }

    /// The rows of a sparse matrix as bases and exceptions.
    pub(crate) fn sparse_structure(&self) -> Option<&RowStructure> {
        match &self.storage {
            Storage::Dense(_) => None,
            Storage::Sparse(rows) => Some(rows),
        }
    }

    /// The form in which the loss algorithms read the rows: as bases and exceptions when that
    /// pays ([`RowStructure::pays`]), as the n² entries otherwise — decided from the entries
    /// alone, never from the storage, so that a sparse matrix and its dense twin give the
    /// algorithms the same numbers in the same order and get the same bits back. A sparse
    /// matrix's own structure is the one [`RowStructure::detect`] finds in its dense twin
    /// (each row's base is its smallest entry, its exceptions the others); a sparse matrix
    /// whose structure does not pay is read as its n² entries, as its twin is: fewer than 64
    /// states (32 KB at most), or more than n²/16 exceptions, which it already holds in
    /// 12 bytes each (the n² entries take at most 11 times that).
    pub(crate) fn form(&self) -> Form<'_> {
        match &self.storage {
            Storage::Dense(data) => RowStructure::detect(self)
                .map_or(Form::Dense(Cow::Borrowed(data)), |s| Form::Structured(Cow::Owned(s))),
            Storage::Sparse(rows) if rows.pays() => Form::Structured(Cow::Borrowed(rows)),
            Storage::Sparse(_) => {
                Form::Dense(Cow::Owned(self.rows().flat_map(|r| r.iter().copied()).collect()))
            }
        }
    }

    fn checked_entries(rows: Vec<Vec<f64>>) -> Result<Self> {
        let n = rows.len();
        if n == 0 {
            return Err(CoreError::EmptyMatrix);
        }
        let mut data = Vec::with_capacity(n * n);
        for (j, row) in rows.into_iter().enumerate() {
            if row.len() != n {
                return Err(CoreError::NotSquare { row: j + 1, len: row.len(), expected: n });
            }
            for (k, &v) in row.iter().enumerate() {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(CoreError::BadEntry { row: j + 1, col: k + 1, value: v });
                }
            }
            data.extend(row.into_iter().map(positive_zero));
        }
        Ok(Self { n, storage: Storage::Dense(data) })
    }

    /// [`TransitionMatrix::checked_entries`] for entries row after row.
    fn checked_flat(n: usize, mut data: Vec<f64>) -> Result<Self> {
        if n == 0 || data.is_empty() {
            return Err(CoreError::EmptyMatrix);
        }
        if n.checked_mul(n) != Some(data.len()) {
            let full = data.len() / n;
            let (row, len) = if full < n { (full + 1, data.len() % n) } else { (n + 1, data.len() - n * n) };
            return Err(CoreError::NotSquare { row, len, expected: n });
        }
        if let Some(k) = data.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(CoreError::BadEntry { row: k / n + 1, col: k % n + 1, value: data[k] });
        }
        data.iter_mut().for_each(|v| *v = positive_zero(*v));
        Ok(Self { n, storage: Storage::Dense(data) })
    }
}

/// `v` with −0 stored as +0 (the same entry; a sparse matrix never stores −0, and a row's
/// smallest entry must have one sign in both forms).
fn positive_zero(v: f64) -> f64 {
    v + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_entries_make_the_matrix_of_their_rows() {
        let rows = vec![vec![0.5, 0.25, 0.25], vec![0.0, 1.0, 0.0], vec![0.1, 0.2, 0.7]];
        let flat: Vec<f64> = rows.concat();
        assert_eq!(TransitionMatrix::from_row_major(3, flat.clone()), TransitionMatrix::new(rows.clone()));
        let scaled: Vec<f64> = flat.iter().map(|v| v * 3.0).collect();
        let scaled_rows = scaled.chunks(3).map(<[f64]>::to_vec).collect();
        assert_eq!(
            TransitionMatrix::normalized_row_major(3, scaled),
            TransitionMatrix::normalized(scaled_rows)
        );
        assert_eq!(TransitionMatrix::from_row_major(0, vec![]), Err(CoreError::EmptyMatrix));
        assert_eq!(
            TransitionMatrix::from_row_major(3, flat[..7].to_vec()),
            Err(CoreError::NotSquare { row: 3, len: 1, expected: 3 })
        );
        assert_eq!(
            TransitionMatrix::from_row_major(2, vec![0.5; 6]),
            Err(CoreError::NotSquare { row: 3, len: 2, expected: 2 })
        );
        assert!(matches!(
            TransitionMatrix::from_row_major(2, vec![0.5, 0.5, f64::NAN, 1.0]),
            Err(CoreError::BadEntry { row: 2, col: 1, .. })
        ));
        assert_eq!(
            TransitionMatrix::from_row_major(2, vec![0.5, 0.5, 0.3, 0.6]),
            Err(CoreError::RowSum { row: 2, sum: 0.3 + 0.6 })
        );
        assert_eq!(
            TransitionMatrix::normalized_row_major(2, vec![0.5, 0.5, 0.0, 0.0]),
            Err(CoreError::ZeroRow { row: 2 })
        );
    }

    #[test]
    fn rejects_bad_shapes_and_entries() {
        assert_eq!(TransitionMatrix::new(vec![]), Err(CoreError::EmptyMatrix));
        assert_eq!(
            TransitionMatrix::new(vec![vec![1.0, 0.0], vec![1.0]]),
            Err(CoreError::NotSquare { row: 2, len: 1, expected: 2 })
        );
        assert!(matches!(
            TransitionMatrix::new(vec![vec![1.0, 0.0], vec![f64::NAN, 1.0]]),
            Err(CoreError::BadEntry { row: 2, col: 1, .. })
        ));
        assert!(matches!(
            TransitionMatrix::new(vec![vec![1.5, -0.5], vec![0.0, 1.0]]),
            Err(CoreError::BadEntry { row: 1, col: 2, .. })
        ));
        assert!(matches!(
            TransitionMatrix::new(vec![vec![0.5, 0.5], vec![0.3, 0.6]]),
            Err(CoreError::RowSum { row: 2, .. })
        ));
    }

    #[test]
    fn tolerance_is_1e9_and_normalize_rescales() {
        assert!(TransitionMatrix::new(vec![vec![0.5 + 5e-10, 0.5], vec![0.0, 1.0]]).is_ok());
        assert!(TransitionMatrix::new(vec![vec![0.5 + 2e-9, 0.5], vec![0.0, 1.0]]).is_err());
        let m = TransitionMatrix::normalized(vec![vec![2.0, 6.0], vec![0.0, 3.0]]).unwrap();
        assert_eq!(m.row(0), &[0.25, 0.75]);
        assert_eq!(m.row(1), &[0.0, 1.0]);
        assert_eq!(
            TransitionMatrix::normalized(vec![vec![0.0, 0.0], vec![0.0, 3.0]]),
            Err(CoreError::ZeroRow { row: 1 })
        );
    }

    #[test]
    fn smoothing_follows_eq_28() {
        let p = TransitionMatrix::smoothed_identity(3, 0.5).unwrap();
        approx::assert_relative_eq!(p.row(1)[1], 1.5 / 2.5, max_relative = 1e-15);
        approx::assert_relative_eq!(p.row(1)[0], 0.5 / 2.5, max_relative = 1e-15);
        assert!(TransitionMatrix::new(p.to_rows()).is_ok());
        assert_eq!(p.smoothed(-1.0), Err(CoreError::BadSmoothing(-1.0)));
        assert_eq!(TransitionMatrix::identity(2).smoothed(0.0).unwrap(), TransitionMatrix::identity(2));
    }

    /// The loss algorithms get one form per matrix, whatever its storage: a smoothed ring of
    /// 80 cells by its structure, a ring of 8 cells and a matrix of 70 states with entries
    /// everywhere as their n² entries.
    #[test]
    fn both_storages_of_a_matrix_give_the_algorithms_one_form() {
        let ring = |n: usize| -> Vec<(usize, usize, f64)> {
            (0..n).flat_map(|i| [(i, i, 0.5), (i, (i + 1) % n, 0.25), (i, (i + n - 1) % n, 0.25)]).collect()
        };
        let full = |n: usize| -> Vec<(usize, usize, f64)> {
            (0..n).flat_map(|i| (0..n).map(move |j| (i, j, 1.0 + ((i * 7 + j * 3) % 5) as f64))).collect()
        };
        for (n, entries, structured) in [(80, ring(80), true), (8, ring(8), false), (70, full(70), false)] {
            let sparse = TransitionMatrix::normalized_entries(n, entries).unwrap().smoothed(1e-3).unwrap();
            let dense = TransitionMatrix::from_row_major(n, sparse.to_rows().concat()).unwrap();
            assert!(sparse.is_sparse() && !dense.is_sparse());
            assert_eq!(sparse.form(), dense.form(), "n = {n}");
            assert_eq!(matches!(sparse.form(), Form::Structured(_)), structured, "n = {n}");
        }
    }

    /// A sparse row that lists every column is stored with its smallest entry as its base,
    /// and −0 as +0 in a dense matrix: a row's base is its smallest entry in both forms.
    #[test]
    fn a_row_is_stored_with_its_smallest_entry_as_base() {
        let p = TransitionMatrix::from_sparse_rows(
            2,
            vec![(0.1, vec![(0, 0.25), (1, 0.75)]), (-0.0, vec![(1, 1.0)])],
        )
        .unwrap();
        assert_eq!(p.row(0).sparse_parts(), Some((0.25, &[1u32][..], &[0.75][..])));
        assert!(p.row(1).sparse_parts().unwrap().0.is_sign_positive());
        let dense = TransitionMatrix::new(vec![vec![-0.0, 1.0], vec![0.5, 0.5]]).unwrap();
        assert!(dense.row(0)[0].is_sign_positive());
        assert!(
            TransitionMatrix::from_row_major(2, vec![1.0, -0.0, 0.5, 0.5]).unwrap().row(0)[1]
                .is_sign_positive()
        );
    }

    /// A huge s once overflowed the row sum n·s and gave rows of zeros; it must give the
    /// uniform matrix.
    #[test]
    fn smoothing_by_a_huge_s_gives_the_uniform_matrix() {
        for s in [1e308, f64::MAX, 1e200] {
            let p = TransitionMatrix::identity(3).smoothed(s).unwrap();
            for row in p.rows() {
                assert!(row.iter().all(|&q| (q - 1.0 / 3.0).abs() < 1e-15), "s = {s:e}: {row:?}");
            }
        }
    }
}
