//! `tpl stream` across processes and permissions: a read-only stream, a push killed at random
//! instants, concurrent pushes on one file, readers without write access.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::stream::*;
use common::*;
use serde_json::Value;

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

/// Waits until the stream holds at least `steps` committed steps (reading it as another
/// process would, read-only), or the push has exited.
fn wait_for_steps(db: &str, steps: usize, child: &mut std::process::Child) {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    loop {
        let committed = rusqlite::Connection::open_with_flags(db, flags)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM steps", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
        if committed as usize >= steps || child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// For `ba` (resumed past its prefix) and for `dsat` and `fast` (restored from their first
/// step at every open).
#[test]
fn a_push_killed_at_random_instants_leaves_a_valid_ledger() {
    for scheme in ["ba", "dsat", "fast"] {
        killed_at_random_instants(scheme);
    }
}

fn killed_at_random_instants(scheme: &str) {
    let (scratch, db) = new_stream(&format!("stream-crash-{scheme}"), scheme);
    let steps = 3000;
    let c = counts_file(&scratch, "c.csv", 0, steps, 8);
    let mut seen: Vec<Value> = Vec::new();
    let mut x = u64::from(std::process::id());
    for _ in 0..6 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        // The kill waits on an event, not a clock: the push has committed a random number of
        // further steps (1 to 200), whatever the machine's speed.
        let target = seen.len() + 1 + ((x >> 33) % 200) as usize;
        let mut child = spawn_push(&db, &c);
        wait_for_steps(&db, target, &mut child);
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        let e = ledger(&db);
        let now = releases(&e);
        // Stored releases never change.
        assert_eq!(now[..seen.len().min(now.len())], seen[..seen.len().min(now.len())]);
        assert!(now.len() >= seen.len(), "steps are never lost");
        seen = now;
    }
    assert!(
        !seen.is_empty() && seen.len() < steps,
        "{scheme}: the kills fell mid-stream: {} steps",
        seen.len()
    );
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

/// Whether permissions bind this process (they do not for the superuser).
fn permissions_bind(scratch: &Scratch) -> bool {
    let probe = scratch.file("probe", "");
    let mut perms = std::fs::metadata(&probe).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&probe, perms).unwrap();
    std::fs::OpenOptions::new().write(true).open(&probe).is_err()
}

#[test]
fn readers_without_write_access_leave_no_companions_and_read_a_read_only_folder() {
    use std::os::unix::fs::PermissionsExt;
    let (scratch, db) = new_stream("stream-reader", "bd");
    if !permissions_bind(&scratch) {
        eprintln!("skipped: running as the superuser, whom permissions do not bind");
        return;
    }
    let c = counts_file(&scratch, "c.csv", 0, 12, 2);
    tpl_ok(&["stream", "push", "--db", &db, "--counts", &c]);
    let expected = json(&["stream", "export", "--db", &db]);
    // A file this process cannot write, in a folder it can: nothing is left beside it.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(json(&["stream", "export", "--db", &db])["release"], expected["release"]);
    assert_eq!(json(&["stream", "status", "--db", &db])["steps"], 12);
    for suffix in ["-wal", "-shm"] {
        assert!(!std::path::Path::new(&format!("{db}{suffix}")).exists(), "{suffix} left behind");
    }
    // A writable file in a folder this process cannot write: readers still read.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&scratch.dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let status = tpl(&["stream", "status", "--db", &db, "--format", "json"]);
    let push = tpl(&["stream", "push", "--db", &db, "--counts", &c]);
    std::fs::set_permissions(&scratch.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(status.code, Some(0), "{}", status.describe());
    assert_eq!(stdout_json(&status)["steps"], 12);
    // A retry of stored steps writes nothing, yet a push needs the write-ahead log.
    assert_eq!(push.code, Some(2), "{}", push.describe());
    assert!(push.stderr.contains("read-only"), "{}", push.describe());
}

/// `tpl stream rekey` while a long `tpl stream push` runs, as two processes, the rotation at
/// several instants of the push: both exit 0, no counts digest under the retired key is left in
/// the file, and a push of the same file again replays every step recorded after the rotation
/// (it stops, exit 2, at the first step recorded before it, whose digest the rotation erased).
#[test]
fn a_rekey_during_a_push_leaves_no_digest_under_the_old_key() {
    let mut raced = 0;
    for (round, delay_ms) in [0u64, 40, 120, 300].into_iter().enumerate() {
        let (scratch, db) = new_stream(&format!("stream-rekey-race-{round}"), "uniform");
        let c = counts_file(&scratch, "c.csv", 0, 6000, 2);
        let key = format!("{db}.key");
        let old = std::fs::read_to_string(&key).unwrap();
        let push = spawn_push(&db, &c);
        std::thread::sleep(Duration::from_millis(delay_ms));
        tpl_ok(&["stream", "rekey", "--db", &db]);
        let out = push.wait_with_output().unwrap();
        assert!(out.status.success(), "round {round}: {}", String::from_utf8_lossy(&out.stderr));
        assert_ne!(std::fs::read_to_string(&key).unwrap(), old);
        let conn = rusqlite::Connection::open(&db).unwrap();
        let (steps, kept): (i64, i64) = conn
            .query_row("SELECT count(*), count(counts_mac) FROM steps", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        let first_kept: Option<i64> = conn
            .query_row("SELECT min(t) FROM steps WHERE counts_mac IS NOT NULL", [], |r| r.get(0))
            .unwrap();
        drop(conn);
        assert_eq!(steps, 6000);
        // Every kept digest is the new key's: a retry of those steps replays.
        if let Some(first) = first_kept {
            assert_eq!(kept, steps - first + 1, "round {round}: digests kept before the rotation");
            let lines: Vec<String> =
                std::fs::read_to_string(&c).unwrap().lines().map(str::to_string).collect();
            let tail =
                scratch.file("tail.csv", &format!("{}\n{}\n", lines[0], lines[first as usize..].join("\n")));
            let again = json(&["stream", "push", "--db", &db, "--counts", &tail]);
            assert!(again["replayed"].as_array().unwrap().iter().all(|r| r == true), "round {round}");
        }
        if first_kept != Some(1) {
            bad_input(&["stream", "push", "--db", &db, "--counts", &c], &["rotat"], &[]);
        }
        raced += usize::from(first_kept.is_some_and(|f| f > 1));
    }
    assert!(raced > 0, "no rotation landed inside a push");
}
