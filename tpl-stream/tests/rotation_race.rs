//! A key rotation racing a long push ([`docs/stream.md`] §2): whichever commits first, no
//! counts digest under the retired key is ever written, every step recorded after the rotation
//! is digested under the new key (its retry replays), and every step before it has its digest
//! erased (its retry is refused as unverifiable, never as "other counts").

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use tpl_mechanisms::SchemeKind;
use tpl_stream::{DurableStream, StreamConfig, StreamError, StreamKey, default_key_path};

/// Steps a push records in one round: long enough that a rotation lands inside it.
const STEPS: i64 = 300;

fn counts(k: i64) -> [f64; 2] {
    [(k % 7) as f64, 5.0]
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

/// The stored counts digest of each step (`None`: erased).
fn digests(path: &Path) -> Vec<(i64, Option<Vec<u8>>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT key, counts_mac FROM steps ORDER BY t").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// One round: a push of `STEPS` steps in one thread, a rotation in another after `delay`
/// (before the push starts when `rekey_first`).
fn round(dir: &Path, i: usize, delay: Duration, rekey_first: bool) {
    let path = dir.join(format!("s{i}.db"));
    let key = default_key_path(&path);
    DurableStream::create(&path, &StreamConfig::new(SchemeKind::Uniform, 1.0, 4)).unwrap();
    let old = StreamKey::read(&key).unwrap();
    let pusher = {
        let path = path.clone();
        std::thread::spawn(move || {
            if rekey_first {
                std::thread::sleep(delay);
            }
            let mut s = DurableStream::open(&path).unwrap();
            for k in 1..=STEPS {
                s.push(Some(k), &counts(k)).unwrap();
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
    assert_eq!(stored.len() as i64, STEPS);
    for (k, digest) in &stored {
        assert!(
            !contains(&bytes, &old.digest(&counts(*k))),
            "round {i}: key {k}'s digest under the old key is on disk"
        );
        if let Some(d) = digest {
            assert_eq!(
                d[..],
                new.digest(&counts(*k))[..],
                "round {i}: key {k}'s digest is not the new key's"
            );
        }
    }
    // The erased ones are a prefix: the steps recorded before the rotation committed.
    let erased = stored.iter().take_while(|(_, d)| d.is_none()).count();
    assert!(stored[erased..].iter().all(|(_, d)| d.is_some()), "round {i}: erased digests after kept ones");
    let mut s = DurableStream::open(&path).unwrap();
    for (k, digest) in &stored {
        match (s.push(Some(*k), &counts(*k)), digest) {
            (Ok(p), Some(_)) => assert!(p.replayed, "round {i}: key {k} was released again"),
            (Err(StreamError::Unverifiable { key, .. }), None) => assert_eq!(key, *k),
            (other, _) => panic!("round {i}: the retry of key {k} gave {other:?}"),
        }
    }
    assert_eq!(s.status().unwrap().budgets.len() as i64, STEPS);
}

/// 100 rounds, a rotation landing at a random instant of the push (or before it starts).
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
    for k in 1..=STEPS {
        s.push(Some(k), &counts(k)).unwrap();
    }
    // The rotation lands anywhere in the push: delays up to the time a whole push takes.
    let push_time = timing.elapsed().as_micros() as u64;
    for i in 0..100 {
        let delay = Duration::from_micros(rng.random_range(0..=push_time.max(1)));
        round(dir.path(), i, delay, i % 4 == 3);
    }
}
