//! One row of a [`TransitionMatrix`](crate::TransitionMatrix), whichever way the matrix
//! stores it: n entries in a slice, or a base value with the entries that differ from it
//! (a sparse matrix, [`docs/formats.md`](crate::guide::formats) §2).

use std::ops::Index;

/// Row j of a transition matrix: its n entries, read without copying. Iterates over
/// `&f64` like a slice, indexes like one, and compares equal to a slice, array or vector of
/// the same entries.
///
/// ```
/// use tpl_core::TransitionMatrix;
/// let p = TransitionMatrix::from_entries(4, vec![(0, 1, 1.0), (1, 1, 0.5), (1, 2, 0.5), (2, 3, 1.0), (3, 0, 1.0)])?;
/// let row = p.row(1);
/// assert_eq!(row, [0.0, 0.5, 0.5, 0.0]);
/// assert_eq!(row[2], 0.5);
/// assert_eq!(row.iter().sum::<f64>(), 1.0);
/// assert_eq!(row.sparse_parts(), Some((0.0, &[1u32, 2][..], &[0.5, 0.5][..])));
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Row<'a> {
    inner: Inner<'a>,
}

#[derive(Clone, Copy)]
enum Inner<'a> {
    Dense(&'a [f64]),
    Sparse { n: usize, base: &'a f64, cols: &'a [u32], vals: &'a [f64] },
}

impl<'a> Row<'a> {
    /// A row stored as its entries.
    pub(crate) fn dense(entries: &'a [f64]) -> Self {
        Self { inner: Inner::Dense(entries) }
    }

    /// A row of n entries equal to `base` except at the columns `cols` (ascending), whose
    /// entries are `vals`.
    pub(crate) fn sparse(n: usize, base: &'a f64, cols: &'a [u32], vals: &'a [f64]) -> Self {
        Self { inner: Inner::Sparse { n, base, cols, vals } }
    }

    /// Number of entries n.
    pub fn len(&self) -> usize {
        match self.inner {
            Inner::Dense(entries) => entries.len(),
            Inner::Sparse { n, .. } => n,
        }
    }

    /// True for a row of no entries (never, in a valid matrix).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries in column order.
    pub fn iter(&self) -> RowIter<'a> {
        RowIter { row: *self, next: 0, exception: 0 }
    }

    /// The entries as a vector of n numbers.
    pub fn to_vec(&self) -> Vec<f64> {
        self.iter().copied().collect()
    }

    /// The entries as a slice, when the row is stored that way (a dense matrix).
    pub fn as_slice(&self) -> Option<&'a [f64]> {
        match self.inner {
            Inner::Dense(entries) => Some(entries),
            Inner::Sparse { .. } => None,
        }
    }

    /// A sparse row's base value, the columns whose entries differ from it (ascending) and
    /// those entries; None for a dense row.
    pub fn sparse_parts(&self) -> Option<(f64, &'a [u32], &'a [f64])> {
        match self.inner {
            Inner::Dense(_) => None,
            Inner::Sparse { base, cols, vals, .. } => Some((*base, cols, vals)),
        }
    }
}

impl<'a> Index<usize> for Row<'a> {
    type Output = f64;

    /// Entry `i` (0-based column).
    ///
    /// # Panics
    /// When `i` is not below the row's length.
    fn index(&self, i: usize) -> &f64 {
        match self.inner {
            Inner::Dense(entries) => &entries[i],
            Inner::Sparse { n, base, cols, vals } => {
                assert!(i < n, "column {i} of a row of {n} entries");
                match cols.binary_search(&(i as u32)) {
                    Ok(k) => &vals[k],
                    Err(_) => base,
                }
            }
        }
    }
}

/// The entries of a [`Row`] in column order.
#[derive(Clone)]
pub struct RowIter<'a> {
    row: Row<'a>,
    next: usize,
    exception: usize,
}

impl<'a> Iterator for RowIter<'a> {
    type Item = &'a f64;

    fn next(&mut self) -> Option<&'a f64> {
        let i = self.next;
        match self.row.inner {
            Inner::Dense(entries) => {
                let v = entries.get(i)?;
                self.next += 1;
                Some(v)
            }
            Inner::Sparse { n, base, cols, vals } => {
                if i >= n {
                    return None;
                }
                self.next += 1;
                if cols.get(self.exception).is_some_and(|&c| c as usize == i) {
                    self.exception += 1;
                    Some(&vals[self.exception - 1])
                } else {
                    Some(base)
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.row.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for RowIter<'_> {}

impl<'a> IntoIterator for Row<'a> {
    type Item = &'a f64;
    type IntoIter = RowIter<'a>;

    fn into_iter(self) -> RowIter<'a> {
        self.iter()
    }
}

impl std::fmt::Debug for Row<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Row<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl PartialEq<[f64]> for Row<'_> {
    fn eq(&self, other: &[f64]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl PartialEq<&[f64]> for Row<'_> {
    fn eq(&self, other: &&[f64]) -> bool {
        *self == **other
    }
}

impl<const N: usize> PartialEq<[f64; N]> for Row<'_> {
    fn eq(&self, other: &[f64; N]) -> bool {
        *self == other[..]
    }
}

impl<const N: usize> PartialEq<&[f64; N]> for Row<'_> {
    fn eq(&self, other: &&[f64; N]) -> bool {
        *self == other[..]
    }
}

impl PartialEq<Vec<f64>> for Row<'_> {
    fn eq(&self, other: &Vec<f64>) -> bool {
        *self == other[..]
    }
}

/// Serialised as the list of its n entries.
#[cfg(feature = "serde")]
impl serde::Serialize for Row<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}
