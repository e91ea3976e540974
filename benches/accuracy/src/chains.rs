//! The synthetic movement chains of the grid and the matrix helpers its variants need: the
//! two population shapes, the stationary distribution people start from, and a matrix with
//! a few rows permuted (a prior that is wrong in a few places).

use rand::Rng;
use rand::seq::index;
use tpl_core::TransitionMatrix;

/// The shape of a synthetic population: how its people move among the cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// 20 cells; every row stays with probability about 0.8 and spreads the rest over three
    /// random other cells.
    Uniform,
    /// 40 cells, one of them (cell 0) an OUT cell holding 75–95 % of the people at
    /// stationarity; the others are left fast (stay 0.3), towards OUT at a small rate or
    /// among four random neighbours: the shape of real streams where most people are away.
    OutDominant,
}

impl Shape {
    /// Both shapes, in the grid's order.
    pub const ALL: [Shape; 2] = [Self::Uniform, Self::OutDominant];

    /// The name on the command line (`--streams`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::OutDominant => "out",
        }
    }

    /// The label of the shape column.
    pub fn label(self) -> &'static str {
        match self {
            Self::Uniform => "uniform-ish",
            Self::OutDominant => "out-dominant",
        }
    }

    /// Number of cells.
    pub fn cells(self) -> usize {
        match self {
            Self::Uniform => 20,
            Self::OutDominant => 40,
        }
    }

    /// A chain of this shape drawn from `rng` (the same generator state, the same chain).
    ///
    /// # Errors
    /// Only if the rows built were not stochastic, which they are by construction.
    pub fn chain<R: Rng + ?Sized>(self, rng: &mut R) -> tpl_core::Result<TransitionMatrix> {
        let rows = match self {
            Self::Uniform => uniform_rows(self.cells(), rng),
            Self::OutDominant => out_dominant_rows(self.cells(), rng),
        };
        TransitionMatrix::normalized(rows)
    }
}

/// Probability that a person in a non-OUT cell goes to OUT next step (OutDominant).
const TO_OUT: f64 = 0.05;

/// Probability that a person in a non-OUT cell stays there (OutDominant).
const INSIDE_STAY: f64 = 0.3;

fn uniform_rows<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| {
            let mut row = vec![0.0; n];
            let stay = rng.random_range(0.7..0.9);
            row[i] = stay;
            let others: Vec<usize> = (0..n).filter(|&j| j != i).collect();
            let targets = pick(rng, &others, 3);
            spread(&mut row, &targets, 1.0 - stay, rng);
            row
        })
        .collect()
}

fn out_dominant_rows<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Vec<Vec<f64>> {
    // Stationary OUT share π solves π·exit = (1 − π)·TO_OUT.
    let share: f64 = rng.random_range(0.75..0.95);
    let exit = TO_OUT * (1.0 - share) / share;
    let mut rows = Vec::with_capacity(n);
    let mut out = vec![0.0; n];
    out[0] = 1.0 - exit;
    // Uneven exits: some cells are rarely entered from OUT.
    let inside: Vec<usize> = (1..n).collect();
    let weights: Vec<f64> = inside.iter().map(|_| rng.random::<f64>().powi(2) + 1e-3).collect();
    let total: f64 = weights.iter().sum();
    for (&j, w) in inside.iter().zip(&weights) {
        out[j] = exit * w / total;
    }
    rows.push(out);
    for i in 1..n {
        let mut row = vec![0.0; n];
        row[i] = INSIDE_STAY;
        row[0] = TO_OUT;
        let others: Vec<usize> = (1..n).filter(|&j| j != i).collect();
        let targets = pick(rng, &others, 4);
        spread(&mut row, &targets, 1.0 - INSIDE_STAY - TO_OUT, rng);
        rows.push(row);
    }
    rows
}

/// `k` distinct entries of `from` (all of them if fewer).
fn pick<R: Rng + ?Sized>(rng: &mut R, from: &[usize], k: usize) -> Vec<usize> {
    index::sample(rng, from.len(), k.min(from.len())).into_iter().map(|i| from[i]).collect()
}

