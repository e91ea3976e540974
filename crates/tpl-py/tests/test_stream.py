"""Stream: the durable stream of `tpl stream`, one file that the CLI and Python share."""

from __future__ import annotations

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, read_counts, read_matrix, same_bits


@pytest.fixture(scope="module")
def week():
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
                "max_window_spend", "format_version", "version"]:
        assert status[key] == expected[key], key
    assert same_bits(status["budgets"], expected["budgets"])
    assert status["published"].tolist() == expected["published"]
    assert status["realized"] == expected["leakage"]["realized"]
    assert status["guaranteed"] == expected["leakage"]["guaranteed"]
    assert status["guaranteed"]["max_tpl"] >= status["realized"]["max_tpl"]
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
    for row in counts[:6]:
        s.push(row)
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
    assert s.push([11, 3])["key"] == 6
    assert s.status()["steps"] == 2


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
            s.push(bad)
    assert s.status()["steps"] == 0
