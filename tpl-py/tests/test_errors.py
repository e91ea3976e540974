"""Wrong dtypes, shapes and values raise TplError (a ValueError) with a clear message; the
interpreter never crashes."""

from __future__ import annotations

import os

import numpy as np
import pytest

import temporal_privacy as tp

P = [[0.8, 0.2], [0.0, 1.0]]


def test_tplerror_is_a_valueerror():
    assert issubclass(tp.TplError, ValueError)


@pytest.mark.parametrize(
    "bad,words",
    [
        ("abc", "abc: cannot read"),  # a str is the path of a matrix file
        ([["a", "b"], ["c", "d"]], "dtype"),
        (np.array([[1 + 0j, 0], [0, 1]]), "dtype"),
        (np.array([[True, False], [False, True]]), "dtype"),
        ([0.5, 0.5], "2-D"),
        (np.ones((2, 2, 2)) / 2, "2-D"),
        (np.ones((2, 3)) / 3, "square"),
        (np.empty((0, 0)), "empty"),
        ([[0.5, 0.5], [1.0]], "not an array"),
        ([[0.5, 0.4], [0.0, 1.0]], "row 1 sums to 0.9"),
        ([[np.nan, 1.0], [0.0, 1.0]], "P:"),
        ([[-0.5, 1.5], [0.0, 1.0]], "P:"),
        (None, "array of integers or floats"),
    ],
)
def test_a_bad_matrix_names_the_argument(bad, words):
    with pytest.raises(tp.TplError) as e:
        tp.loss(bad, 1.0)
    assert words in str(e.value) and str(e.value).startswith("P")


def test_a_matrix_given_as_a_fortran_or_strided_array_is_read_as_its_values():
    a = np.asfortranarray(np.array([[0.8, 0.2], [0.0, 1.0]]))
    strided = np.array([[0.8, 9, 0.2], [0.0, 9, 1.0]])[:, ::2]
    assert tp.loss(a, 1.0) == tp.loss(P, 1.0) == tp.loss(strided, 1.0)
    assert tp.loss(np.array([[1, 0], [0, 1]], dtype=np.int8), 2.0) == 2.0


@pytest.mark.parametrize("alpha", [-1.0, np.nan, np.inf, [1.0, -2.0]])
def test_a_bad_alpha_names_alpha(alpha):
    with pytest.raises(tp.TplError, match="alpha"):
        tp.loss(P, alpha)


def test_alpha_of_a_wrong_dtype_is_refused():
    with pytest.raises(tp.TplError, match="alpha"):
        tp.loss(P, "1")


@pytest.mark.parametrize("eps", [0.0, -1.0, np.nan, "0.1", None, True])
def test_a_bad_epsilon_names_epsilon(eps):
    with pytest.raises(tp.TplError, match="epsilon"):
        tp.supremum(P, eps)


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({}, "budgets="),
        ({"epsilon": 0.1}, "horizon"),
        ({"horizon": 3}, "epsilon"),
        ({"epsilon": 0.1, "horizon": 0}, "horizon"),
        ({"epsilon": 0.1, "horizon": 10**9}, "at most 100000000"),
        ({"epsilon": 0.1, "horizon": -3}, "horizon"),
        ({"epsilon": 0.1, "horizon": 2.5}, "horizon"),
        ({"epsilon": 0.1, "horizon": 3, "window": 4}, "window"),
        ({"epsilon": 0.1, "horizon": 3, "window": 0}, "window"),
        ({"budgets": [0.1, -0.2]}, "budget"),
        ({"budgets": [[0.1, 0.2]]}, "1-D"),
        ({"budgets": []}, "empty"),
        ({"budgets": [0.1], "epsilon": 0.1}, "not both"),
        ({"budgets": [1e308, 1e308]}, "budgets"),
    ],
)
def test_bad_leakage_arguments_are_named(kwargs, words):
    with pytest.raises(tp.TplError) as e:
        tp.leakage(backward=P, **kwargs)
    assert words in str(e.value)


def test_matrices_of_different_sizes_are_refused():
    with pytest.raises(tp.TplError, match="states|size|2"):
        tp.leakage(backward=P, forward=np.eye(3), epsilon=0.1, horizon=2)


def test_bad_smoothing_is_refused():
    with pytest.raises(tp.TplError, match="s"):
        tp.smooth(P, -1.0)
    with pytest.raises(tp.TplError, match="P"):
        tp.normalize([[0.0, 0.0], [1.0, 1.0]])


@pytest.mark.parametrize(
    "call",
    [
        lambda: tp.release([[1, 2], [3]], "bd", epsilon=1, window=1),
        lambda: tp.postprocess([[1, 2], [3]], total=3, epsilon=1),
        lambda: tp.compare([[1, 2], [3]], epsilon=1, window=1),
    ],
)
def test_ragged_counts_raise_tplerror_naming_the_argument(call):
    with pytest.raises(tp.TplError, match="not an array of numbers"):
        call()


