//! What the stream file holds and who can learn what from it: the counts only as keyed
//! digests under a key kept outside the file, files readable by their owner only, an atomic
//! creation, and key rotation (which also upgrades streams of formats 1 and 2), also while a
//! push runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::{Rng, SeedableRng};

use sha2::{Digest, Sha256};
use tpl_core::Correlation;
use tpl_mechanisms::SchemeKind;
use tpl_stream::{DurableStream, StreamConfig, StreamError, StreamKey, StreamOptions, default_key_path};

fn config() -> StreamConfig {
    StreamConfig::new(SchemeKind::Uniform, 1.0, 4)
}

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    (dir, path)
}

/// The unkeyed SHA-256 of counts as format 1 stored it.
fn unkeyed(counts: &[f64]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update((counts.len() as u64).to_le_bytes());
    for c in counts {
        h.update(c.to_bits().to_le_bytes());
    }
    h.finalize().to_vec()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every byte the stream keeps on disk (the file and its write-ahead log).
fn on_disk(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    bytes.extend(std::fs::read(PathBuf::from(wal)).unwrap_or_default());
    bytes
}

/// Regression: the file stored an unkeyed SHA-256 of each step's counts (small counts were
/// recovered by trying candidates) and was created world-readable. Now the digest is an
/// HMAC under a key in a separate file, and both files are the owner's only.
#[test]
fn the_file_holds_no_digest_of_the_counts_without_the_key_and_only_its_owner_reads_it() {
    let (_dir, path) = temp_db();
    DurableStream::create(&path, &config()).unwrap();
    let key_path = default_key_path(&path);
    #[cfg(unix)]
    for file in [&path, &key_path] {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
            0o600,
            "{}",
            file.display()
        );
    }
    let mut s = DurableStream::open(&path).unwrap();
    let counts = [3.0, 1.0];
    s.push(Some(7), &counts).unwrap();
    let bytes = on_disk(&path);
    assert!(!contains(&bytes, &unkeyed(&counts)), "an unkeyed digest of the counts is in the file");
    let key = StreamKey::read(&key_path).unwrap();
    assert!(contains(&bytes, &key.digest(&counts)), "the keyed digest identifies the retry");
    assert!(!contains(&bytes, std::fs::read_to_string(&key_path).unwrap().trim().as_bytes()));
    assert!(s.push(Some(7), &counts).unwrap().replayed);
}

/// Without its key a stream is read but not pushed; another stream's key is refused.
#[test]
fn a_push_needs_the_streams_own_key() {
    let (dir, path) = temp_db();
    DurableStream::create(&path, &config()).unwrap();
    let other = dir.path().join("other.db");
    DurableStream::create(&other, &config()).unwrap();
    let key_path = default_key_path(&path);
    std::fs::remove_file(&key_path).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    let e = s.push(Some(1), &[1.0]).unwrap_err();
    assert!(matches!(&e, StreamError::Key { reason, .. } if reason.contains("missing")), "{e}");
    assert_eq!(s.status().unwrap().budgets.len(), 0);
    std::fs::copy(default_key_path(&other), &key_path).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    let e = s.push(Some(1), &[1.0]).unwrap_err();
    assert!(matches!(&e, StreamError::Key { reason, .. } if reason.contains("another stream")), "{e}");
    // A key kept elsewhere.
    let elsewhere = dir.path().join("keys").join("s.key");
    std::fs::create_dir(elsewhere.parent().unwrap()).unwrap();
    let third = dir.path().join("third.db");
    StreamOptions::new().key(&elsewhere).create(&third, &config()).unwrap();
    assert!(!default_key_path(&third).exists());
    assert!(DurableStream::open(&third).unwrap().push(Some(1), &[1.0]).is_err());
    StreamOptions::new().key(&elsewhere).open(&third).unwrap().push(Some(1), &[1.0]).unwrap();
}

/// A rotation gives a new key and erases every digest made with the old one: the old
/// digests are gone from the disk, an old key's retry is refused as unverifiable, and new
/// steps are pushed and retried under the new key.
#[test]
fn a_rotation_erases_the_old_digests_and_keys_new_steps() {
    let (_dir, path) = temp_db();
    DurableStream::create(&path, &config()).unwrap();
    let key_path = default_key_path(&path);
    let old = StreamKey::read(&key_path).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    for k in 1..=3 {
        s.push(Some(k), &[k as f64, 5.0]).unwrap();
    }
    let head = s.status().unwrap().chain_head;
    assert_eq!(head.as_ref().map(String::len), Some(64));
    drop(s);
    let done = DurableStream::rekey(&path, &key_path).unwrap();
    assert_eq!((done.erased, done.upgraded), (3, false));
    // The chain covers everything but the digests: a rotation leaves the history's head.
    assert_eq!(DurableStream::open(&path).unwrap().status().unwrap().chain_head, head);
    assert_ne!(StreamKey::read(&key_path).unwrap(), old);
    let bytes = on_disk(&path);
    for k in 1..=3 {
        assert!(!contains(&bytes, &old.digest(&[k as f64, 5.0])), "step {k}'s old digest is still on disk");
    }
    let mut s = DurableStream::open(&path).unwrap();
    let e = s.push(Some(2), &[2.0, 5.0]).unwrap_err();
    assert!(matches!(e, StreamError::Unverifiable { key: 2, step: 2 }), "{e}");
    let fourth = s.push(Some(4), &[4.0, 5.0]).unwrap();
    assert_eq!(s.push(Some(4), &[4.0, 5.0]).unwrap().record, fourth.record);
    assert_eq!(s.status().unwrap().budgets.len(), 4);
}

