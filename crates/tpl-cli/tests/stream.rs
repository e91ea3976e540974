//! `tpl stream`: the round trip init → push → status → export, files that are not streams,
//! a push killed at random instants, and concurrent pushes on one file.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// A keyed counts file of `steps` rows of `cells` integer counts, keys from `first`.
fn counts_file(scratch: &Scratch, name: &str, first: usize, steps: usize, cells: usize) -> String {
    let mut text = String::from("timestamp_bucket");
    for j in 0..cells {
        text.push_str(&format!(",c{j}"));
    }
    text.push('\n');
    for t in first..first + steps {
        text.push_str(&t.to_string());
        for j in 0..cells {
            text.push_str(&format!(",{}", (t * 31 + j * 17) % 97 + if t % 10 < 5 { 0 } else { 300 }));
        }
        text.push('\n');
    }
    scratch.file(name, &text)
}

fn init(db: &str, scheme: &str) {
    let run = tpl(&["stream", "init", "--db", db, "--scheme", scheme, "--epsilon", "1", "--window", "6"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
}

/// The exported ledger, checked: steps 1..T in order, keys increasing, every window within ε.
fn ledger(db: &str) -> Value {
    let e = json(&["stream", "export", "--db", db]);
    let t = e["t"].as_array().unwrap();
    for (i, v) in t.iter().enumerate() {
        assert_eq!(v.as_u64(), Some(i as u64 + 1), "steps in order, none twice");
    }
    let keys: Vec<i64> = e["key"].as_array().unwrap().iter().map(|k| k.as_i64().unwrap()).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys increase: {keys:?}");
    assert!(num(&e, "max_window_budget") <= 1.0);
    let status = json(&["stream", "status", "--db", db]);
    assert!(num(&status, "max_window_spend") <= 1.0);
    assert_eq!(status["steps"].as_u64(), Some(t.len() as u64));
    e
}

/// A scratch folder named `name` holding a stream `s.db` created with `scheme`, and the
/// stream's path.
fn new_stream(name: &str, scheme: &str) -> (Scratch, String) {
    let scratch = Scratch::new(name);
    let db = scratch.path("s.db");
    init(&db, scheme);
    (scratch, db)
}

/// The releases of steps 1..n of an export.
fn releases(e: &Value) -> Vec<Value> {
    e["releases"].as_array().unwrap().clone()
}

#[test]
fn init_push_status_export_round_trip() {
    let (scratch, db) = new_stream("stream-round-trip", "bd");
    let c = counts_file(&scratch, "c.csv", 0, 20, 4);
    let pushed = json(&["stream", "push", "--db", &db, "--counts", &c]);
    assert_eq!(nums(&pushed, "budget").len(), 20);
    assert!(pushed["replayed"].as_array().unwrap().iter().all(|r| r == false));
    // The same file again: every step returned as stored, nothing spent, same releases.
    let again = json(&["stream", "push", "--db", &db, "--counts", &c]);
    assert!(again["replayed"].as_array().unwrap().iter().all(|r| r == true));
    assert_eq!(again["releases"], pushed["releases"]);
    // An appended file: only the new steps spend.
    let more = counts_file(&scratch, "more.csv", 0, 25, 4);
    let third = json(&["stream", "push", "--db", &db, "--counts", &more]);
    let replayed: Vec<bool> = third["replayed"].as_array().unwrap().iter().map(|r| r == true).collect();
    assert_eq!(replayed.iter().filter(|&&r| r).count(), 20);
    let status = json(&["stream", "status", "--db", &db]);
    for field in ["scheme", "epsilon", "window", "sensitivity", "sampler", "alpha", "budgets", "published"] {
        assert!(status.get(field).is_some(), "status has {field}");
    }
    assert_eq!(status["steps"], 25);
    assert!(status["leakage"]["realized"].is_null() && status["leakage"]["guaranteed"].is_null());
    let e = ledger(&db);
    assert_eq!(releases(&e)[..20], releases(&pushed)[..]);
    // The CSV export is tpl release's layout: postprocess reads it.
    let (header, rows) = csv(&["stream", "export", "--db", &db]);
    assert_eq!(&header[..4], ["timestamp_bucket", "published", "budget", "publication_budget"]);
    assert_eq!(rows.len(), 25);
    // With --interval, export and push add the raw releases' intervals (a retried push too).
    let with = json(&["stream", "export", "--db", &db, "--interval", "0.9"]);
    assert_eq!(with["interval"], 0.9);
    assert_eq!(with["lower"].as_array().unwrap().len(), 25);
    let retried = json(&["stream", "push", "--db", &db, "--counts", &c, "--interval", "0.9"]);
    assert_eq!(retried["upper"].as_array().unwrap()[..], with["upper"].as_array().unwrap()[..20]);
    let (header, _) = csv(&["stream", "export", "--db", &db, "--interval", "0.5"]);
    assert!(header.iter().any(|h| h == "lo_c3") && header.last().unwrap() == "hi_c3", "{header:?}");
    // A conflicting key: exit 2, the line named, nothing changed.
    let conflict = scratch.file("conflict.csv", "timestamp_bucket,c0,c1,c2,c3\n3,1,1,1,1\n");
    bad_input(&["stream", "push", "--db", &db, "--counts", &conflict], &["conflict.csv:2", "key 3"], &[]);
    assert_eq!(ledger(&db), e);
    // Flags that contradict the stored parameters.
    bad_input(&["stream", "push", "--db", &db, "--counts", &c, "--epsilon", "2"], &["--epsilon 2"], &[]);
    // init refuses an existing file.
    bad_input(
        &["stream", "init", "--db", &db, "--scheme", "bd", "--epsilon", "1", "--window", "6"],
        &["already exists"],
        &[],
    );
}

#[test]
fn the_ais_week_with_matrices_audits_realised_leakage() {
    let scratch = Scratch::new("stream-ais");
    let db = scratch.path("s.db");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/ais_nyharbor_week_5min");
    let (pb, pf) = (format!("{data}/transition_backward.csv"), format!("{data}/transition_forward.csv"));
    let run = tpl(&cmd(
        "stream init --db {} --scheme pba --epsilon 1 --window 12 --backward {} --forward {} --alpha 2",
        &[&db, &pb, &pf],
    ));
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let all = std::fs::read_to_string(format!("{data}/counts.csv")).unwrap();
    let head: String = all.lines().take(41).map(|l| format!("{l}\n")).collect();
    let c = scratch.file("c.csv", &head);
    json(&["stream", "push", "--db", &db, "--counts", &c]);
    let status = json(&["stream", "status", "--db", &db]);
    let realized = &status["leakage"]["realized"];
    assert!(realized["max_tpl"].as_f64().unwrap() <= 2.0, "{status}");
    assert!(realized["max_window_leakage"].as_f64().is_some());
    assert_eq!(status["alpha"], 2.0);
    // The table states both figures, the guaranteed one as the JSON has it.
    let guaranteed = status["leakage"]["guaranteed"]["max_tpl"].as_f64().unwrap();
    let table = tpl(&["stream", "status", "--db", &db]);
    assert!(table.stdout.contains("Realised leakage of the budgets spent"), "{}", table.stdout);
    let line = table.stdout.lines().find(|l| l.starts_with("Guaranteed over every run")).unwrap_or_default();
    let shown: f64 = line
        .split("max TPL ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    assert!((shown - guaranteed).abs() <= 1e-5 * guaranteed, "{}", table.stdout);
}

#[test]
fn files_that_are_not_streams_are_refused_and_left_alone() {
    let scratch = Scratch::new("stream-bad-files");
    let c = counts_file(&scratch, "c.csv", 0, 5, 3);
    let check = |db: &str, needle: &str| {
        let before = std::fs::read(db).unwrap();
        for args in [
            vec!["stream", "push", "--db", db, "--counts", &c],
            vec!["stream", "status", "--db", db],
            vec!["stream", "export", "--db", db],
        ] {
            bad_input(&args, &[db, needle], &[]);
        }
        assert_eq!(std::fs::read(db).unwrap(), before, "{db} unchanged");
    };
    // Random bytes.
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let random = scratch.path("random.db");
    std::fs::write(&random, &noise).unwrap();
    check(&random, "not a tpl stream");
    // Another program's SQLite database.
    let other = scratch.path("other.db");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);").unwrap();
    }
    check(&other, "another program");
    // A truncated stream.
    let db = scratch.path("s.db");
    init(&db, "uniform");
    let many = counts_file(&scratch, "many.csv", 0, 400, 20);
    json(&["stream", "push", "--db", &db, "--counts", &many]);
    let bytes = std::fs::read(&db).unwrap();
    let cut = scratch.path("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    check(&cut, "truncated");
    // A stream from a newer format version.
    let newer = scratch.path("newer.db");
    std::fs::write(&newer, &bytes).unwrap();
    rusqlite::Connection::open(&newer).unwrap().pragma_update(None, "user_version", 99).unwrap();
    check(&newer, "version 99");
    // No file: nothing created.
    let missing = scratch.path("missing.db");
    bad_input(&["stream", "push", "--db", &missing, "--counts", &c], &["missing.db"], &[]);
    assert!(!std::path::Path::new(&missing).exists());
}

#[test]
fn a_read_only_stream_is_refused_and_left_alone() {
    let (scratch, db) = new_stream("stream-read-only", "uniform");
    let c = counts_file(&scratch, "c.csv", 0, 3, 2);
    let mut perms = std::fs::metadata(&db).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&db, perms).unwrap();
    if std::fs::OpenOptions::new().write(true).open(&db).is_ok() {
        // Superuser: permissions do not bind, so there is no read-only file to test.
        return;
    }
    let before = std::fs::read(&db).unwrap();
    bad_input(&["stream", "push", "--db", &db, "--counts", &c], &["read-only"], &[]);
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // Reading still works.
    assert_eq!(json(&["stream", "status", "--db", &db])["steps"], 0);
}

/// A push of `counts` to `db`, running.
fn spawn_push(db: &str, counts: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_tpl"))
        .args(["stream", "push", "--db", db, "--counts", counts, "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_push_killed_at_random_instants_leaves_a_valid_ledger() {
    let (scratch, db) = new_stream("stream-crash", "ba");
    let steps = 3000;
    let c = counts_file(&scratch, "c.csv", 0, steps, 8);
    let mut seen: Vec<Value> = Vec::new();
    let mut x = u64::from(std::process::id());
    for _ in 0..6 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut child = spawn_push(&db, &c);
        std::thread::sleep(Duration::from_millis(5 + (x >> 33) % 40));
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        let e = ledger(&db);
        let now = releases(&e);
        // Stored releases never change.
        assert_eq!(now[..seen.len().min(now.len())], seen[..seen.len().min(now.len())]);
        assert!(now.len() >= seen.len(), "steps are never lost");
        seen = now;
    }
    assert!(!seen.is_empty() && seen.len() < steps, "the kills fell mid-stream: {} steps", seen.len());
    // Re-pushing finishes the stream; stored steps spend nothing and keep their releases.
    let out = json(&["stream", "push", "--db", &db, "--counts", &c]);
    let replayed = out["replayed"].as_array().unwrap().iter().filter(|r| **r == true).count();
    assert_eq!(replayed, seen.len());
    let e = ledger(&db);
    assert_eq!(releases(&e).len(), steps);
    assert_eq!(releases(&e)[..seen.len()], seen[..]);
    assert_eq!(releases(&e), releases(&out));
}

#[test]
fn concurrent_pushes_make_one_valid_stream() {
    let (scratch, db) = new_stream("stream-concurrent", "bd");
    let c = counts_file(&scratch, "c.csv", 0, 150, 6);
    let children: Vec<_> = (0..3).map(|_| spawn_push(&db, &c)).collect();
    let outputs: Vec<_> = children.into_iter().map(|ch| ch.wait_with_output().unwrap()).collect();
    let e = ledger(&db);
    assert_eq!(releases(&e).len(), 150);
    for out in outputs {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        // Every process printed the one release recorded for each step.
        assert_eq!(releases(&v), releases(&e));
    }
}

/// A bad row in the middle of a counts file: the valid steps before it are recorded and
/// stand, the bad row is named (exit 2, one line), and pushing the fixed file finishes the
/// stream without spending anything again for the recorded steps.
#[test]
fn a_bad_row_mid_file_keeps_the_steps_before_it_and_is_named() {
    let scratch = Scratch::new("stream-bad-row");
    let db = scratch.path("s.db");
    init(&db, "uniform");
    let good = counts_file(&scratch, "good.csv", 0, 8, 3);
    let text = std::fs::read_to_string(&good).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[6] = "5,1,x,3".into(); // line 7 of the file: the step with key 5
    let bad = scratch.file("bad.csv", &(lines.join("\n") + "\n"));
    bad_input(&["stream", "push", "--db", &db, "--counts", &bad], &["bad.csv:7", "5 valid steps"], &["x"]);
    let status = json(&["stream", "status", "--db", &db]);
    assert_eq!(status["steps"].as_u64(), Some(5), "the steps before the bad row stand");
    let before = releases(&ledger(&db));
    let run = json(&["stream", "push", "--db", &db, "--counts", &good]);
    let replayed: Vec<bool> =
        run["replayed"].as_array().unwrap().iter().map(|v| v.as_bool().unwrap()).collect();
    assert_eq!(replayed, [true, true, true, true, true, false, false, false]);
    let after = releases(&ledger(&db));
    assert_eq!(after.len(), 8);
    assert_eq!(after[..5], before[..], "stored releases never change");
}
