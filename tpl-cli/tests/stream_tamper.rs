//! A stream's stored estimates edited behind its back: forged values are refused by every
//! reader and by the next push, naming the step; a deleted row is `null` at its step and the
//! next push makes it again; the estimator's name is covered by the chain.

mod common;

use common::*;

/// A stream of the first 60 steps of the New York harbour week with `map` estimates of its
/// 140 vessels, pushed in two halves (keys 0..59).
fn estimated(d: &Scratch) -> (String, String) {
    let db = d.path("s.db");
    json(&cmd(
        "stream init --db {} --scheme bd --epsilon 1 --window 10 --forward {} --total 140",
        &[&db, &week("transition_forward.csv")],
    ));
    let text = std::fs::read_to_string(week("counts.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first = d.file("first.csv", &format!("{}\n", lines[..31].join("\n")));
    let all = d.file("all.csv", &format!("{}\n", lines[..61].join("\n")));
    json(&["stream", "push", "--db", &db, "--counts", &first]);
    json(&["stream", "push", "--db", &db, "--counts", &all]);
    (db, all)
}

fn sql(db: &str, statement: &str) {
    rusqlite::Connection::open(db).unwrap().execute_batch(statement).unwrap();
}

/// The bytes of `values` as a stored estimate (little-endian f64), as an SQL blob literal.
fn blob(values: &[f64]) -> String {
    let hex: String = values.iter().flat_map(|v| v.to_le_bytes()).map(|b| format!("{b:02x}")).collect();
    format!("x'{hex}'")
}

#[test]
fn forged_estimates_are_refused_by_every_reader_and_the_next_push_naming_the_step() {
    let d = Scratch::new("stream_tamper_forged");
    let (db, all) = estimated(&d);
    let cells = json(&["stream", "export", "--db", &db])["releases"][0].as_array().unwrap().len();
    let one_hot = |v: f64| {
        let mut x = vec![0.0; cells];
        x[0] = v;
        x
    };
    let original: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT hex(estimate) || ' ' || hex(std_error) FROM estimates WHERE t = 17", [], |r| {
            r.get(0)
        })
        .unwrap();
    let restore = format!(
        "UPDATE estimates SET estimate = x'{}', std_error = x'{}' WHERE t = 17",
        original.split(' ').next().unwrap(),
        original.split(' ').nth(1).unwrap()
    );
    let forgeries = [
        (format!("UPDATE estimates SET estimate = {} WHERE t = 17", blob(&vec![0.0; cells])), "sums to 0"),
        (format!("UPDATE estimates SET estimate = {} WHERE t = 17", blob(&one_hot(-1.0))), "is -1"),
        (format!("UPDATE estimates SET estimate = {} WHERE t = 17", blob(&one_hot(f64::NAN))), "is NaN"),
        (format!("UPDATE estimates SET estimate = {} WHERE t = 17", blob(&one_hot(1e300))), "sums to 1e300"),
        (
            format!("UPDATE estimates SET std_error = {} WHERE t = 17", blob(&one_hot(f64::NAN))),
            "standard error",
        ),
        (format!("UPDATE estimates SET estimate = {} WHERE t = 17", blob(&[1.0, 2.0])), "cells"),
    ];
    let page = d.path("page.html");
    for (forgery, words) in &forgeries {
        sql(&db, forgery);
        for args in [
            vec!["stream", "status", "--db", &db],
            vec!["stream", "export", "--db", &db],
            vec!["stream", "export", "--db", &db, "--estimates", "--interval", "0.9"],
            vec!["stream", "report", "--db", &db, "--out", &page],
            // A retry of every step: nothing is released again, and the estimates are read.
            vec!["stream", "push", "--db", &db, "--counts", &all],
        ] {
            let run = bad_input(&args, &["damaged stream", "step 17", words, "delete that row"], &[]);
            assert!(!run.stderr.contains("--interval"), "{}", run.describe());
        }
        assert!(!std::path::Path::new(&page).exists());
        sql(&db, &restore);
    }
    json(&["stream", "status", "--db", &db]);
    // The estimator's name is part of the chain: another one breaks it at step 1.
    sql(&db, "UPDATE meta SET value = 'mle' WHERE name = 'estimator'");
    bad_input(&["stream", "status", "--db", &db], &["step 1: the history's chain breaks"], &[]);
}

#[test]
fn a_deleted_estimate_is_null_at_its_step_and_the_next_push_makes_it_again() {
    let d = Scratch::new("stream_tamper_deleted");
    let (db, all) = estimated(&d);
    let before = json(&["stream", "export", "--db", &db]);
    let head = json(&["stream", "status", "--db", &db])["chain_head"].clone();
    sql(&db, "DELETE FROM estimates WHERE t = 12");
    let gap = json(&["stream", "export", "--db", &db]);
    let estimates = gap["estimates"].as_array().unwrap();
    assert_eq!(estimates.len(), 60);
    assert!(estimates[11].is_null());
    assert_eq!(estimates[12], before["estimates"][12]);
    assert_ne!(json(&["stream", "status", "--db", &db])["chain_head"], head);
    bad_input(&["stream", "export", "--db", &db, "--estimates"], &["step 12", "no estimate is stored"], &[]);
    // A retry of the whole file: every step replayed, the missing estimate made again.
    let pushed = json(&["stream", "push", "--db", &db, "--counts", &all]);
    assert!(pushed["replayed"].as_array().unwrap().iter().all(|r| r == true));
    assert_eq!(pushed["estimates"], before["estimates"]);
    assert_eq!(json(&["stream", "export", "--db", &db])["estimates"], before["estimates"]);
    assert_eq!(json(&["stream", "status", "--db", &db])["chain_head"], head);
}
