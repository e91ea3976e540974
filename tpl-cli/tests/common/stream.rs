//! Helpers of the `tpl stream` tests: counts files, streams made by `stream init`, the
//! exported ledger checked.

use serde_json::Value;

use super::*;

/// A keyed counts file of `steps` rows of `cells` integer counts, keys from `first`.
pub fn counts_file(scratch: &Scratch, name: &str, first: usize, steps: usize, cells: usize) -> String {
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

pub fn init(db: &str, scheme: &str) {
    let run = tpl(&["stream", "init", "--db", db, "--scheme", scheme, "--epsilon", "1", "--window", "6"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
}

/// The exported ledger, checked: steps 1..T in order, keys increasing, every window within ε.
pub fn ledger(db: &str) -> Value {
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
pub fn new_stream(name: &str, scheme: &str) -> (Scratch, String) {
    let scratch = Scratch::new(name);
    let db = scratch.path("s.db");
    init(&db, scheme);
    (scratch, db)
}

/// A new stream `s.db` in a scratch folder, made by `stream init` with the backward matrix
/// `pb` (written to `pb.csv`) and `flags` (split at spaces).
pub fn stream_with_backward(name: &str, pb: &str, flags: &str) -> (Scratch, String) {
    let scratch = Scratch::new(name);
    let db = scratch.path("s.db");
    let pb = scratch.file("pb.csv", pb);
    let mut args = cmd("stream init --db {} --backward {}", &[&db, &pb]);
    args.extend(flags.split_whitespace());
    tpl_ok(&args);
    (scratch, db)
}

/// The releases of steps 1..n of an export.
pub fn releases(e: &Value) -> Vec<Value> {
    e["releases"].as_array().unwrap().clone()
}
