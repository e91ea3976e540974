//! `tpl stream`: the round trip init → push → status → export, files that are not streams,
//! damaged ledgers, keys and refused steps (processes and permissions: `stream_processes.rs`).

mod common;

use common::stream::*;
use common::*;

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
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/ais_nyharbor_week_5min");
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

/// Runs `sql` on the stream file (a tampered copy: the checks must catch it), past the
/// file's own CHECK constraints as a hand edit can be.
fn tamper(db: &str, sql: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(&format!("PRAGMA ignore_check_constraints = ON; {sql}")).unwrap();
}

/// A `bd` stream with matrices and α = 1.5, 30 steps pushed: the ledger the tamper tests edit.
fn audited_stream(name: &str) -> (Scratch, String) {
    let scratch = Scratch::new(name);
    let db = scratch.path("s.db");
    let pb = scratch.file("pb.csv", "0.8 0.2\n0.2 0.8\n");
    let pf = scratch.file("pf.csv", "0.8 0.2\n0.1 0.9\n");
    tpl_ok(&cmd(
        "stream init --db {} --scheme bd --epsilon 1 --window 5 --backward {} --forward {} --alpha 1.5",
        &[&db, &pb, &pf],
    ));
    let c = counts_file(&scratch, "c.csv", 0, 30, 2);
    tpl_ok(&["stream", "push", "--db", &db, "--counts", &c]);
    (scratch, db)
}

#[test]
fn status_and_export_refuse_a_damaged_ledger() {
    for (what, sql, needle) in [
        ("a budget over max_spend at step 1", "UPDATE steps SET publication = 5.0 WHERE t = 1", "step 1"),
        ("a window over ε (ε lowered)", "UPDATE params SET epsilon = 0.5", "damaged"),
        ("a missing step", "DELETE FROM steps WHERE t = 3", "step 3 is missing"),
        (
            "a key that does not increase",
            "UPDATE steps SET key = -1 WHERE t = 5",
            "step 5: key -1 is negative",
        ),
        ("the scheme", "UPDATE params SET scheme = 'laplace'", "step 1: the history's chain"),
    ] {
        let (_scratch, db) = audited_stream("stream-damaged");
        tamper(&db, sql);
        for command in ["status", "export"] {
            let run = bad_input(&["stream", command, "--db", &db], &["damaged stream", needle], &[]);
            assert!(run.stderr.contains("s.db"), "{what}: {}", run.describe());
        }
    }
}

#[test]
fn status_reports_the_audit_of_the_stored_budgets_not_a_stored_leakage() {
    let (_scratch, db) = audited_stream("stream-realized");
    let before = json(&["stream", "status", "--db", &db]);
    // The leakage stored with each step is not what status reports: it audits the budgets.
    tamper(&db, "UPDATE steps SET max_tpl = 99, max_window_leakage = 99");
    // The history's chain names the edit …
    bad_input(&["stream", "status", "--db", &db], &["damaged stream", "step 1: the history's chain"], &[]);
    // … and an editor who recomputes it still cannot make status report the stored numbers.
    tpl_stream::rechain(std::path::Path::new(&db)).unwrap();
    let after = json(&["stream", "status", "--db", &db]);
    assert_eq!(after["leakage"]["realized"], before["leakage"]["realized"]);
    assert!(num(&after["leakage"]["realized"], "max_tpl") <= 1.5);
}

#[test]
fn init_refuses_a_window_the_file_cannot_store() {
    let scratch = Scratch::new("stream-window");
    let db = scratch.path("s.db");
    bad_input(
        &cmd("stream init --db {} --scheme uniform --epsilon 1 --window 18446744073709551615", &[&db]),
        &["--window"],
        &["18446744073709551615"],
    );
    assert!(!std::path::Path::new(&db).exists());
}

#[test]
fn init_refuses_parameters_under_which_step_one_is_never_released() {
    let scratch = Scratch::new("stream-first");
    let db = scratch.path("s.db");
    let pb = scratch.file("pb.csv", "0.8 0.2\n0.2 0.8\n");
    bad_input(
        &["stream", "init", "--db", &db, "--scheme", "bd", "--epsilon", "1e-300", "--window", "2"],
        &["--epsilon", "step 1 could never be released"],
        &[],
    );
    bad_input(
        &cmd(
            "stream init --db {} --scheme laplace --epsilon 1 --window 5 --backward {} --alpha 0.5",
            &[&db, &pb],
        ),
        &["--alpha", "step 1 could never be released"],
        &["0.5"],
    );
    assert!(!std::path::Path::new(&db).exists());
    // At the edge: α equal to step 1's leakage is accepted, and step 1 is released.
    tpl_ok(&cmd(
        "stream init --db {} --scheme laplace --epsilon 1 --window 5 --backward {} --alpha 1",
        &[&db, &pb],
    ));
    let c = counts_file(&scratch, "c.csv", 0, 1, 2);
    assert_eq!(json(&["stream", "push", "--db", &db, "--counts", &c])["published"][0], true);
}