/// A rotation interrupted after the stream took the new key (it lies in `<key>.new`) is
/// completed by the next push.
#[test]
fn an_interrupted_rotation_is_completed_by_the_next_push() {
    let (_dir, path) = temp_db();
    DurableStream::create(&path, &config()).unwrap();
    let key_path = default_key_path(&path);
    let old = std::fs::read(&key_path).unwrap();
    DurableStream::rekey(&path, &key_path).unwrap();
    let new = std::fs::read(&key_path).unwrap();
    let mut pending = key_path.as_os_str().to_owned();
    pending.push(".new");
    std::fs::rename(&key_path, PathBuf::from(&pending)).unwrap();
    std::fs::write(&key_path, &old).unwrap();
    DurableStream::open(&path).unwrap().push(Some(1), &[1.0]).unwrap();
    assert_eq!(std::fs::read(&key_path).unwrap(), new);
    assert!(!PathBuf::from(pending).exists());
}

/// Turns a fresh format-2 stream with steps into what format 1 stored: unkeyed digests, no
/// chain, no key identifier.
fn as_format_one(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "ALTER TABLE steps RENAME COLUMN counts_mac TO counts_sha256;
         ALTER TABLE steps DROP COLUMN chain;
         DELETE FROM meta WHERE name = 'key_id';
         PRAGMA user_version = 1;",
    )
    .unwrap();
    let rows: Vec<i64> = conn
        .prepare("SELECT t FROM steps")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in rows {
        conn.execute(
            "UPDATE steps SET counts_sha256 = ?1 WHERE t = ?2",
            rusqlite::params![unkeyed(&[t as f64, 5.0]), t],
        )
        .unwrap();
    }
}

/// A stream of format 1 is read as it was, refused for pushes with the way out, and
/// upgraded by a rotation: its unkeyed digests erased, its history chained.
#[test]
fn a_format_one_stream_is_read_refused_for_pushes_and_upgraded_by_rekey() {
    let (_dir, path) = temp_db();
    DurableStream::create(&path, &config()).unwrap();
    let key_path = default_key_path(&path);
    let mut s = DurableStream::open(&path).unwrap();
    for k in 1..=3 {
        s.push(Some(k), &[k as f64, 5.0]).unwrap();
    }
    let before = s.steps().unwrap();
    // The upgrade chains the history as a stream of the current format would have.
    let chained_head = s.status().unwrap().chain_head;
    drop(s);
    std::fs::remove_file(&key_path).unwrap();
    as_format_one(&path);
    let mut s = DurableStream::open(&path).unwrap();
    assert_eq!(s.steps().unwrap(), before);
    assert_eq!((s.status().unwrap().format_version, s.status().unwrap().chain_head), (1, None));
    let e = s.push(Some(4), &[4.0, 5.0]).unwrap_err();
    assert!(matches!(e, StreamError::Unkeyed { .. }) && e.to_string().contains("tpl stream rekey"), "{e}");
    drop(s);
    let done = DurableStream::rekey(&path, &key_path).unwrap();
    assert_eq!((done.erased, done.upgraded), (3, true));
    assert!(!contains(&on_disk(&path), &unkeyed(&[2.0, 5.0])));
    let mut s = DurableStream::open(&path).unwrap();
    assert_eq!(s.steps().unwrap(), before);
    assert_eq!(s.status().unwrap().format_version, tpl_stream::FORMAT_VERSION);
    assert_eq!(s.status().unwrap().chain_head, chained_head);
    s.push(Some(4), &[4.0, 5.0]).unwrap();
    assert!(matches!(s.push(Some(3), &[3.0, 5.0]), Err(StreamError::Unverifiable { .. })));
    assert_eq!(s.steps().unwrap().len(), 4);
}

