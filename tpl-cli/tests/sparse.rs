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

/// A user stream of `users` users over two buckets: user u in cell u, then in cell u + 1
/// (the last user back in cell 0).
fn shift_stream(users: usize) -> String {
    let mut s = String::from("timestamp_bucket,user_id,location_cell\n");
    for u in 0..users {
        s.push_str(&format!("0,{u},{u}\n1,{u},{}\n", (u + 1) % users));
    }
    s
}

#[test]
fn estimate_sparse_writes_the_dense_estimate_entry_for_entry() {
    let d = Scratch::new("sparse_estimate_twin");
    let stream = d.file(
        "s.csv",
        "timestamp_bucket,user_id,location_cell\n0,1,0\n0,2,1\n0,3,3\n1,1,0\n1,2,2\n1,3,3\n2,1,1\n2,2,2\n2,3,0\n",
    );
    let [dense, sparse] = [d.path("dense"), d.path("sparse")];
    let a = json(&["estimate", "--stream", &stream, "--out", &dense]);
    let b = json(&["estimate", "--stream", &stream, "--out", &sparse, "--sparse"]);
    assert_eq!((a["sparse"].clone(), b["sparse"].clone()), (false.into(), true.into()));
    for key in ["transitions", "cells", "forward_identity_rows", "backward_identity_rows"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    for file in ["transition_forward.csv", "transition_backward.csv"] {
        let read = |dir: &str| tpl_io::read_matrix(&std::path::Path::new(dir).join(file), false).unwrap();
        let text = std::fs::read_to_string(std::path::Path::new(&sparse).join(file)).unwrap();
        assert!(text.contains("\nfrom,to,p\n"), "{text}");
        let rows = |m: tpl_core::TransitionMatrix| -> Vec<Vec<f64>> {
            m.rows().map(|r| r.iter().copied().collect()).collect()
        };
        assert_eq!(rows(read(&sparse)), rows(read(&dense)), "{file}");
    }
    // The counts: the dense table's non-zero entries, as from,to,count lines.
    let counts =
        |dir: &str| std::fs::read_to_string(std::path::Path::new(dir).join("transition_counts.csv")).unwrap();
    let dense_counts: Vec<String> = counts(&dense)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .enumerate()
        .flat_map(|(i, l)| {
            let row: Vec<String> = l.split(',').map(str::to_string).collect();
            row.into_iter().enumerate().filter(|(_, c)| c != "0").map(move |(j, c)| format!("{i},{j},{c}"))
        })
        .collect();
    let sparse_counts: Vec<String> =
        counts(&sparse).lines().skip_while(|l| *l != "from,to,count").skip(1).map(str::to_string).collect();
    assert_eq!(sparse_counts, dense_counts);
}

#[test]
fn estimate_sparse_takes_streams_past_the_dense_limit() {
    let d = Scratch::new("sparse_estimate_large");
    let stream = d.file("shift.csv", &shift_stream(5000));
    bad_input(
        &["estimate", "--stream", &stream, "--out", &d.path("dense")],
        &["5000 distinct cells", "--sparse"],
        &[],
    );
    let out = d.path("sparse");
    let j = json(&["estimate", "--stream", &stream, "--out", &out, "--sparse"]);
    assert_eq!((j["cells"].as_u64(), j["transitions"].as_u64()), (Some(5000), Some(5000)));
    let forward = std::path::Path::new(&out).join("transition_forward.csv");
    let m = tpl_io::read_matrix(&forward, false).unwrap();
    assert!(m.is_sparse() && m.n() == 5000);
    assert_eq!((m.row(4999)[0], m.row(17)[18], m.row(17)[17]), (1.0, 1.0, 0.0));
    // The file is what the matrix commands read: a permutation leaks α whole.
    let forward = path_str(&forward);
    let l = json(&["loss", "--matrix", &forward, "--alpha", "0.5", "--smoothing", "0.001"]);
    assert!(l["loss"][0].as_f64().is_some_and(|v| v > 0.0 && v <= 0.5), "{l}");
}

#[test]
fn estimate_sparse_refuses_smoothing_and_too_many_cells() {
    let d = Scratch::new("sparse_estimate_refusals");
    let stream = d.file("shift.csv", &shift_stream(3));
    let out = d.path("o");
    let base = ["estimate", "--stream", stream.as_str(), "--out", out.as_str(), "--sparse"];
    bad_input(&[&base[..], &["--smoothing", "0.01"]].concat(), &["--smoothing 0.01", "--sparse"], &[]);
    bad_input(&[&base[..], &["--cells", "70000"]].concat(), &["--cells 70000", "65534"], &[]);
    assert!(!std::path::Path::new(&out).exists(), "nothing written");
}

/// A matrix of n states from a fixed linear congruential sequence, about seven entries in ten
/// 0 (a row that comes out empty gets a 1 on its diagonal): its rows as text, once dense and
/// once as `from,to,p` lines, the same numbers in both.
fn twin_files(n: usize, seed: u64) -> (String, String) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut dense, mut sparse) = (String::new(), String::from("from,to,p\n"));
    for i in 0..n {
        let mut row: Vec<f64> = (0..n).map(|_| if next() < 0.3 { next() } else { 0.0 }).collect();
        if row.iter().all(|&w| w == 0.0) {
            row[i] = 1.0;
        }
        let total: f64 = row.iter().sum();
        let row: Vec<f64> = row.iter().map(|w| w / total).collect();
        dense.push_str(&row.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(","));
        dense.push('\n');
        for (j, p) in row.iter().enumerate().filter(|(_, p)| **p != 0.0) {
            sparse.push_str(&format!("{i},{j},{p}\n"));
        }
    }
    (dense, sparse)
}

