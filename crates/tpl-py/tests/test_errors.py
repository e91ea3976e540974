"""Wrong dtypes, shapes and values raise TplError (a ValueError) with a clear message; the
interpreter never crashes."""

from __future__ import annotations

import numpy as np
import pytest

import temporal_privacy as tp

P = [[0.8, 0.2], [0.0, 1.0]]


def test_tplerror_is_a_valueerror():
    assert issubclass(tp.TplError, ValueError)


@pytest.mark.parametrize(
    "bad,words",
    [
        ("abc", "array of numbers"),
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
