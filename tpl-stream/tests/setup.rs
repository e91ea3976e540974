//! The loss functions of a stream's matrices are computed once, when it is created, and kept
//! in the file: later processes read them (checked against their digest and their matrix)
//! instead of computing them, and give the same leakage; a file made before they were kept
//! computes them as it always did.

use std::path::PathBuf;

use tpl_core::test_util::forward_only;
use tpl_core::{Correlation, TransitionMatrix};
use tpl_mechanisms::SchemeKind;
use tpl_stream::{DurableStream, StreamConfig, StreamError};

/// A stream of `bd` (ε = 1, w = 3, α = 4) over two 3-state matrices, pushed three steps, in a
/// fresh folder.
fn stream() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let backward =
        TransitionMatrix::new(vec![vec![0.8, 0.1, 0.1], vec![0.2, 0.7, 0.1], vec![0.1, 0.2, 0.7]]).unwrap();
    let forward = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
    let mut config = StreamConfig::new(SchemeKind::Bd, 1.0, 3);
    config.correlation = Correlation::new(Some(backward), Some(forward)).unwrap();
    config.alpha = Some(4.0);
    DurableStream::create(&path, &config).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    for (key, counts) in [[5.0, 3.0, 2.0], [4.0, 4.0, 2.0], [1.0, 6.0, 3.0]].iter().enumerate() {
        s.push(Some(key as i64), counts).unwrap();
    }
    (dir, path)
}

fn sql(path: &PathBuf, statement: &str) {
    rusqlite::Connection::open(path).unwrap().execute_batch(statement).unwrap();
}

#[test]
fn the_kept_loss_functions_give_the_leakage_of_computed_ones() {
    let (_dir, path) = stream();
    let kept = DurableStream::open(&path).unwrap().status().unwrap();
    let guaranteed = kept.guaranteed().unwrap();
    assert!(kept.realized.is_some() && guaranteed.is_some());
    // The same file as format 2 (whose chain does not cover the kept functions, which are
    // then computed from the matrices): the same leakage, bit for bit.
    sql(&path, "PRAGMA user_version = 2;");
    tpl_stream::rechain(&path).unwrap();
    let computed = DurableStream::open(&path).unwrap().status().unwrap();
    assert_eq!(computed.format_version, 2);
    assert_eq!((&computed.budgets, &computed.published), (&kept.budgets, &kept.published));
    assert_eq!(computed.realized, kept.realized);
    assert_eq!(computed.guaranteed().unwrap(), guaranteed);
    // Without the table, a file of format 3 is one whose root changed: its chain breaks.
    let (_dir, path) = stream();
    sql(&path, "DROP TABLE loss_setup;");
    let e = DurableStream::open(&path).unwrap().status().unwrap_err();
    assert!(e.to_string().contains("step 1: the history's chain breaks"), "{e}");
}

#[test]
fn a_kept_function_that_does_not_match_its_digest_or_matrix_is_refused() {
    for edit in [
        "UPDATE loss_setup SET candidates = '[[0.1,0.9]]' WHERE side = 'backward';",
        "UPDATE loss_setup SET matrix_sha256 = 'ab' WHERE side = 'forward';",
        "DELETE FROM loss_setup WHERE side = 'forward';",
    ] {
        let (_dir, path) = stream();
        sql(&path, edit);
        match DurableStream::open(&path) {
            Err(StreamError::Corrupt { reason, .. }) => {
                assert!(reason.contains("kept loss function"), "{edit}: {reason}")
            }
            Err(other) => panic!("{edit}: {other}"),
            Ok(_) => panic!("{edit}: opened"),
        }
    }
}

