//! The files `tpl estimate` writes ([`docs/formats.md`](tpl_core::guide::formats) §9): the forward,
//! backward and count matrices in the text form of §2, each under two `#` comment lines, and
//! `cells.csv`.

use tpl_core::{EstimatedMatrix, TransitionCounts, TransitionMatrix};

use crate::matrix::{cells_text, matrix_text, sparse_entries_text, sparse_matrix_text};

/// The names of the files of [`estimate_files`], in that order.
pub const ESTIMATE_FILES: [&str; 4] =
    ["transition_forward.csv", "transition_backward.csv", "transition_counts.csv", "cells.csv"];

/// The name and text of each file `tpl estimate` writes
/// ([`docs/formats.md`](tpl_core::guide::formats) §9), in the order of [`ESTIMATE_FILES`]: `source`
/// (what was estimated, one line) heads each matrix, followed by what its entries mean and its rows
/// without data, by cell id (`cell_ids`: the id of each row and column). When `sparse`, the
/// matrices are in the sparse form `from,to,p` of §2 and the counts `from,to,count`, non-zero
/// entries only (`tpl estimate --sparse`).
pub fn estimate_files(
    source: &str,
    cell_ids: &[u64],
    counts: &TransitionCounts,
    (forward, backward): (&EstimatedMatrix, &EstimatedMatrix),
    sparse: bool,
) -> [(&'static str, String); 4] {
    let source = format!("{source}\nrow/column i is the i-th cell id of cells.csv");
    let ids = |rows: &[usize]| {
        rows.iter().filter_map(|&i| cell_ids.get(i)).map(u64::to_string).collect::<Vec<_>>().join(", ")
    };
    let matrix = |meaning: &str, m: &EstimatedMatrix| {
        let comment = format!("{source}\n{meaning}; identity rows (cell ids): [{}]", ids(&m.empty_rows));
        if sparse {
            sparse_matrix_text(&comment, &m.matrix)
        } else {
            matrix_text(&comment, text_rows(&m.matrix))
        }
    };
    let counts_comment =
        format!("{source}\nC[i][j] = number of (user, t) with cell i at t and cell j at t+1");
    let counts_text = if sparse {
        sparse_entries_text(&counts_comment, SPARSE_COUNTS_HEADER, counts.entries().into_iter())
    } else {
        let n = counts.n();
        matrix_text(&counts_comment, (0..n).map(|i| (0..n).map(|j| counts.count(i, j).to_string()).collect()))
    };
    [
        (ESTIMATE_FILES[0], matrix("P_F[i][j] = Pr(cell j at t+1 | cell i at t)", forward)),
        (ESTIMATE_FILES[1], matrix("P_B[j][i] = Pr(cell i at t-1 | cell j at t)", backward)),
        (ESTIMATE_FILES[2], counts_text),
        (ESTIMATE_FILES[3], cells_text(cell_ids)),
    ]
}

/// The header of the sparse counts file of [`estimate_files`].
pub const SPARSE_COUNTS_HEADER: &str = "from,to,count";

/// The rows of `m` as text, one at a time (at 4096 cells the numbers of a whole matrix as
/// strings would take 700 MB).
fn text_rows(m: &TransitionMatrix) -> impl Iterator<Item = Vec<String>> + '_ {
    m.rows().map(|r| r.iter().map(f64::to_string).collect())
}
