//! NumPy arrays through the built binary (docs/formats.md §12): counts and releases read from
//! `.npy` as from their CSV, and `--format npy` writing the releases of `release` and the
//! estimates of `postprocess` as arrays, refused by a command with no array.

mod common;

use std::process::Command;

use common::*;

/// `tpl ARGS` with its standard output as bytes (a `.npy` file), expecting success.
fn npy_output(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_tpl")).args(args).output().expect("run tpl");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A T × d array of doubles as `.npy` bytes (version 1.0, little-endian, C order).
fn npy_of(rows: &[Vec<f64>]) -> Vec<u8> {
    let data: Vec<u8> = rows.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    npy("<f8", &format!("({}, {})", rows.len(), rows[0].len()), &data)
}

/// The values of `.npy` bytes this test wrote or `tpl` wrote (`<f8`, C order).
fn values(bytes: &[u8]) -> (String, Vec<f64>) {
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + len]).into_owned();
    (header, bytes[10 + len..].chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect())
}

#[test]
fn counts_read_from_npy_give_the_release_of_their_csv() {
    let d = Scratch::new("npy_counts");
    let rows = vec![vec![3.0, 1.0, 0.0], vec![2.0, 2.0, 0.0], vec![2.0, 1.0, 1.0], vec![0.0, 3.0, 1.0]];
    let csv = d.file("c.csv", "3,1,0\n2,2,0\n2,1,1\n0,3,1\n");
    let array = d.path("c.npy");
    std::fs::write(&array, npy_of(&rows)).unwrap();
    let release = |counts: &str| {
        json(&cmd("release --counts {} --scheme bd --epsilon 1 --window 2 --seed 5", &[counts]))
    };
    assert_eq!(release(&array)["releases"], release(&csv)["releases"]);
    // As bytes: the releases of the same seeded run, T × d doubles.
    let bytes = npy_output(&cmd(
        "release --counts {} --scheme bd --epsilon 1 --window 2 --seed 5 --format npy",
        &[&array],
    ));
    let (header, got) = values(&bytes);
    assert!(header.contains("'shape': (4, 3)"), "{header}");
    let want: Vec<f64> = release(&csv)["releases"].as_array().unwrap().iter().flat_map(nums_of).collect();
    assert_eq!(got, want);
    // A negative count, or NaN, is named by step and cell.
    std::fs::write(&array, npy_of(&[vec![1.0, -2.0]])).unwrap();
    bad_input(
        &["release", "--counts", &array, "--scheme", "bd", "--epsilon", "1", "--window", "2"],
        &["c.npy", "step 1, cell 2"],
        &[],
    );
}

fn nums_of(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn estimates_come_out_as_an_array_and_other_commands_refuse_npy() {
    let d = Scratch::new("npy_estimates");
    let releases = d.file("r.csv", "3,1,0\n2,2,0\n2,1,1\n0,3,1\n");
    let matrix = d.file("m.csv", "0.8,0.1,0.1\n0.1,0.8,0.1\n0.1,0.1,0.8\n");
    let args = "postprocess --releases {} --total 4 --epsilon 1 --forward {}";
    let estimates: Vec<f64> = json(&cmd(args, &[&releases, &matrix]))["estimates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(nums_of)
        .collect();
    let bytes = npy_output(&[&cmd(args, &[&releases, &matrix])[..], &["--format", "npy"]].concat());
    let (header, got) = values(&bytes);
    assert!(header.contains("'shape': (4, 3)"), "{header}");
    assert_eq!(got, estimates);
    let run = tpl(&["loss", "--matrix", &matrix, "--alpha", "1", "--format", "npy"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("no array output"), "{}", run.stderr);
}
