//! Moving a distribution one step through a transition matrix ([docs/map.md](tpl_core::guide::map)
//! §5, §9 and §13): q ↦ q·P for the forward matrix of every filter, and q ↦ q·B for the backward
//! matrix of `smooth`, whether given or derived from P by Bayes' rule.
//!
//! A matrix is taken apart once, when a stream starts ([`Mover::new`]): row i is its
//! smallest entry b_i on every cell plus excesses e_ij = P_ij − b_i ≥ 0. For the matrices
//! `tpl estimate --smoothing s` writes (TKDE eq. 28 on sparse counts c_i: row i is
//! (c_i/Σc_i + s·𝟙)/(1 + n·s)) and for any sparse matrix, almost every excess is 0, and
//!
//! > q·P = (Σ_i q_i·b_i)·𝟙 + Σ_i q_i·e_i
//!
//! costs O(n + nnz) instead of O(n²) (nnz: the excesses that are not 0). Every term of both
//! sums is ≥ 0, so no cancellation: the result is within (n + k_j + 2)·u relative of the
//! exact product in column j (u = 2⁻⁵³, k_j the excesses of column j), against (n + 1)·u for
//! the dense product — the two agree to (2n + k_j + 3)·u relative
//! ([docs/map.md](tpl_core::guide::map) §13). A matrix whose excesses are too many for that to pay
//! is multiplied densely.

use std::borrow::Cow;

use tpl_core::{Row, TransitionMatrix};

use crate::numeric::sum4;
use crate::widest::at_widest;

/// A split pays when at most this fraction of the n² entries is an excess: a scattered
/// excess costs about three dense entries (its column index, the value, the scattered
/// update).
const SPLIT_SHARE: usize = 4;