#[test]
fn a_sparse_matrix_is_stored_sparse_and_read_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    // A ring of 2000 cells, smoothed: 4·10⁶ entries dense, a few per row stored.
    let n = 2000;
    let ring =
        (0..n).flat_map(|i| [(i, i, 0.5), (i, (i + 1) % n, 0.25), (i, (i + n - 1) % n, 0.25)]).collect();
    let matrix = TransitionMatrix::from_entries(n, ring).unwrap().smoothed(1e-4).unwrap();
    let mut config = StreamConfig::new(SchemeKind::Bd, 1.0, 3);
    config.correlation = Correlation::new(None, Some(matrix.clone())).unwrap();
    config.alpha = Some(8.0);
    DurableStream::create(&path, &config).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    s.push(Some(1), &vec![1.0; n]).unwrap();
    let status = s.status().unwrap();
    assert_eq!(status.config.correlation.forward(), Some(&matrix));
    assert!(status.config.correlation.forward().is_some_and(TransitionMatrix::is_sparse));
    let stored: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT length(forward) FROM params", [], |r| r.get(0))
        .unwrap();
    assert!(stored < 200_000, "{stored} bytes for the forward matrix");
}

/// A new stream at `path` of `scheme` (ε = 1, w = 3) over `n` cells that moves by
/// `smoothed_identity(n, 0.2)`, storing `map` estimates of a population `total`; and its matrix.
fn estimating(
    path: &std::path::Path,
    scheme: SchemeKind,
    n: usize,
    total: u64,
) -> (DurableStream, TransitionMatrix) {
    use tpl_postprocess::Estimator;
    let p = TransitionMatrix::smoothed_identity(n, 0.2).unwrap();
    let config = StreamConfig {
        correlation: Correlation::new(None, Some(p.clone())).unwrap(),
        estimation: Some(tpl_stream::Estimation { estimator: Estimator::CausalFilter, total }),
        ..StreamConfig::new(scheme, 1.0, 3)
    };
    DurableStream::create(path, &config).unwrap();
    (DurableStream::open(path).unwrap(), p)
}

/// Pushes `steps` steps of 3 cells that oscillate around 10 people each, every
/// `update_every` steps storing the estimates (and checking that exactly those were missing).
fn push_oscillating(s: &mut DurableStream, steps: usize, update_every: Option<usize>) {
    for t in 0..steps {
        s.push(None, &[10.0 + (t % 3) as f64, 10.0, 10.0 - (t % 3) as f64]).unwrap();
        if let Some(every) = update_every.filter(|every| (t + 1) % every == 0) {
            assert_eq!(s.update_estimates().unwrap().len(), every);
        }
    }
}

/// Fails unless the estimates and standard errors `s` stored are those `tpl-postprocess`'s
/// filter makes from its releases (forward matrix `p`, population `total`), step by step.
fn check_stored_estimates(s: &mut DurableStream, p: &TransitionMatrix, total: u64) {
    use tpl_postprocess::{Filter, FilterConfig};
    let (releases, fresh) = s.recorded_releases().unwrap();
    let config = FilterConfig { correlation: &forward_only(p), ..FilterConfig::new(total) };
    let mut f = Filter::new(releases[0].len(), config).unwrap();
    let want: Vec<(Vec<f64>, Option<Vec<f64>>)> = releases
        .iter()
        .zip(&fresh)
        .map(|(r, &e)| f.step(r, e).map(|s| (s.estimate, Some(s.std_error))).unwrap())
        .collect();
    let stored: Vec<(Vec<f64>, Option<Vec<f64>>)> =
        s.estimates().unwrap().into_iter().map(|e| (e.estimate.unwrap(), e.std_error)).collect();
    assert_eq!(stored, want);
}

/// A stream that stores estimates keeps, for every step, what `tpl-postprocess`'s filter makes
/// from the releases up to it; `update_estimates` adds only what is missing, and
/// `reestimated` runs any estimator over the whole stream.
#[test]
fn stored_estimates_are_the_filter_of_the_releases_up_to_each_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.db");
    let (mut s, p) = estimating(&path, SchemeKind::Bd, 3, 30);
    push_oscillating(&mut s, 12, Some(5));
    assert_eq!(s.update_estimates().unwrap().len(), 2);
    assert!(s.update_estimates().unwrap().is_empty());
    check_stored_estimates(&mut s, &p, 30);
    // Reopened, the same; and the whole stream smoothed on demand.
    let mut again = DurableStream::open(&path).unwrap();
    assert_eq!(again.estimates().unwrap().len(), 12);
    let smoothed = again.reestimated(tpl_postprocess::Estimator::Smooth, 30).unwrap();
    assert_eq!((smoothed.estimates.len(), smoothed.std_errors.len()), (12, 12));
    assert!(smoothed.estimates.iter().all(|x| (x.iter().sum::<f64>() - 30.0).abs() < 1e-9));
    assert!(smoothed.std_errors.iter().flatten().all(|s| s.is_finite() && *s > 0.0));
}