/// `create` builds the file elsewhere and links it into place complete: nothing is left
/// beside it, and a creation that fails (an existing key file) leaves no stream.
#[test]
fn creation_is_atomic_and_leaves_nothing_behind() {
    let (dir, path) = temp_db();
    std::fs::write(default_key_path(&path), "taken").unwrap();
    let e = DurableStream::create(&path, &config()).unwrap_err();
    assert!(matches!(e, StreamError::KeyExists { .. }), "{e}");
    assert!(!path.exists());
    std::fs::remove_file(default_key_path(&path)).unwrap();
    DurableStream::create(&path, &config()).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["s.db", "s.db.key"]);
    assert!(matches!(DurableStream::create(&path, &config()), Err(StreamError::Exists { .. })));
}

/// The temporary files of an `init` that was killed (their builder's lock is free) are
/// removed by the next `init` of the same stream, with their companions; those of another
/// target, and of a builder still at work (its lock held), stay.
#[test]
fn an_init_removes_what_a_killed_init_of_the_same_stream_left() {
    let (dir, path) = temp_db();
    let file = |name: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, b"left").unwrap();
        p
    };
    let killed = [
        file(".s.db.4242-17.building"),
        file(".s.db.4242-17.building-wal"),
        file(".s.db.4242-17.building-shm"),
    ];
    let working = file(".s.db.4343-18.building");
    let held = std::fs::File::open(&working).unwrap();
    held.lock().unwrap();
    let other = file(".t.db.4444-19.building");
    let backup = file(".s.db.bak.4545-20.building");
    DurableStream::create(&path, &config()).unwrap();
    for p in &killed {
        assert!(!p.exists(), "{} was left", p.display());
    }
    assert!(working.exists() && other.exists() && backup.exists());
    drop(held);
}

// A key rotation racing a long push (docs/stream.md §2): whichever commits first, no counts
// digest under the retired key is ever written, every step recorded after the rotation is
// digested under the new key (its retry replays), and every step before it has its digest
// erased (its retry is refused as unverifiable, never as "other counts").

/// Steps a push records in one round: long enough that a rotation lands inside it.
const RACE_STEPS: i64 = 300;

fn race_counts(k: i64) -> [f64; 2] {
    [(k % 7) as f64, 5.0]
}

/// The stored counts digest of each step (`None`: erased).
fn digests(path: &Path) -> Vec<(i64, Option<Vec<u8>>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT key, counts_mac FROM steps ORDER BY t").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// One round: a push of `RACE_STEPS` steps in one thread, a rotation in another after `delay`
/// (before the push starts when `rekey_first`).
fn round(dir: &Path, i: usize, delay: Duration, rekey_first: bool, format_two: bool) {
    let path = dir.join(format!("s{i}.db"));
    let key = default_key_path(&path);
    DurableStream::create(&path, &StreamConfig::new(SchemeKind::Uniform, 1.0, 4)).unwrap();
    if format_two {
        // A stream of format 2, which the rotation also upgrades under the running push.
        rusqlite::Connection::open(&path).unwrap().execute_batch("PRAGMA user_version = 2").unwrap();
    }
    let old = StreamKey::read(&key).unwrap();
    let pusher = {
        let path = path.clone();
        std::thread::spawn(move || {
            if rekey_first {
                std::thread::sleep(delay);
            }
            let mut s = DurableStream::open(&path).unwrap();
            for k in 1..=RACE_STEPS {
                s.push(Some(k), &race_counts(k)).unwrap();
            }
        })
    };
    if !rekey_first {
        std::thread::sleep(delay);
    }
    DurableStream::rekey(&path, &key).unwrap();
    pusher.join().unwrap();
    let new = StreamKey::read(&key).unwrap();
    assert_ne!(new, old);
    let bytes = on_disk(&path);
    let stored = digests(&path);
    assert_eq!(stored.len() as i64, RACE_STEPS);
    for (k, digest) in &stored {
        assert!(
            !contains(&bytes, &old.digest(&race_counts(*k))),
            "round {i}: key {k}'s digest under the old key is on disk"
        );
        if let Some(d) = digest {
            assert_eq!(
                d[..],
                new.digest(&race_counts(*k))[..],
                "round {i}: key {k}'s digest is not the new key's"
            );
        }
    }
    // The erased ones are a prefix: the steps recorded before the rotation committed.
    let erased = stored.iter().take_while(|(_, d)| d.is_none()).count();
    assert!(stored[erased..].iter().all(|(_, d)| d.is_some()), "round {i}: erased digests after kept ones");
    let mut s = DurableStream::open(&path).unwrap();
    for (k, digest) in &stored {
        match (s.push(Some(*k), &race_counts(*k)), digest) {
            (Ok(p), Some(_)) => assert!(p.replayed, "round {i}: key {k} was released again"),
            (Err(StreamError::Unverifiable { key, .. }), None) => assert_eq!(key, *k),
            (other, _) => panic!("round {i}: the retry of key {k} gave {other:?}"),
        }
    }
    assert_eq!(s.status().unwrap().budgets.len() as i64, RACE_STEPS);
}

/// 100 rounds, a rotation landing at a random instant of the push (or before it starts); in
/// one round of five the stream is of format 2, which the rotation upgrades.
#[test]
fn a_rotation_racing_a_push_leaves_no_digest_under_the_old_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(37);
    let timing = std::time::Instant::now();
    let mut s = DurableStream::open(&{
        let p = dir.path().join("timing.db");
        DurableStream::create(&p, &StreamConfig::new(SchemeKind::Uniform, 1.0, 4)).unwrap();
        p
    })
    .unwrap();
    for k in 1..=RACE_STEPS {
        s.push(Some(k), &race_counts(k)).unwrap();
    }
    // The rotation lands anywhere in the push: delays up to the time a whole push takes.
    let push_time = timing.elapsed().as_micros() as u64;
    for i in 0..100 {
        let delay = Duration::from_micros(rng.random_range(0..=push_time.max(1)));
        round(dir.path(), i, delay, i % 4 == 3, i % 5 == 4);
    }
}