/// How a distribution moves one step ([docs/map.md](tpl_core::guide::map) §5, §9, §13): the forward
/// or backward matrix of a stream, in the form its product is cheapest in.
#[derive(Debug, Clone)]
pub(crate) enum Mover<'a> {
    /// A dense row-major product, O(n²) and bound by reading the matrix.
    Dense(&'a TransitionMatrix),
    /// Row floors plus sparse excesses, O(n + nnz).
    Split(Split),
    /// The backward matrix of a chain that moves by a forward matrix from a given
    /// occupancy ([docs/map.md](tpl_core::guide::map) §9), never formed.
    Reversed(Box<Reversal<'a>>),
}

/// A matrix as row floors b_i and its non-zero excesses e_ij = P_ij − b_i (each rounded once
/// from P_ij − b_i, exact when P_ij ≤ 2·b_i), kept both row by row and column by column.
#[derive(Debug, Clone)]
pub(crate) struct Split {
    /// b_i, the smallest entry of row i.
    floors: Vec<f64>,
    /// The excesses of each row, columns ascending (for P·v).
    rows: Sparse,
    /// The excesses of each column, rows ascending (for q·P: each output entry a sum of its
    /// own, with no store to wait for).
    columns: Sparse,
}

/// Compressed sparse lines: line k holds `indices[starts[k]..starts[k + 1]]` and the
/// matching `values`.
#[derive(Debug, Clone)]
struct Sparse {
    starts: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl Sparse {
    /// The indices and values of line `k`.
    fn line(&self, k: usize) -> (&[u32], &[f64]) {
        let range = self.starts[k]..self.starts[k + 1];
        (&self.indices[range.clone()], &self.values[range])
    }

    /// The same entries line by line the other way (rows ↔ columns), in ascending order
    /// within each line: a counting sort.
    fn transposed(&self, n: usize) -> Self {
        let mut starts = vec![0usize; n + 1];
        for &j in &self.indices {
            starts[j as usize + 1] += 1;
        }
        for k in 0..n {
            starts[k + 1] += starts[k];
        }
        let mut next = starts.clone();
        let (mut indices, mut values) = (vec![0u32; self.indices.len()], vec![0.0; self.values.len()]);
        for k in 0..n {
            let (line, entries) = self.line(k);
            for (&j, &e) in line.iter().zip(entries) {
                let slot = &mut next[j as usize];
                // n fits in u32 (checked where the split is made), so k does.
                indices[*slot] = k as u32;
                values[*slot] = e;
                *slot += 1;
            }
        }
        Self { starts, indices, values }
    }
}

/// B_ji = π_i·P_ij/(π·P)_j for an occupancy π (normalised) and a forward matrix P
/// ([docs/map.md](tpl_core::guide::map) §9); a cell that π·P leaves empty keeps its people (an
/// identity row).
#[derive(Debug, Clone)]
pub(crate) struct Reversal<'a> {
    forward: Mover<'a>,
    /// π, normalised to sum 1.
    occupancy: Vec<f64>,
    /// π·P.
    moved: Vec<f64>,
}

impl<'a> Mover<'a> {
    /// The cheapest form of `matrix` ([docs/map.md](tpl_core::guide::map) §13): split into row
    /// floors and excesses when at most n²/4 entries exceed their row's smallest, dense otherwise.
    /// One pass over the matrix to decide, a second to split; the dense form keeps a reference
    /// only. A sparse matrix is split as it is stored (its rows' bases are their smallest
    /// entries), whatever its number of exceptions: it has no dense form.
    pub(crate) fn new(matrix: &'a TransitionMatrix) -> Self {
        let n = matrix.n();
        let sparse = matrix.is_sparse();
        if u32::try_from(n).is_err() && !sparse {
            return Self::Dense(matrix);
        }
        let floors: Vec<f64> = matrix
            .rows()
            .map(|row| {
                row.sparse_parts().map_or_else(|| row.iter().copied().fold(f64::INFINITY, f64::min), |p| p.0)
            })
            .collect();
        let mut count = 0usize;
        for (row, &b) in matrix.rows().zip(&floors) {
            count +=
                row.sparse_parts().map_or_else(|| row.iter().filter(|&&v| v != b).count(), |p| p.1.len());
        }
        if count > n * n / SPLIT_SHARE && !sparse {
            return Self::Dense(matrix);
        }
        let mut starts = Vec::with_capacity(n + 1);
        let mut columns = Vec::with_capacity(count);
        let mut excesses = Vec::with_capacity(count);
        starts.push(0);
        for (row, &b) in matrix.rows().zip(&floors) {
            if let Some((_, cols, vals)) = row.sparse_parts() {
                columns.extend_from_slice(cols);
                excesses.extend(vals.iter().map(|v| v - b));
            } else {
                for (j, &v) in row.iter().enumerate() {
                    if v != b {
                        // n fits in u32 (checked above), so j does.
                        columns.push(j as u32);
                        excesses.push(v - b);
                    }
                }
            }
            starts.push(columns.len());
        }
        let rows = Sparse { starts, indices: columns, values: excesses };
        let columns = rows.transposed(n);
        Self::Split(Split { floors, rows, columns })
    }

    /// The backward matrix of a chain that moves by `forward` from `occupancy` (non-negative,
    /// positive sum; [docs/map.md](tpl_core::guide::map) §9): B_ji = π_i·P_ij/(π·P)_j with π the
    /// occupancy normalised, and an identity row for a cell j with (π·P)_j = 0. Applied as q·B = π
    /// ⊙ (P·(q ⊘ π·P)), never formed: the cost of one product with P, O(n) memory. `forward` is P
    /// as [`Mover::new`] built it.
    pub(crate) fn reversed(forward: Self, occupancy: &[f64]) -> Self {
        let sum: f64 = occupancy.iter().sum();
        let occupancy: Vec<f64> = occupancy.iter().map(|v| v / sum).collect();
        let moved = forward.apply(&occupancy);
        Self::Reversed(Box::new(Reversal { forward, occupancy, moved }))
    }

    /// (w/Σw)·M for non-negative weights w with Σw > 0 ([docs/map.md](tpl_core::guide::map) §5):
    /// the distribution of a person one step after being drawn from w.
    pub(crate) fn step(&self, weights: &[f64]) -> Vec<f64> {
        let sum: f64 = weights.iter().sum();
        let q: Vec<f64> = weights.iter().map(|w| w / sum).collect();
        self.apply(&q)
    }

    /// q·M for a distribution q (non-negative, summing to 1 up to rounding): [`Mover::step`]
    /// without normalising q again, for a caller that has just normalised it.
    pub(crate) fn apply(&self, q: &[f64]) -> Vec<f64> {
        match self {
            Self::Dense(m) => dense_times(q, m),
            Self::Split(s) => s.times(q),
            Self::Reversed(r) => r.times(q),
        }
    }

    /// M·v (a column vector) for v ≥ 0; only for the forms a [`Reversal`] holds.
    fn pull(&self, v: &[f64]) -> Vec<f64> {
        match self {
            Self::Dense(m) => m.rows().map(|row| dot(&dense_row(row), v)).collect(),
            Self::Split(s) => s.pull(v),
            Self::Reversed(r) => r.forward.pull(v),
        }
    }
}

impl Split {
    /// q·P = (Σ_i q_i·b_i)·𝟙 + Σ_i q_i·e_i: O(n + nnz), every term ≥ 0. Column j adds its
    /// excesses' terms to the floor term in row order.
    fn times(&self, q: &[f64]) -> Vec<f64> {
        let base: f64 = q.iter().zip(&self.floors).map(|(a, b)| a * b).sum();
        (0..q.len())
            .map(|j| {
                let (rows, excesses) = self.columns.line(j);
                rows.iter().zip(excesses).fold(base, |sum, (&i, &e)| sum + q[i as usize] * e)
            })
            .collect()
    }

    /// P·v = b·(Σ_j v_j) + (row-wise excesses)·v: O(n + nnz), every term ≥ 0 for v ≥ 0
    /// (Σ_j v_j in four running sums: one chain of n additions would be the step's longest).
    fn pull(&self, v: &[f64]) -> Vec<f64> {
        let total = sum4(v.iter().copied());
        self.floors
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let (columns, excesses) = self.rows.line(i);
                let excess: f64 = columns.iter().zip(excesses).map(|(&j, &e)| e * v[j as usize]).sum();
                b * total + excess
            })
            .collect()
    }
}

