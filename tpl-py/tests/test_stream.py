"""Stream: the durable stream of `tpl stream`, one file that the CLI and Python share."""

from __future__ import annotations

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, read_counts, read_matrix, same_bits, without_provenance


@pytest.fixture(scope="module")
def week(repo_data):
    return (
        read_counts(AIS / "counts.csv")[:48],
        read_matrix(AIS / "transition_backward.csv"),
        read_matrix(AIS / "transition_forward.csv"),
    )


def test_a_stream_pushed_from_python_reads_back_in_the_cli_as_python_sees_it(cli, tmp_path, week):
    counts, pb, pf = week
    path = tmp_path / "ais.db"
    s = tp.Stream.create(path, "bd", epsilon=1, window=12, backward=pb, forward=pf)
    pushed = [s.push(row, key=t) for t, row in enumerate(counts)]
    assert [p["t"] for p in pushed] == list(range(1, 49)) and not any(p["replayed"] for p in pushed)
    status = s.status()
    expected, _ = cli("stream", "status", "--db", path)
    for key in ["steps", "scheme", "epsilon", "window", "sensitivity", "sampler", "alpha", "refused", "last_key",
                "max_window_spend", "format_version", "chain_head", "version"]:
        assert status[key] == expected[key], key
    assert same_bits(status["budgets"], expected["budgets"])
    assert status["published"].tolist() == expected["published"]
    assert status["leakage"] == expected["leakage"]
    assert status["leakage"]["guaranteed"]["max_tpl"] >= status["leakage"]["realized"]["max_tpl"]
    assert status["max_window_spend"] <= 1.0
    exported, _ = cli("stream", "export", "--db", path)
    assert same_bits(np.array([p["release"] for p in pushed]), exported["releases"])
    again = tp.Stream.open(path).steps()
    assert same_bits(np.array([r["release"] for r in again]), exported["releases"])


def test_a_stream_created_by_the_cli_takes_pushes_from_python(cli, tpl_bin, tmp_path, week):
    import subprocess

    counts, _, _ = week
    path = tmp_path / "u.db"
    subprocess.run([str(tpl_bin), "stream", "init", "--db", path, "--scheme", "uniform", "--epsilon", "1",
                    "--window", "4"], check=True, capture_output=True)
    s = tp.Stream.open(path)
    for t, row in enumerate(counts[:6]):
        s.push(row, key=t)
    expected, _ = cli("stream", "status", "--db", path)
    assert expected["steps"] == 6 and same_bits(s.status()["budgets"], expected["budgets"])
    assert same_bits(expected["budgets"], np.full(6, 0.25))


def test_keys_make_a_retry_safe_and_refuse_what_would_release_twice(tmp_path):
    s = tp.Stream.create(tmp_path / "k.db", "laplace", epsilon=0.5, window=1)
    first = s.push([10, 3], key=5)
    again = s.push(np.array([10, 3], dtype=np.int32), key=5)
    assert again["replayed"] and same_bits(again["release"], first["release"])
    with pytest.raises(tp.TplError, match="different counts"):
        s.push([11, 3], key=5)
    with pytest.raises(tp.TplError, match="keys must increase"):
        s.push([11, 3], key=4)
    assert s.push([11, 3], key="next")["key"] == 6
    assert s.status()["steps"] == 2


def test_a_push_without_a_key_is_refused_unless_it_asks_to_append(tmp_path):
    # Regression: key=None appended after the last key, so a retry released (and spent) again.
    s = tp.Stream.create(tmp_path / "n.db", "uniform", epsilon=1, window=2)
    with pytest.raises(tp.TplError, match='key="next"'):
        s.push([1, 2])
    assert s.status()["steps"] == 0
    assert s.push([1, 2], key="next")["key"] == 1
    with pytest.raises(tp.TplError, match="key"):
        s.push([1, 2], key="later")


def test_counts_must_have_one_cell_per_state_of_the_matrices(tmp_path):
    # Regression: a stream with 2-state matrices took 3 cells and audited α on the wrong model.
    p = np.array([[0.9, 0.1], [0.2, 0.8]])
    s = tp.Stream.create(tmp_path / "w.db", "pba", epsilon=1, window=3, backward=p, alpha=5)
    with pytest.raises(tp.TplError, match="3 cells, but the stream's matrices have 2 states"):
        s.push([1, 2, 3], key=1)
    assert s.status()["steps"] == 0