/// The filter's state kept between updates makes an update cost the new steps only; a state
/// that does not read back (or is not that of the estimates stored) is ignored: the filter
/// runs from step 1 and the estimates are the same.
#[test]
fn the_kept_filter_state_changes_no_estimate_and_a_damaged_one_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    let (mut s, p) = estimating(&path, SchemeKind::Uniform, 2, 20);
    let damage = |sql: &str| rusqlite::Connection::open(&path).unwrap().execute(sql, []).unwrap();
    for t in 0..30 {
        s.push(None, &[10.0 + (t % 4) as f64, 10.0 - (t % 4) as f64]).unwrap();
        s.update_estimates().unwrap();
        match t {
            14 => assert_eq!(damage("UPDATE estimate_state SET state = 'not a state'"), 1),
            21 => assert_eq!(damage("UPDATE estimate_state SET t = t - 1"), 1),
            _ => {}
        }
    }
    check_stored_estimates(&mut s, &p, 20);
}

/// A stream whose estimates were stored before standard errors were (no `std_error` column,
/// a state without them) reads as estimates without intervals, and its next update stores the
/// standard errors of every step, those a new stream would have.
#[test]
fn estimates_stored_without_standard_errors_get_them_at_the_next_update() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let (mut s, p) = estimating(&path, SchemeKind::Bd, 3, 30);
    push_oscillating(&mut s, 9, None);
    s.update_estimates().unwrap();
    drop(s);
    let old = rusqlite::Connection::open(&path).unwrap();
    old.execute_batch("ALTER TABLE estimates DROP COLUMN std_error; UPDATE estimate_state SET state = '{}'")
        .unwrap();
    drop(old);
    let mut s = DurableStream::open(&path).unwrap();
    let read = s.estimates().unwrap();
    assert_eq!(read.len(), 9);
    assert!(read.iter().all(|e| e.estimate.is_ok() && e.std_error.is_none()));
    assert_eq!(read[0].interval(0.9).unwrap(), None);
    // Nothing new to estimate: the update still stores what is missing.
    assert!(s.update_estimates().unwrap().is_empty());
    check_stored_estimates(&mut s, &p, 30);
    let (lo, hi) = s.estimates().unwrap()[8].interval(0.9).unwrap().unwrap();
    assert!(lo.iter().zip(&hi).all(|(l, h)| l <= h));
}

/// A row an earlier version stored with an estimate the filter no longer makes gets no
/// standard errors (they would belong to another estimate), for good: no NULL is left that
/// would make every later update run the filter from step 1.
#[test]
fn an_old_estimate_the_filter_no_longer_makes_gets_no_standard_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let (mut s, _) = estimating(&path, SchemeKind::Uniform, 2, 20);
    for t in 0..6 {
        s.push(None, &[10.0 + (t % 2) as f64, 10.0 - (t % 2) as f64]).unwrap();
    }
    s.update_estimates().unwrap();
    drop(s);
    let old = rusqlite::Connection::open(&path).unwrap();
    let other: Vec<u8> = [9.5f64, 10.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    old.execute("UPDATE estimates SET estimate = ?1 WHERE t = 4", [other]).unwrap();
    old.execute_batch("ALTER TABLE estimates DROP COLUMN std_error").unwrap();
    drop(old);
    let mut s = DurableStream::open(&path).unwrap();
    s.update_estimates().unwrap();
    let read = s.estimates().unwrap();
    let with: Vec<bool> = read.iter().map(|e| e.std_error.is_some()).collect();
    assert_eq!(with, [true, true, true, false, true, true]);
    drop(s);
    let nulls: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM estimates WHERE std_error IS NULL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(nulls, 0);
}