/// A stream of format 2 (whose chain did not cover the kept loss functions) is read and
/// pushed to with its kept loss functions ignored — a forged one changes nothing — and
/// `rekey` upgrades it: the loss functions computed again, every link made from the root of
/// the current format, the chain head that of the stream had it been made so.
#[test]
fn a_format_two_stream_ignores_its_kept_loss_functions_until_rekey_upgrades_it() {
    let (_dir, path) = temp_db();
    let p = tpl_core::TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
    let config = StreamConfig {
        correlation: Correlation::new(None, Some(p)).unwrap(),
        alpha: Some(3.0),
        ..StreamConfig::new(SchemeKind::Uniform, 0.5, 3)
    };
    DurableStream::create(&path, &config).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    for k in 1..=4 {
        s.push(Some(k), &[k as f64, 5.0, 1.0]).unwrap();
    }
    let current = s.status().unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA user_version = 2").unwrap();
    drop(conn);
    tpl_stream::rechain(&path).unwrap();
    // A flat loss function with its digest recomputed: a format-2 reader does not use it.
    let flat = "[[0.0,0.0]]";
    let sha: String = Sha256::digest(flat.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE loss_setup SET candidates = ?1, candidates_sha256 = ?2", [flat, &sha])
        .unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    let old = s.status().unwrap();
    assert_eq!((old.format_version, old.realized), (2, current.realized));
    assert_ne!(old.chain_head, current.chain_head);
    drop(s);
    let done = DurableStream::rekey(&path, &default_key_path(&path)).unwrap();
    assert_eq!((done.erased, done.upgraded), (4, true));
    let mut s = DurableStream::open(&path).unwrap();
    let upgraded = s.status().unwrap();
    assert_eq!(upgraded.format_version, tpl_stream::FORMAT_VERSION);
    assert_eq!((upgraded.chain_head, upgraded.realized), (current.chain_head, current.realized));
    s.push(Some(5), &[5.0, 5.0, 1.0]).unwrap();
}

/// A handle opened before a rotation — one that has not pushed yet, and one that has, on a
/// stream of format 2 that the rotation upgrades — pushes after it under the new key, and
/// every reader finds the history whole.
#[test]
fn a_handle_opened_before_a_rotation_pushes_after_it() {
    for format_two in [false, true] {
        let (_dir, path) = temp_db();
        DurableStream::create(&path, &config()).unwrap();
        if format_two {
            rusqlite::Connection::open(&path).unwrap().execute_batch("PRAGMA user_version = 2").unwrap();
        }
        let key = default_key_path(&path);
        let mut fresh = DurableStream::open(&path).unwrap();
        let mut used = DurableStream::open(&path).unwrap();
        used.push(Some(1), &[1.0, 5.0]).unwrap();
        DurableStream::rekey(&path, &key).unwrap();
        let new = StreamKey::read(&key).unwrap();
        used.push(Some(2), &[2.0, 5.0]).unwrap();
        fresh.push(Some(3), &[3.0, 5.0]).unwrap();
        assert_eq!(used.status().unwrap().budgets.len(), 3);
        let status = DurableStream::open(&path).unwrap().status().unwrap();
        assert_eq!((status.format_version, status.budgets.len()), (tpl_stream::FORMAT_VERSION, 3));
        for (k, mac) in digests(&path) {
            assert_eq!(mac.is_some(), k > 1, "format two {format_two}: key {k}");
            if let Some(mac) = mac {
                assert_eq!(mac[..], new.digest(&[k as f64, 5.0])[..]);
            }
        }
    }
}
