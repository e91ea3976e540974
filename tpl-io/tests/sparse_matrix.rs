//! Sparse matrix files (`from,to,p`, docs/formats.md §2): read into sparse matrices equal to
//! the dense files of the same entries, in any order, and every malformed file refused with
//! its file and line named, before anything of the size of the matrix is allocated.

use std::path::PathBuf;

use tpl_core::TransitionMatrix;
use tpl_io::{read_matrix, sparse_matrix_text};

fn write(dir: &tempfile::TempDir, name: &str, content: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn error(content: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    read_matrix(&write(&dir, "m.csv", content), false).unwrap_err().to_string()
}

#[test]
fn a_sparse_file_reads_as_its_dense_twin() {
    let dir = tempfile::tempdir().unwrap();
    let dense = read_matrix(&write(&dir, "d.csv", "0.9,0.1,0\n0,0,1\n0.5,0.25,0.25\n"), false).unwrap();
    let text = "# a comment\nfrom, to ,p\n2,2,0.25\n0,0,0.9\n1,2,1\n2,0,0.5\n0,1,0.1\n2,1,0.25\n1,0,0\n";
    let sparse = read_matrix(&write(&dir, "s.csv", text), false).unwrap();
    assert!(sparse.is_sparse());
    assert_eq!(sparse, dense);
    // What sparse_matrix_text writes reads back as the same matrix.
    let back = read_matrix(&write(&dir, "back.csv", &sparse_matrix_text("written", &sparse)), false).unwrap();
    assert_eq!(back, dense);
    // --normalize rescales rows; smoothing keeps the matrix sparse.
    let scaled = read_matrix(&write(&dir, "n.csv", "from,to,p\n0,1,3\n1,0,2\n1,1,2\n"), true).unwrap();
    assert_eq!(scaled, TransitionMatrix::new(vec![vec![0.0, 1.0], vec![0.5, 0.5]]).unwrap());
    assert!(scaled.smoothed(0.1).unwrap().is_sparse());
}

#[test]
fn malformed_sparse_files_name_the_line() {
    let cases = [
        ("from,to,p\n0,0,1\n1,1,0.5,2\n", ":3: 4 fields, expected 3"),
        ("from,to,p\n0,0,1\n-1,1,1\n", ":3: from `-1` is not a state id"),
        ("from,to,p\n0,0,1\n1,x,1\n", ":3: to `x` is not a state id"),
        ("from,to,p\n0,0,1\n1,1,NaN\n", ":3: p:"),
        ("from,to,p\n0,0,1\n1,1,-1\n", ":3: transition matrix entry at row 2, column 2 is -1"),
        (
            "from,to,p\n0,0,1\n1,1,1\n0,0,1\n",
            ":4: transition matrix entry from state 0 to state 0 is given twice",
        ),
        ("from,to,p\n0,0,0.5\n1,1,1\n", "row 1 sums to 0.5"),
        ("from,to,p\n", "no matrix entries"),
        ("from,to,p\n0,2,1\n2,0,1\n", "state 1 has no entry of its own"),
    ];
    for (content, want) in cases {
        let e = error(content);
        assert!(e.contains("m.csv") && e.contains(want), "{content:?}: {e}");
    }
}

/// Regression: any header but exactly `from,to,p` fell through to the dense parser
/// (`value 1: "from" is not a number`).
#[test]
fn sparse_headers_are_recognised_in_any_case_and_others_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let dense = read_matrix(&write(&dir, "d.csv", "1,0\n0,1\n"), false).unwrap();
    for header in ["FROM,TO,P", " From , To , P ", "from,to,P"] {
        let m = read_matrix(&write(&dir, "h.csv", &format!("# c\n{header}\n0,0,1\n1,1,1\n")), false);
        assert_eq!(m.unwrap(), dense, "{header:?}");
    }
    for (header, want) in [
        (
            "from,to,p,x",
            "m.csv:1: header `from,to,p,x`: a sparse matrix file has exactly the columns from,to,p",
        ),
        ("from,to", "m.csv:1: header `from,to`: a sparse matrix file has exactly the columns from,to,p"),
        ("from,to,count", "m.csv:1: header `from,to,count`: this is a file of transition counts"),
    ] {
        let e = error(&format!("{header}\n0,0,1\n1,1,1\n"));
        assert!(e.contains(want), "{header}: {e}");
    }
    // Counts normalised are the forward matrix, as a dense counts file's rows are.
    let counts = write(&dir, "c.csv", "# tpl estimate\nfrom,to,count\n0,1,3\n1,0,1\n1,1,3\n");
    let dense_counts = write(&dir, "dc.csv", "0,3\n1,3\n");
    assert_eq!(read_matrix(&counts, true).unwrap(), read_matrix(&dense_counts, true).unwrap());
}

#[test]
fn a_huge_state_id_is_refused_without_a_huge_table() {
    // n would be 4·10⁹: the missing rows are found from the 2 entries, nothing of size n made.
    let e = error("from,to,p\n0,0,1\n4000000000,0,1\n");
    assert!(e.contains("state 1 has no entry of its own"), "{e}");
}