impl Reversal<'_> {
    /// q·B = π ⊙ (P·g) with g_j = q_j/(π·P)_j, plus q_j itself on the identity rows.
    fn times(&self, q: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; q.len()];
        shares_of_moved(q, &self.moved, &mut g);
        let mut out: Vec<f64> =
            self.forward.pull(&g).iter().zip(&self.occupancy).map(|(h, pi)| pi * h).collect();
        for ((o, &qj), &m) in out.iter_mut().zip(q).zip(&self.moved) {
            if m <= 0.0 {
                *o += qj;
            }
        }
        out
    }
}

at_widest! {
    /// g_j = q_j/m_j where m_j > 0, 0 elsewhere (the g of [`Reversal`]'s product), at the
    /// widest vector width ([`crate::widest`]; a division is correctly rounded at any width).
    fn shares_of_moved(q: &[f64], moved: &[f64], g: &mut [f64]) = shares_of_moved_portable;
}

/// The loop of [`shares_of_moved`].
#[inline(always)]
fn shares_of_moved_portable(q: &[f64], moved: &[f64], g: &mut [f64]) {
    for ((g, &qj), &m) in g.iter_mut().zip(q).zip(moved) {
        *g = if m > 0.0 { qj / m } else { 0.0 };
    }
}

at_widest! {
    /// q·P for a dense row-major P, O(n²) and bound by reading P (8n² bytes per call): rows
    /// are taken four at a time, so that each pass over the output adds four scaled rows
    /// (contiguous, vectorisable) and the output is loaded and stored a quarter as often. At
    /// the widest vector width ([`crate::widest`]): every entry of the output takes the same
    /// operations in the same order at any width.
    fn dense_times(q: &[f64], forward: &TransitionMatrix) -> Vec<f64> = dense_times_portable;
}

/// The loops of [`dense_times`].
#[inline(always)]
fn dense_times_portable(q: &[f64], forward: &TransitionMatrix) -> Vec<f64> {
    let n = q.len();
    let mut out = vec![0.0; n];
    let rows: Vec<Cow<'_, [f64]>> = forward.rows().map(dense_row).collect();
    let rows: Vec<&[f64]> = rows.iter().map(|row| &row[..n]).collect();
    let mut i = 0;
    while i + 4 <= n {
        let (r0, r1, r2, r3) = (rows[i], rows[i + 1], rows[i + 2], rows[i + 3]);
        let (q0, q1, q2, q3) = (q[i], q[i + 1], q[i + 2], q[i + 3]);
        for ((((o, &a), &b), &c), &d) in out.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3) {
            *o += (q0 * a + q1 * b) + (q2 * c + q3 * d);
        }
        i += 4;
    }
    for (k, row) in rows.iter().enumerate().skip(i) {
        let qk = q[k];
        for (o, &v) in out.iter_mut().zip(row.iter()) {
            *o += qk * v;
        }
    }
    out
}

/// The entries of a row of a dense matrix, borrowed (a [`Mover::Dense`] holds a dense matrix
/// only; another row is copied).
fn dense_row(row: Row<'_>) -> Cow<'_, [f64]> {
    row.as_slice().map_or_else(|| Cow::Owned(row.to_vec()), Cow::Borrowed)
}

/// Σ_j a_j·b_j with four independent accumulators (vectorisable).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (head_a, tail_a) = a.split_at(a.len() - a.len() % 4);
    let (head_b, tail_b) = b.split_at(head_a.len());
    for (x, y) in head_a.chunks_exact(4).zip(head_b.chunks_exact(4)) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = tail_a.iter().zip(tail_b).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

#[cfg(test)]
mod tests;