/// The outside case of issue 37: budgets allocated by `quantified` from sparse files smoothed
/// with 0.001 audited at max TPL 1.0000000000000222 > α = 1 with the dense files (16 cases of
/// 72). Both forms now give the same bits: the same budgets, and either audit ≤ α exactly.
#[test]
fn budgets_from_a_sparse_file_keep_alpha_audited_with_the_dense_file() {
    let d = Scratch::new("sparse_audit");
    let (mut over, mut differ, mut runs) = (Vec::new(), Vec::new(), 0);
    for (case, n) in [5, 7, 12, 18, 18, 20].into_iter().enumerate() {
        let seed = 2 * case as u64 + 1;
        let (backward, forward) = (twin_files(n, seed), twin_files(n, seed + 1000));
        let pb = d.files([
            (&format!("pb{case}.csv") as &str, &backward.0),
            (&format!("pb{case}s.csv"), &backward.1),
        ]);
        let pf = d
            .files([(&format!("pf{case}.csv") as &str, &forward.0), (&format!("pf{case}s.csv"), &forward.1)]);
        for horizon in ["10", "50"] {
            let allocate = |k: usize| {
                json(&cmd(
                    "allocate --strategy quantified --backward {} --forward {} --alpha 1 --horizon {} --smoothing 0.001",
                    &[&pb[k], &pf[k], horizon],
                ))
            };
            let (from_dense, from_sparse) = (allocate(0), allocate(1));
            // Each form's budgets audited with the other form's files.
            for (k, from, name) in [(0, &from_sparse, "sparse"), (1, &from_dense, "dense")] {
                let budgets = d.file("budgets.json", &from["budgets"].to_string());
                let audit = json(&cmd(
                    "leakage --backward {} --forward {} --budgets {} --smoothing 0.001",
                    &[&pb[k], &pf[k], &budgets],
                ));
                let worst =
                    audit["tpl"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).fold(0.0, f64::max);
                runs += 1;
                if worst > 1.0 {
                    over.push(format!(
                        "case {case} (n = {n}), T = {horizon}, budgets from the {name} files: {worst}"
                    ));
                }
            }
            if from_sparse["budgets"] != from_dense["budgets"] || from_sparse["tpl"] != from_dense["tpl"] {
                differ.push(format!("case {case}, T = {horizon}"));
            }
        }
    }
    assert!(
        over.is_empty(),
        "{} of {runs} audits with the other form above α = 1:\n{}",
        over.len(),
        over.join("\n")
    );
    assert!(differ.is_empty(), "budgets or audits differ between the forms: {differ:?}");
}
