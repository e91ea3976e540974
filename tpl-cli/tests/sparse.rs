//! Sparse matrix files (`from,to,p`, docs/formats.md §2) through the built binary: every
//! command that reads a matrix gives for a sparse file what it gives for the dense file of
//! the same entries, smoothing included, and a bad sparse file ends in exit 2 naming its line.

mod common;

use common::*;

/// A 4-state chain, dense and sparse (entries in no particular order).
const DENSE: &str = "0.7,0.3,0,0\n0,0.6,0.4,0\n0,0,0.5,0.5\n0.2,0,0,0.8\n";
const SPARSE: &str =
    "# the same chain\nfrom,to,p\n3,3,0.8\n0,0,0.7\n0,1,0.3\n1,1,0.6\n1,2,0.4\n2,2,0.5\n2,3,0.5\n3,0,0.2\n";

#[test]
fn every_matrix_command_reads_a_sparse_file_as_its_dense_twin() {
    let d = Scratch::new("sparse_twins");
    let [dense, sparse] = d.files([("dense.csv", DENSE), ("sparse.csv", SPARSE)]);
    let counts = d.file("counts.csv", "1,2,3,4\n2,2,3,3\n3,1,3,3\n2,3,2,3\n");
    let commands = [
        "loss --matrix {} --alpha 0.5 --alpha 3",
        "loss --matrix {} --alpha 0.5 --smoothing 0.01",
        "supremum --matrix {} --epsilon 0.2 --smoothing 0.01",
        "leakage --backward {} --forward {} --epsilon 0.1 --horizon 20",
        "allocate --strategy window --backward {} --forward {} --alpha 1 --horizon 12 --window 3 --smoothing 0.05",
    ];
    for template in commands {
        let run = |m: &str| {
            let matrices = vec![m; template.matches("{}").count()];
            json(&cmd(template, &matrices))
        };
        let (want, got) = (run(&dense), run(&sparse));
        assert_eq!(got, want, "{template}");
    }
    let post = |m: &str| {
        json(&cmd(
            "postprocess --releases {} --total 10 --epsilon 1 --forward {} --smoothing 0.01",
            &[&counts, m],
        ))
    };
    let (want, got) = (post(&dense), post(&sparse));
    for key in ["estimates", "estimator"] {
        assert_eq!(got[key], want[key], "postprocess {key}");
    }
    // The schemes that read matrices, seeded: the same releases and the same comparison.
    for template in [
        "release --counts {} --scheme pba --epsilon 1 --window 2 --backward {} --seed 3",
        "compare --counts {} --epsilon 1 --window 2 --backward {} --forward {} --runs 3 --seed 3 --smoothing 0.05",
    ] {
        let run = |m: &str| {
            let mut values = vec![counts.as_str()];
            values.extend(std::iter::repeat_n(m, template.matches("{}").count() - 1));
            json(&cmd(template, &values))
        };
        let (mut want, mut got) = (run(&dense), run(&sparse));
        // Where the matrices came from is named by their paths, which differ.
        [&mut want, &mut got].into_iter().for_each(without_files);
        assert_eq!(got, want, "{template}");
    }
}

/// `v` without its `file` fields (the paths of the matrices read), at any depth.
fn without_files(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("file");
            o.values_mut().for_each(without_files);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_files),
        _ => {}
    }
}

#[test]
fn a_bad_sparse_file_names_its_line() {
    let d = Scratch::new("sparse_bad");
    let m = d.file("m.csv", "from,to,p\n0,0,1\n1,1,1\n1,1,0.5\n");
    bad_input(&["loss", "--matrix", &m, "--alpha", "1"], &["m.csv:4", "given twice"], &[]);
    let m = d.file("gap.csv", "from,to,p\n0,0,1\n2,2,1\n");
    bad_input(&["loss", "--matrix", &m, "--alpha", "1"], &["gap.csv", "state 1 has no entry"], &[]);
}
