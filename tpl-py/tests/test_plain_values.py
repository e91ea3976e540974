"""Every result type's ``to_dict()`` holds plain Python values, so that ``json.dumps`` takes it
as it is (the habit of pandas' ``to_dict()`` and polars' ``to_dict(as_series=False)``), and
``to_dict(numpy=True)`` keeps the arrays. Needs neither the binary nor the repository's data."""

from __future__ import annotations

import json
import warnings

import numpy as np
import temporal_privacy as tp

P = np.array([[0.8, 0.2], [0.3, 0.7]])
COUNTS = np.array([[5, 3], [4, 4], [6, 2], [5, 3], [3, 5], [4, 4]], dtype=np.int64)
# Three people over four buckets, as (bucket, user, cell) records.
RECORDS = np.array([[b, u, (b + u) % 2] for b in range(4) for u in range(3)], dtype=np.uint64)


def _stream_file(tmp_path):
    path = tmp_path / "stream.csv"
    rows = "\n".join(",".join(str(int(v)) for v in r) for r in RECORDS)
    path.write_text("timestamp_bucket,user_id,location_cell\n" + rows + "\n")
    return path


def _results(tmp_path) -> dict:
    """One result of every type, keyed by the type's name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = tp.release(COUNTS, "bd", epsilon=1, window=3, backward=P, forward=P, seed=1, interval=0.9)
        made = [
            tp.leakage(P, P, epsilon=0.1, horizon=5, window=2),
            tp.allocate("window", P, P, alpha=1, horizon=6, window=3),
            release,
            tp.postprocess(
                release.releases, total=8, budgets=release.budget, forward=P, interval=0.9, seed=1,
                interval_method="bootstrap",
            ),
            tp.compare(COUNTS, P, P, epsilon=1, window=3, runs=1, seed=1, schemes=["laplace", "bd"]),
            tp.estimate(RECORDS, 0.01),
            tp.read_stream(_stream_file(tmp_path)),
            tp.matrices_from_transitions(np.array([[3, 1], [2, 2]]), 0.01),
        ]
    return {type(r).__name__: r for r in made}


def _leaves(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _leaves(x)
    elif isinstance(v, list):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


def test_every_result_type_is_covered(tmp_path):
    # A result type added to the package without a case here fails this test.
    types = {c.__name__ for c in tp._Fields.__subclasses__()}
    assert types == set(_results(tmp_path)), types ^ set(_results(tmp_path))


def test_to_dict_is_plain_python_that_json_takes(tmp_path):
    for name, r in _results(tmp_path).items():
        plain = r.to_dict()
        assert list(plain) == list(r), name
        bad = [type(x).__name__ for x in _leaves(plain) if not isinstance(x, (bool, int, float, str, type(None)))]
        assert not bad, f"{name}: {bad}"
        assert all(type(x) in (bool, int, float, str, type(None)) for x in _leaves(plain)), name
        back = json.loads(json.dumps(plain))
        assert back == plain, name
        assert json.loads(r.to_json()) == plain, name


def test_to_dict_with_numpy_keeps_the_arrays_and_the_values(tmp_path):
    for name, r in _results(tmp_path).items():
        arrays = r.to_dict(numpy=True)
        plain = r.to_dict()
        for key, value in arrays.items():
            assert value is getattr(r, key), (name, key)
            if isinstance(value, np.ndarray):
                assert plain[key] == value.tolist(), (name, key)
        if name != "Comparison":  # rows of plain values only
            assert any(isinstance(v, np.ndarray) for v in arrays.values()), f"{name} has arrays"