/// The leakage audit a process rebuilds on opening a stream with matrices is kept in the file
/// (table `audit_state`), so the next process records only the steps since into it; the
/// leakage it then records is what one process pushing every step records, bit for bit, and a
/// kept audit that does not read back or is not that of the recorded steps is ignored.
#[test]
fn the_kept_audit_gives_the_leakage_of_one_process_and_a_damaged_one_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let matrices = |config: &mut StreamConfig| {
        config.correlation = Correlation::new(
            Some(TransitionMatrix::smoothed_identity(3, 0.3).unwrap()),
            Some(TransitionMatrix::smoothed_identity(3, 0.2).unwrap()),
        )
        .unwrap();
    };
    // `uniform` spends the same at every step, whatever the noise: the leakage is fixed.
    let mut config = StreamConfig::new(SchemeKind::Uniform, 1.0, 3);
    matrices(&mut config);
    let counts = |t: usize| [5.0 + (t % 3) as f64, 3.0, 2.0];
    let one = dir.path().join("one.db");
    DurableStream::create(&one, &config).unwrap();
    let mut s = DurableStream::open(&one).unwrap();
    let want: Vec<Option<f64>> = (0..40).map(|t| s.push(None, &counts(t)).unwrap().record.max_tpl).collect();
    let many = dir.path().join("many.db");
    DurableStream::create(&many, &config).unwrap();
    let mut got = Vec::new();
    let kept_step = || -> Option<i64> {
        rusqlite::Connection::open(&many)
            .unwrap()
            .query_row("SELECT t FROM audit_state", [], |r| r.get(0))
            .ok()
    };
    for (batch, damage) in [
        (0..10, ""),
        (10..20, ""),
        (20..25, "UPDATE audit_state SET history = x'00'"),
        (25..30, "UPDATE audit_state SET chain = zeroblob(32)"),
        // Step 5's budget altered behind the chain's back: only a process that takes the kept
        // audit (after step 28) instead of recording steps 1..28 again still gives `want`.
        (30..40, "UPDATE steps SET test = test + 0.5 WHERE t = 5"),
    ] {
        if !damage.is_empty() {
            sql(&many, damage);
        }
        let mut s = DurableStream::open(&many).unwrap();
        got.extend(batch.map(|t| s.push(None, &counts(t)).unwrap().record.max_tpl));
        // The first push of a process keeps the audit after the steps before its window.
        if got.len() > 10 {
            assert!(kept_step().is_some_and(|t| t >= 2), "{:?}", kept_step());
        }
    }
    assert_eq!(
        got.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>(),
        want.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>()
    );
    assert_eq!(kept_step(), Some(30 - 2));
}

/// A process whose first push is a retry (a cron job pushing its whole file again) keeps
/// the audit too: before, the retry's transaction was dropped, and with it the audit it had
/// kept, so a stream pushed only that way never had one.
#[test]
fn a_process_whose_first_push_replays_keeps_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut config = StreamConfig::new(SchemeKind::Uniform, 1.0, 3);
    config.correlation =
        Correlation::new(None, Some(TransitionMatrix::smoothed_identity(3, 0.2).unwrap())).unwrap();
    DurableStream::create(&path, &config).unwrap();
    let mut s = DurableStream::open(&path).unwrap();
    for t in 0..20 {
        s.push(Some(t), &[t as f64, 3.0, 2.0]).unwrap();
    }
    drop(s);
    let kept = || -> Option<i64> {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("SELECT t FROM audit_state", [], |r| r.get(0))
            .ok()
    };
    assert_eq!(kept(), None);
    let mut s = DurableStream::open(&path).unwrap();
    assert!(s.push(Some(0), &[0.0, 3.0, 2.0]).unwrap().replayed);
    drop(s);
    assert_eq!(kept(), Some(20 - 2));
}