def test_the_key_lives_apart_and_a_rotation_refuses_earlier_retries(tmp_path):
    import os
    import stat

    path, key = tmp_path / "r.db", tmp_path / "keys" / "r.key"
    key.parent.mkdir()
    s = tp.Stream.create(path, "bd", epsilon=1, window=3, key_file=key)
    for f in (path, key):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f
    assert not (tmp_path / "r.db.key").exists()
    s.push([4, 5], key=1)
    s.close()
    with pytest.raises(tp.TplError, match="stream key"):
        tp.Stream.open(path).push([4, 6], key=2)
    assert tp.Stream.rekey(path, key_file=key) == {"erased": 1, "upgraded": False}
    s = tp.Stream.open(path, key_file=key)
    with pytest.raises(tp.TplError, match="rotated"):
        s.push([4, 5], key=1)
    assert s.push([4, 6], key=2)["t"] == 2 and s.status()["format_version"] == 4


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda p: tp.Stream.open(p / "missing.db"), "no such stream"),
        (lambda p: tp.Stream.create(p / "s.db", "pba", epsilon=1, window=2), "pba"),
        (lambda p: tp.Stream.create(p / "s.db", "magic", epsilon=1, window=2), "scheme"),
        (lambda p: tp.Stream.create(p / "s.db", "bd", epsilon=0, window=2), "epsilon"),
        (lambda p: tp.Stream.create(p / "s.db", "bd", epsilon=1, window=0), "window"),
        (lambda p: tp.Stream.create(p / "s.db", "planned", epsilon=1, window=2), "budgets"),
    ],
)
def test_bad_streams_are_refused_with_a_message(tmp_path, call, words):
    with pytest.raises(tp.TplError) as e:
        call(tmp_path)
    assert words in str(e.value)


def test_an_existing_file_is_never_written_over_and_bad_rows_are_refused(tmp_path):
    s = tp.Stream.create(tmp_path / "s.db", "bd", epsilon=1, window=2)
    with pytest.raises(tp.TplError, match="already exists"):
        tp.Stream.create(tmp_path / "s.db", "bd", epsilon=1, window=2)
    for bad, words in [([1.5, 2], "integer"), ([-1, 2], "negative"), ([[1, 2]], "1-D"), (["a"], "dtype")]:
        with pytest.raises(tp.TplError, match=words):
            s.push(bad, key=1)
    assert s.status()["steps"] == 0