/// Adds `mass` to `row` over `targets` in random proportions (each share at least a fifth of
/// an even one).
fn spread<R: Rng + ?Sized>(row: &mut [f64], targets: &[usize], mass: f64, rng: &mut R) {
    let weights: Vec<f64> = targets.iter().map(|_| rng.random_range(0.2..1.0)).collect();
    let total: f64 = weights.iter().sum();
    for (&j, w) in targets.iter().zip(&weights) {
        row[j] += mass * w / total;
    }
}

/// The stationary distribution of `m` reached from the uniform one by repeated steps (the
/// chains of [`Shape`] stay with positive probability everywhere, hence are aperiodic), as a
/// probability vector summing to 1.
pub fn stationary(m: &TransitionMatrix) -> Vec<f64> {
    let n = m.n();
    let mut p = vec![1.0 / n as f64; n];
    for _ in 0..5000 {
        let mut next = vec![0.0; n];
        for (pi, row) in p.iter().zip(m.rows()) {
            for (x, &q) in next.iter_mut().zip(row) {
                *x += pi * q;
            }
        }
        let change: f64 = next.iter().zip(&p).map(|(a, b)| (a - b).abs()).sum();
        p = next;
        if change < 1e-15 {
            break;
        }
    }
    let total: f64 = p.iter().sum();
    p.iter().map(|x| x / total).collect()
}

/// `m` with rows `rows` moved one place along the list, cyclically: row `rows[k]` of the
/// result is row `rows[k + 1]` of `m`, and the last listed row gets the first one. Every row
/// stays a probability vector; only the listed rows change (unless they were equal).
///
/// # Errors
/// A row index ≥ n, or an index listed twice.
pub fn permute_rows(m: &TransitionMatrix, rows: &[usize]) -> Result<TransitionMatrix, String> {
    let n = m.n();
    if let Some(&bad) = rows.iter().find(|&&r| r >= n) {
        return Err(format!("row {bad} of a {n}-state matrix"));
    }
    let mut seen = rows.to_vec();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != rows.len() {
        return Err(format!("rows {rows:?} list a row twice"));
    }
    let mut out = m.to_rows();
    for (k, &r) in rows.iter().enumerate() {
        out[r] = m.row(rows[(k + 1) % rows.len()]).to_vec();
    }
    TransitionMatrix::new(out).map_err(|e| e.to_string())
}

/// Up to `k` distinct row indices of an n-state matrix drawn from `rng`, for [`permute_rows`].
pub fn rows_to_permute<R: Rng + ?Sized>(rng: &mut R, n: usize, k: usize) -> Vec<usize> {
    index::sample(rng, n, k.min(n)).into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_compare::Seed;

    #[test]
    fn permuting_rows_moves_them_cyclically_and_nothing_else() {
        let m = TransitionMatrix::new(vec![
            vec![1.0, 0.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0, 0.0],
            vec![0.5, 0.5, 0.0, 0.0],
            vec![0.0, 0.0, 0.0, 1.0],
        ])
        .unwrap();
        let p = permute_rows(&m, &[0, 2, 3]).unwrap();
        assert_eq!(p.row(0), m.row(2));
        assert_eq!(p.row(2), m.row(3));
        assert_eq!(p.row(3), m.row(0));
        assert_eq!(p.row(1), m.row(1));
        assert!(permute_rows(&m, &[0, 4]).is_err());
        assert!(permute_rows(&m, &[1, 1]).is_err());
        let picked = rows_to_permute(&mut Seed::given(3).rng("t", 0), 4, 3);
        assert_eq!(picked.len(), 3);
        assert!(picked.iter().all(|&r| r < 4));
    }

    #[test]
    fn the_out_cell_holds_most_people_at_stationarity() {
        for seed in 0..20 {
            let chain = Shape::OutDominant.chain(&mut Seed::given(seed).rng("chain", 0)).unwrap();
            let pi = stationary(&chain);
            assert!((0.74..0.96).contains(&pi[0]), "seed {seed}: OUT share {}", pi[0]);
            assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!((chain.row(5)[5] - INSIDE_STAY).abs() < 1e-12);
        }
        let a = Shape::Uniform.chain(&mut Seed::given(1).rng("chain", 0)).unwrap();
        assert_eq!(a, Shape::Uniform.chain(&mut Seed::given(1).rng("chain", 0)).unwrap());
        assert!(
            a.rows().enumerate().all(|(i, r)| r[i] >= 0.7 && r.iter().filter(|&&q| q > 0.0).count() == 4)
        );
    }
}