#[test]
fn a_first_step_refused_by_the_stream_names_the_counts_file_and_line() {
    let (scratch, db) = stream_with_backward(
        "stream-first-line",
        "0.8 0.2\n0.2 0.8\n",
        "--scheme laplace --epsilon 1 --window 5 --alpha 1.5",
    );
    // A stream whose α a later tpl would refuse at init (written by hand here).
    tamper(&db, "UPDATE params SET alpha = 0.5");
    let c = counts_file(&scratch, "c.csv", 0, 3, 2);
    bad_input(&["stream", "push", "--db", &db, "--counts", &c], &["c.csv:2:", "step 1: not released"], &[]);
}

#[test]
fn push_on_a_float_stream_warns_once_that_it_is_not_release_grade() {
    let scratch = Scratch::new("stream-float");
    let db = scratch.path("s.db");
    tpl_ok(&cmd("stream init --db {} --scheme uniform --epsilon 1 --window 2 --sampler float", &[&db]));
    let c = scratch.file("c.csv", "1.5,2\n3,4.25\n");
    let run = tpl_ok(&["stream", "push", "--db", &db, "--counts", &c, "--append", "--format", "csv"]);
    assert_eq!(run.stderr.matches("NOT release-grade").count(), 1, "{}", run.describe());
    assert!(
        run.stderr.starts_with("tpl: warning: --sampler float is NOT release-grade"),
        "{}",
        run.describe()
    );
}

#[test]
fn status_table_says_alpha_is_enforced_next_to_the_guaranteed_bound() {
    let (_scratch, db) = audited_stream("stream-alpha-table");
    let text = table(&["stream", "status", "--db", &db]);
    let line = text.lines().find(|l| l.starts_with("Guaranteed")).unwrap_or_default();
    assert!(
        line.contains("α = 1.5 is enforced before every draw, so no run of this stream exceeds it"),
        "{text}"
    );
}

#[test]
fn push_names_an_out_of_range_count_as_typed_and_by_column() {
    let (scratch, db) = new_stream("stream-huge", "uniform");
    let c = scratch.file("huge.csv", "9007199254740993,1\n");
    bad_input(
        &["stream", "push", "--db", &db, "--counts", &c, "--append"],
        &["huge.csv:1:", "column 1"],
        &["9007199254740993"],
    );
    let f = scratch.file("frac.csv", "timestamp_bucket,c0,c1\n0,1,2\n1,3,1.5\n");
    bad_input(&["stream", "push", "--db", &db, "--counts", &f], &["frac.csv:3:", "column 3"], &["1.5"]);
}

#[test]
fn laplace_tables_promise_epsilon_per_step_and_replays_and_exports_say_what_they_are() {
    let (scratch, db) = new_stream("stream-laplace-table", "laplace");
    let c = counts_file(&scratch, "c.csv", 0, 1, 2);
    let first = table(&["stream", "push", "--db", &db, "--counts", &c]);
    assert!(first.contains("1 step new") && first.contains(": 1 step, 1 fresh publication ("), "{first}");
    assert!(first.contains("(ε = 1 per step, event level)") && !first.contains("window"), "{first}");
    let status = table(&["stream", "status", "--db", &db]);
    assert!(status.contains("ε = 1 per step (event level)") && status.contains("1 step ("), "{status}");
    assert!(!status.contains("per window"), "{status}");
    let again = table(&["stream", "push", "--db", &db, "--counts", &c]);
    assert!(again.contains("every step was stored already: nothing spent"), "{again}");
    assert!(!again.contains("spends at most 0"), "{again}");
    let export = table(&["stream", "export", "--db", &db]);
    assert!(export.starts_with("Every step of the stream") && !export.contains("new"), "{export}");
}

#[test]
fn stream_errors_name_the_file_and_what_is_wrong() {
    let scratch = Scratch::new("stream-errors");
    let missing = scratch.path("no-such-folder/s.db");
    let run = bad_input(
        &["stream", "init", "--db", &missing, "--scheme", "bd", "--epsilon", "1", "--window", "2"],
        &["no-such-folder", "does not exist"],
        &[],
    );
    assert!(!run.stderr.contains("read-only") && !run.stderr.contains("push"), "{}", run.describe());
    let plan = scratch.file("plan.txt", "0.6\n0.6\n");
    let db = scratch.path("p.db");
    bad_input(
        &cmd("stream init --db {} --scheme planned --epsilon 1 --window 2 --budgets {}", &[&db, &plan]),
        &["plan.txt: budget plan, step 2"],
        &[],
    );
    std::fs::create_dir(scratch.dir.join("adir")).unwrap();
    bad_input(&["stream", "status", "--db", &scratch.path("adir")], &["adir", "directory"], &[]);
}

