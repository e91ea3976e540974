"""matrices_from_transitions: the matrices of tpl estimate from counts gathered elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, same_bits


@pytest.fixture(scope="module")
def ais_stream(repo_data):
    return np.loadtxt(AIS / "stream.csv", delimiter=",", skiprows=1, dtype=np.uint64)


@pytest.mark.parametrize("smoothing,steps", [(None, None), (0.01, None), (0.0, "..972"), (2.5, "973..")])
def test_matrices_of_the_counts_are_the_estimates_of_the_stream(ais_stream, smoothing, steps):
    e = tp.estimate(ais_stream, smoothing, steps=steps)
    m = tp.matrices_from_transitions(e.counts, smoothing)
    assert same_bits(m.forward, e.forward) and same_bits(m.backward, e.backward)
    assert m.forward_identity_rows == e.forward_identity_rows
    assert m.backward_identity_rows == e.backward_identity_rows


def test_counts_of_two_halves_add_up_to_the_counts_of_the_whole(ais_stream):
    # Moves within the first half, the second half, and the one step across: the whole.
    whole = tp.estimate(ais_stream).counts
    first, second = tp.estimate(ais_stream, steps="..972").counts, tp.estimate(ais_stream, steps="973..").counts
    across = tp.estimate(ais_stream, steps="972..973").counts
    assert np.array_equal(first + second + across, whole)
    m = tp.matrices_from_transitions((first + second + across).astype(np.uint64))
    assert same_bits(m.forward, tp.estimate(ais_stream).forward)


def test_cells_never_left_or_entered_are_identity_rows():
    m = tp.matrices_from_transitions([[0, 3, 0], [0, 1, 0], [0, 0, 0]], smoothing=1.0)
    assert m.forward_identity_rows == [2] and m.backward_identity_rows == [0, 2]
    assert same_bits(m.forward[2], [1 / 4, 1 / 4, 2 / 4])
    # Smoothing adds s to the probabilities, not to the counts (TKDE eq. 28).
    assert same_bits(m.forward[0], [1 / 4, 2 / 4, 1 / 4])


def test_counts_up_to_the_largest_64_bit_number_are_taken():
    big = 2**64 - 1
    m = tp.matrices_from_transitions(np.array([[big, big], [0, 1]], dtype=np.uint64))
    assert m.forward[0].tolist() == [0.5, 0.5] and m.backward[1].tolist() == [1.0, 2.0**-64]


@pytest.mark.parametrize(
    "counts,smoothing,words",
    [
        ([[1, 2, 3]], None, "square"),
        ([[1, 2], [3, 4], [5, 6]], None, "square"),
        ([[1, -2], [3, 4]], None, "≥ 0"),
        ([[1, 0.5], [3, 4]], None, "whole numbers"),
        ([1, 2], None, "2-D"),
        ([["a"]], None, "dtype"),
        ([[1]], -1.0, "smoothing"),
        ([[1]], float("nan"), "smoothing"),
        (np.zeros((4097, 4097), dtype=np.uint8), None, "at most 4096"),
    ],
)
def test_bad_counts_are_named(counts, smoothing, words):
    with pytest.raises(tp.TplError) as e:
        tp.matrices_from_transitions(counts, smoothing)
    assert words in str(e.value)