def test_a_handle_serves_every_thread(tmp_path):
    """Regression: a handle refused every thread but the one that opened it (the native
    stream could not move between threads). Now threads share a handle, one call at a time,
    and other threads run while a push writes."""
    import threading

    s = tp.Stream.create(tmp_path / "t.db", "uniform", epsilon=1, window=2)
    errors = []

    def push_from(first):
        try:
            for key in range(first, first + 20):
                s.push([1, key % 3], key=key)
        except Exception as e:  # noqa: BLE001 - the assertion below reports it
            errors.append(e)

    threads = [threading.Thread(target=push_from, args=(k,)) for k in (1, 101, 201)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Keys must rise: a thread whose key fell behind another's is refused, never recorded twice.
    assert all(isinstance(e, tp.TplError) and "key" in str(e) for e in errors), errors
    status = s.status()
    assert status["steps"] >= 20 and status["max_window_spend"] <= 1
    assert [r["t"] for r in s.steps()] == list(range(1, status["steps"] + 1))


def test_close_and_with_let_the_file_go(tmp_path):
    path = tmp_path / "c.db"
    with tp.Stream.create(path, "bd", epsilon=1, window=2) as s:
        s.push([3, 4], key=1)
    with pytest.raises(tp.TplError, match="closed"):
        s.push([3, 4], key=2)
    s.close()
    assert "closed" in repr(s)
    with tp.Stream.open(bytes(path)) as again:
        assert again.status()["steps"] == 1 and again.path == str(path)


def test_a_float_sampler_stream_warns_at_every_push(tmp_path):
    s = tp.Stream.create(tmp_path / "f.db", "uniform", epsilon=1, window=2, sampler="float")
    with pytest.warns(UserWarning, match="NOT release-grade"):
        s.push([1.5, 2], key=1)
    exact = tp.Stream.create(tmp_path / "e.db", "uniform", epsilon=1, window=2)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact.push([1, 2], key=1)


def test_errors_name_arguments_not_command_line_flags(tmp_path):
    with pytest.raises(tp.TplError) as e:
        tp.Stream.create(tmp_path / "a.db", "bd", epsilon=1, window=3, alpha=1)
    assert "alpha" in str(e.value) and "--" not in str(e.value)
    with pytest.raises(tp.TplError) as e:
        tp.Stream.create(tmp_path / "b.db", "planned", epsilon=1, window=2, budgets=[0.6, 0.6])
    assert "budgets" in str(e.value) and "--" not in str(e.value)
    with pytest.raises(tp.TplError) as e:
        tp.Stream.create(tmp_path / "c.db", "pba", epsilon=1, window=2)
    assert str(e.value) == "scheme pba needs backward and/or forward: its correlation pool depends on them"
    with pytest.raises(tp.TplError) as e:
        tp.Stream.create(tmp_path / "d.db", "bd", epsilon=1e-300, window=2)
    assert str(e.value).startswith("epsilon 1e-300 (with window 2 and sensitivity 2): step 1 could never")


def test_a_stream_stores_causal_estimates_that_beat_its_releases(tmp_path):
    # 60 people moving among 3 cells, mostly staying; the stream stores map estimates.
    rng = np.random.default_rng(4)
    p = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])
    states = rng.integers(0, 3, size=60)
    truth = []
    for _ in range(40):
        truth.append(np.bincount(states, minlength=3).astype(float))
        states = np.array([rng.choice(3, p=p[s]) for s in states])
    s = tp.Stream.create(tmp_path / "e.db", "uniform", epsilon=1.0, window=4, forward=p, total=60)
    assert (s.status()["estimator"], s.status()["total"]) == ("map", 60)
    pushed = [s.push(row, key=t) for t, row in enumerate(truth)]
    estimates = s.estimates()
    assert estimates.shape == (40, 3)
    np.testing.assert_array_equal(np.array([step["estimate"] for step in pushed]), estimates)
    np.testing.assert_allclose(estimates.sum(axis=1), 60.0, rtol=1e-12)
    assert (estimates >= 0).all()
    releases = np.array([step["release"] for step in pushed])
    truth = np.array(truth)
    assert ((estimates - truth) ** 2).mean() < ((releases - truth) ** 2).mean()
    # The same as postprocess of the releases, offline.
    budgets = [step["publication_budget"] if step["published"] else 0.0 for step in pushed]
    offline = tp.postprocess(releases, total=60, budgets=budgets, forward=p, causal=True)
    np.testing.assert_array_equal(offline["estimates"], estimates)
    smoothed = s.smoothed()
    assert smoothed.shape == (40, 3)
    # Each estimate's stored interval holds it, in whole numbers within [0, total].
    lower, upper = s.intervals(0.9)
    assert lower.shape == upper.shape == (40, 3)
    assert (lower <= estimates).all() and (estimates <= upper).all()
    assert (lower >= 0).all() and (upper <= 60).all() and (np.floor(lower) == lower).all()
    assert ((lower <= truth) & (truth <= upper)).mean() >= 0.85
    with pytest.raises(tp.TplError, match="level 1.5"):
        s.intervals(1.5)
    # Deferred: many pushes, one pass of the filter.
    more = tp.Stream.create(tmp_path / "f.db", "uniform", epsilon=1.0, window=4, forward=p, total=60)
    for t, row in enumerate(truth[:10]):
        assert "estimate" not in more.push(row, key=t, estimate=False)
    assert more.update_estimates() == 10
    steps = more.steps()
    offline = tp.postprocess(
        np.array([st["release"] for st in steps]),
        total=60,
        budgets=[st["publication_budget"] if st["published"] else 0.0 for st in steps],
        forward=p,
        causal=True,
    )
    np.testing.assert_array_equal(more.estimates(), offline["estimates"])


def test_stream_estimates_need_a_total_and_a_filter(tmp_path):
    with pytest.raises(tp.TplError, match="total"):
        tp.Stream.create(tmp_path / "a.db", "uniform", epsilon=1.0, window=4, estimator="mle")
    with pytest.raises(tp.TplError, match="whole stream"):
        tp.Stream.create(tmp_path / "b.db", "uniform", epsilon=1.0, window=4, estimator="kalman", total=5)
    plain = tp.Stream.create(tmp_path / "c.db", "uniform", epsilon=1.0, window=4)
    assert plain.estimates() is None and plain.status()["estimator"] is None
    assert plain.intervals() is None
    with pytest.raises(tp.TplError, match="total"):
        plain.smoothed()


def test_the_stream_page_is_the_cli_page_but_for_its_provenance(cli, tmp_path, week):
    counts, pb, pf = week
    path = tmp_path / "page.db"
    with tp.Stream.create(path, "bd", epsilon=1, window=12, backward=pb, forward=pf) as s:
        for t, row in enumerate(counts[:20]):
            s.push(row, key=t)
        wrote = s.report(tmp_path / "py.html")
    expected, _ = cli("stream", "report", "--db", path, "--out", tmp_path / "cli.html")
    page = (tmp_path / "py.html").read_text()
    assert wrote == {"out": str(tmp_path / "py.html"), "bytes": len(page.encode()), "steps": 20}
    assert expected["steps"] == 20
    assert "temporal_privacy.Stream.report (Python)" in page
    cli_page = (tmp_path / "cli.html").read_text()
    # The provenance differs in who wrote the page; the stream's own lines are the same.
    for line in ["<dt>stream format</dt><dd>4</dd>", "<dt>history chain head</dt>"]:
        assert line in page and line in cli_page
    assert without_provenance(page) == without_provenance(cli_page)