def test_a_zero_dimensional_array_is_a_number():
    assert tp.supremum(P, np.array(0.1)) == tp.supremum(P, 0.1)
    with pytest.raises(tp.TplError, match="a number is needed"):
        tp.supremum(P, np.array(True))


def test_an_empty_list_of_strategies_is_refused():
    with pytest.raises(tp.TplError, match="schemes"):
        tp.compare(np.full((20, 2), 5), epsilon=1, window=2, schemes=[])


def test_tplerror_pickles_so_that_worker_processes_can_return_it():
    import pickle

    assert tp.TplError.__module__ == "temporal_privacy"
    try:
        tp.loss([[0.5, 0.6], [0.5, 0.5]], 1.0)
    except tp.TplError as e:
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is tp.TplError and str(back) == str(e)
    else:
        pytest.fail("a row summing to 1.1 was accepted")


# Regressions of inputs that were misread or misreported.


def test_low_precision_matrices_are_taken_within_their_precision():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    for dtype in (np.float32, np.float16):
        got = tp.leakage(P.astype(dtype), P.astype(dtype), [0.5, 0.5])
        want = tp.leakage(tp.normalize(P.astype(dtype).astype(np.float64)), tp.normalize(P.astype(dtype).astype(np.float64)), [0.5, 0.5])
        assert got.max_tpl == want.max_tpl
    with pytest.raises(tp.TplError, match="row 1 sums to"):
        tp.leakage(np.array([[0.5, 0.4], [0.5, 0.5]], dtype=np.float32), None, [0.5])


def test_masked_entries_huge_integers_and_out_of_range_arguments_are_refused_clearly():
    counts = np.ma.masked_array([[1, 2], [3, 4]], mask=[[False, True], [False, False]])
    with pytest.raises(tp.TplError, match="masked"):
        tp.release(counts, "uniform", epsilon=1, window=2, seed=1)
    with pytest.raises(tp.TplError, match="9007199254740993"):
        tp.release(np.array([[2**53 + 1, 1]], dtype=np.int64), "uniform", epsilon=1, window=2, seed=1)
    with pytest.raises(tp.TplError, match="from 1 to"):
        tp.leakage(None, None, [0.1, 0.2], window=-1)
    with pytest.raises(tp.TplError, match="beyond the largest double"):
        tp.supremum([[0.9, 0.1], [0.1, 0.9]], 10**400)


def test_results_have_a_json_form():
    import json

    r = tp.leakage(None, None, [0.1, 0.2], window=1)
    back = json.loads(r.to_json())
    assert back["tpl"] == r.tpl.tolist() and back["window"] == 1 and back["max_tpl"] == r.max_tpl


def test_a_damaged_stream_raises_its_own_subclass(tmp_path):
    path = tmp_path / "s.db"
    s = tp.Stream.create(path, "uniform", epsilon=1, window=2)
    s.push([1, 2], key=1)
    s.close()
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE steps SET test = 0.25 WHERE t = 1")
    with pytest.raises(tp.StreamDamagedError, match="step 1") as e:
        tp.Stream.open(path).status()
    assert isinstance(e.value, tp.TplError) and isinstance(e.value, ValueError)
    (tmp_path / "junk.db").write_bytes(b"x" * 200)
    with pytest.raises(tp.StreamDamagedError, match="not a tpl stream"):
        tp.Stream.open(tmp_path / "junk.db")


def test_the_spark_tests_are_skipped_not_failed_without_pyspark(tmp_path):
    # Regression: `pytest tpl-py/tests` failed at collection where PySpark is absent.
    import subprocess
    import sys
    from pathlib import Path

    fake = tmp_path / "pyspark"
    fake.mkdir()
    (fake / "__init__.py").write_text('raise ModuleNotFoundError("No module named pyspark", name="pyspark")\n')
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    env.pop("TPL_REQUIRE_ALL", None)

    def pytest_on_the_spark_tests(env):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here / "test_spark.py")],
            capture_output=True, text=True, env=env, cwd=here,
        )

    run = pytest_on_the_spark_tests(env)
    # Exit code 5: nothing left to run in that file (it was skipped whole), not an error.
    assert run.returncode == 5 and "1 skipped" in run.stdout and "error" not in run.stdout, run.stdout + run.stderr
    # Where every test must run (scripts/test-all), the same absence fails.
    run = pytest_on_the_spark_tests(dict(env, TPL_REQUIRE_ALL="1"))
    assert run.returncode == 2 and "pyspark is not installed (TPL_REQUIRE_ALL=1" in run.stdout, run.stdout + run.stderr