/// Regression: a counts file without `timestamp_bucket` got keys "last + 1", so pushing it
/// again released every row again and spent ε again. It is refused unless `--append` asks
/// for exactly that.
#[test]
fn an_unkeyed_counts_file_is_pushed_only_with_append() {
    let (scratch, db) = new_stream("stream-unkeyed", "uniform");
    let c = scratch.file("c.csv", "1,2\n3,4\n");
    bad_input(
        &["stream", "push", "--db", &db, "--counts", &c],
        &["c.csv: no timestamp_bucket column", "--append"],
        &[],
    );
    assert_eq!(json(&["stream", "status", "--db", &db])["steps"], 0);
    tpl_ok(&["stream", "push", "--db", &db, "--counts", &c, "--append"]);
    assert_eq!(json(&["stream", "status", "--db", &db])["steps"], 2);
}

/// Regression: a stream with 2-state matrices took counts of 3 cells and audited its α on
/// the wrong model; now the row is refused, naming the line.
#[test]
fn push_refuses_counts_of_another_width_than_the_matrices() {
    let (scratch, db) = stream_with_backward(
        "stream-width",
        "0.9,0.1\n0.2,0.8\n",
        "--scheme pba --epsilon 1 --window 3 --alpha 5",
    );
    let c = scratch.file("c.csv", "timestamp_bucket,c0,c1,c2\n1,1,2,3\n");
    bad_input(&["stream", "push", "--db", &db, "--counts", &c], &["c.csv:2:", "3 cells", "2 states"], &[]);
    assert_eq!(json(&["stream", "status", "--db", &db])["steps"], 0);
}

/// `init` creates the stream and its key readable by their owner only, says so, and keeps
/// the key elsewhere when asked; `rekey` replaces it and a retry of an earlier key is then
/// refused; an `init` whose report cannot be written leaves no stream behind.
#[test]
fn init_keeps_the_key_apart_rekey_rotates_it_and_a_failed_init_creates_nothing() {
    let scratch = Scratch::new("stream-key");
    let db = scratch.path("s.db");
    let key = scratch.path("elsewhere.key");
    let text = table(&cmd("stream init --db {} --scheme bd --epsilon 1 --window 3 --key {}", &[&db, &key]));
    assert!(text.contains("readable by their owner only") && text.contains("elsewhere.key"), "{text}");
    #[cfg(unix)]
    for file in [&db, &key] {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600, "{file}");
    }
    let c = counts_file(&scratch, "c.csv", 0, 3, 2);
    bad_input(&["stream", "push", "--db", &db, "--counts", &c], &["s.db.key", "stream key", "missing"], &[]);
    tpl_ok(&["stream", "push", "--db", &db, "--counts", &c, "--key", &key]);
    let old = std::fs::read(&key).unwrap();
    let text = table(&["stream", "rekey", "--db", &db, "--key", &key]);
    assert!(text.contains("3 counts digests made with the old key were erased"), "{text}");
    assert_ne!(std::fs::read(&key).unwrap(), old);
    bad_input(
        &["stream", "push", "--db", &db, "--counts", &c, "--key", &key],
        &["c.csv:2:", "key 0 is already stored", "rotated"],
        &[],
    );
    #[cfg(target_os = "linux")]
    {
        let other = scratch.path("t.db");
        let stderr =
            tpl_to_full_device(&cmd("stream init --db {} --scheme bd --epsilon 1 --window 3", &[&other]));
        assert!(stderr.contains("was not created"), "{stderr}");
        assert!(
            !std::path::Path::new(&other).exists() && !std::path::Path::new(&format!("{other}.key")).exists()
        );
    }
}

/// Regression: a push that ran out of room said only SQLite's words; it now says how many
/// steps of the push were recorded before it (the file is limited here with `ulimit -f`).
#[cfg(target_os = "linux")]
#[test]
fn a_push_that_runs_out_of_room_says_how_many_steps_stand() {
    let (scratch, db) = new_stream("stream-full", "uniform");
    let c = counts_file(&scratch, "c.csv", 0, 400, 200);
    let script = format!(
        "trap '' XFSZ; ulimit -f 400; exec '{}' stream push --db '{db}' --counts '{c}' --format csv >/dev/null",
        env!("CARGO_BIN_EXE_tpl")
    );
    let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let steps = json(&["stream", "status", "--db", &db])["steps"].as_u64().unwrap();
    assert!(steps > 0 && steps < 400, "{steps} steps");
    assert!(stderr.contains(&format!("({steps} new steps of this push recorded before it)")), "{stderr}");
}
