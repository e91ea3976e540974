"""estimate against the CLI's files and JSON, and the examples of the README, docs/python.md
and the docstrings, run as written."""

from __future__ import annotations

import doctest
import re

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, ROOT, read_counts, read_matrix, same_bits


@pytest.fixture(scope="module")
def ais_stream(repo_data):
    return np.loadtxt(AIS / "stream.csv", delimiter=",", skiprows=1, dtype=np.uint64)


@pytest.mark.parametrize("smoothing,steps", [(None, None), (0.01, None), (0.01, "..972"), (None, "973..")])
def test_estimate_of_the_ais_week_equals_the_cli(repo_data, cli, tmp_path, ais_stream, smoothing, steps):
    extra = [] if smoothing is None else ["--smoothing", str(smoothing)]
    extra += [] if steps is None else ["--steps", steps]
    expected, _ = cli("estimate", "--stream", AIS / "stream.csv", "--out", tmp_path, *extra)
    got = tp.estimate(ais_stream, smoothing=smoothing, steps=steps)
    assert list(got.steps) == expected["steps"]
    for side in ["forward", "backward"]:
        assert same_bits(got[side], read_matrix(tmp_path / f"transition_{side}.csv")), side
        assert got[f"{side}_identity_rows"] == expected[f"{side}_identity_rows"]
    assert np.array_equal(got.counts, read_matrix(tmp_path / "transition_counts.csv").astype(np.int64))
    for key in ["cells", "users", "horizon", "transitions", "smoothing"]:
        assert got[key] == expected[key], key
    assert got.cell_ids.tolist() == expected["cell_ids"] and got.forward.shape == (expected["cells"],) * 2
    # The histogram is the week's counts file (what compare --stream scores).
    assert np.array_equal(got.histogram, read_counts(AIS / "counts.csv"))


def test_cells_indexes_by_id_as_the_cli_does(cli, tmp_path, ais_stream):
    # Sparse ids: cell c becomes 2c + 1, and three more ids than the largest.
    sparse = ais_stream.copy()
    sparse[:, 2] = 2 * sparse[:, 2] + 1
    path = tmp_path / "sparse.csv"
    np.savetxt(path, sparse, fmt="%d", delimiter=",", header="timestamp_bucket,user_id,location_cell", comments="")
    n = int(sparse[:, 2].max()) + 4
    out = tmp_path / "out"
    expected, _ = cli("estimate", "--stream", path, "--cells", str(n), "--smoothing", "0.01", "--out", out)
    got = tp.estimate(sparse, smoothing=0.01, cells=n)
    for side in ["forward", "backward"]:
        assert same_bits(got[side], read_matrix(out / f"transition_{side}.csv")), side
        assert got[f"{side}_identity_rows"] == expected[f"{side}_identity_rows"]
    assert np.array_equal(got.counts, read_matrix(out / "transition_counts.csv").astype(np.int64))
    assert got.cell_ids.tolist() == expected["cell_ids"] == list(range(n))
    # The histogram's column id is the counts of cell id; ids never seen are empty.
    plain = tp.estimate(sparse)
    assert got.histogram.shape == (plain.histogram.shape[0], n)
    assert np.array_equal(got.histogram[:, plain.cell_ids.astype(np.int64)], plain.histogram)
    assert got.histogram.sum() == plain.histogram.sum()
    with pytest.raises(tp.TplError, match="cells"):
        tp.estimate(sparse, cells=n - 4)
    for bad in [0, 5000]:
        with pytest.raises(tp.TplError, match="cells"):
            tp.estimate(sparse, cells=bad)


def test_the_three_column_form_and_any_record_order_give_the_same_estimate(ais_stream):
    part = ais_stream[ais_stream[:, 0] < 30]
    a = tp.estimate(part)
    shuffled = part[np.random.default_rng(0).permutation(len(part))]
    b = tp.estimate(shuffled[:, 0], user=shuffled[:, 1], cell=shuffled[:, 2])
    assert same_bits(a.forward, b.forward) and np.array_equal(a.histogram, b.histogram)
    c = tp.estimate(part.astype(np.float64))
    assert same_bits(a.backward, c.backward)


@pytest.mark.parametrize(
    "records,words",
    [
        ([[0, 0, 1], [0, 2, 1], [1, 0, 1]], "user 2 never appears in bucket 1"),
        ([[0, 0, 1], [1, 0, 1], [3, 0, 1]], "bucket 2 never appears"),
        ([[0, 0, 1], [0, 0, 1], [1, 0, 0]], "user 0 appears twice in bucket 0"),
        ([[0, 0, -1]], "≥ 0"),
        ([[0, 0, 1.5]], "whole numbers"),
        ([[0, 0]], "R × 3"),
        ([0, 0, 1], "2-D"),
        (np.empty((0, 3)), "empty"),
        ([["a", "b", "c"]], "dtype"),
    ],
)
def test_bad_streams_are_named(records, words):
    with pytest.raises(tp.TplError) as e:
        tp.estimate(records)
    assert words in str(e.value)


def test_steps_as_a_pair_equal_steps_as_text(ais_stream):
    a = tp.estimate(ais_stream, steps=(None, 972))
    b = tp.estimate(ais_stream, steps="..972")
    assert same_bits(a.forward, b.forward) and a.steps == b.steps == (1, 972)
    with pytest.raises(tp.TplError, match="steps"):
        tp.estimate(ais_stream, steps="0..3")
    with pytest.raises(tp.TplError, match="steps"):
        tp.estimate(ais_stream, steps="1..3000")


def test_bad_smoothing_and_columns_are_refused():
    with pytest.raises(tp.TplError, match="smoothing"):
        tp.estimate([[0, 0, 0], [1, 0, 1]], smoothing=-1)
    with pytest.raises(tp.TplError, match="user= and cell="):
        tp.estimate([0, 1], user=[0, 0])
    with pytest.raises(tp.TplError, match="different lengths"):
        tp.estimate([0, 1], user=[0, 0], cell=[1])


def _python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("doc", ["README.md", "docs/python.md"])
def test_the_python_examples_of_the_documentation_run(repo_data, doc, tmp_path, monkeypatch):
    blocks = _python_blocks(ROOT / doc)
    assert blocks, f"no python example in {doc}"
    monkeypatch.chdir(tmp_path)  # anything an example writes lands here, not in the repository
    for code in blocks:
        code = code.replace('"testdata/', f'"{ROOT}/testdata/')
        exec(compile(code, doc, "exec"), {"__name__": "__example__"})


def test_the_docstring_examples_hold():
    failures, tried = doctest.testmod(tp, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert tried > 10 and failures == 0
