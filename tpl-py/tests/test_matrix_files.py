"""A transition matrix given as the path of a matrix file (dense text, .npy, sparse from,to,p)
is read as the command line reads it: the same values as the array, a sparse file kept sparse."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import temporal_privacy as tp

ROWS = [[0.7, 0.3, 0.0, 0.0], [0.0, 0.6, 0.4, 0.0], [0.0, 0.0, 0.5, 0.5], [0.2, 0.0, 0.0, 0.8]]
SPARSE = "from,to,p\n3,3,0.8\n0,0,0.7\n0,1,0.3\n1,1,0.6\n1,2,0.4\n2,2,0.5\n2,3,0.5\n3,0,0.2\n"


@pytest.fixture
def files(tmp_path: pathlib.Path) -> dict[str, pathlib.Path]:
    dense = tmp_path / "dense.csv"
    dense.write_text("\n".join(",".join(repr(v) for v in row) for row in ROWS) + "\n")
    sparse = tmp_path / "sparse.csv"
    sparse.write_text(SPARSE)
    array = tmp_path / "m.npy"
    np.save(array, np.array(ROWS))
    return {"dense": dense, "sparse": sparse, "npy": array}


@pytest.mark.parametrize("form", ["dense", "sparse", "npy"])
def test_a_matrix_file_gives_what_its_array_gives(files, form):
    path = files[form]
    alphas = [0.5, 3.0, 1000.0]
    np.testing.assert_array_equal(tp.loss(str(path), alphas), tp.loss(ROWS, alphas))
    assert tp.loss(path, 0.5) == tp.loss(ROWS, 0.5)  # os.PathLike too
    assert tp.supremum(path, 0.2) == tp.supremum(ROWS, 0.2)
    budgets = [0.1] * 20
    got = tp.leakage(backward=path, forward=path, budgets=budgets)
    want = tp.leakage(backward=ROWS, forward=ROWS, budgets=budgets)
    np.testing.assert_array_equal(got["tpl"], want["tpl"])


def test_a_city_grid_in_the_sparse_form_costs_little(tmp_path):
    # A 50 × 50 walk: 2500 cells, dense it would be 6.25 million entries.
    side = 50
    lines = ["from,to,p"]
    for cell in range(side * side):
        r, c = divmod(cell, side)
        near = [cell + d for d, ok in ((-side, r > 0), (-1, c > 0), (1, c + 1 < side), (side, r + 1 < side)) if ok]
        lines.append(f"{cell},{cell},0.6")
        lines.extend(f"{cell},{j},{0.4 / len(near)!r}" for j in near)
    grid = tmp_path / "grid.csv"
    grid.write_text("\n".join(lines) + "\n")
    values = tp.loss(grid, [0.5, 1.0])
    assert np.all((values > 0) & (values <= [0.5, 1.0]))
    plan = tp.allocate("window", backward=grid, forward=grid, alpha=1.0, horizon=50, window=5)
    assert len(plan["budgets"]) == 50


def test_a_bad_matrix_file_is_named(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("from,to,p\n0,0,1\n1,1,0.5\n")
    with pytest.raises(tp.TplError, match=r"P: .*bad\.csv.*row 2 sums to 0\.5"):
        tp.loss(bad, 1.0)
    with pytest.raises(tp.TplError, match=r"backward: .*missing\.csv"):
        tp.leakage(backward=tmp_path / "missing.csv", budgets=[0.1])


@pytest.mark.parametrize("form", ["dense", "sparse", "npy"])
def test_a_matrix_file_with_options_is_read_as_the_command_line_reads_it(files, form, tmp_path):
    # --smoothing s: the smoothed array's values (the sparse file's smoothing kept symbolic).
    smoothed = tp.MatrixFile(files[form], smoothing=0.01)
    alphas = [0.5, 3.0]
    np.testing.assert_allclose(tp.loss(smoothed, alphas), tp.loss(tp.smooth(ROWS, 0.01), alphas), rtol=1e-12)
    assert tp.supremum(smoothed, 0.2) == pytest.approx(tp.supremum(tp.smooth(ROWS, 0.01), 0.2), rel=1e-12)
    # --normalize: rows of any finite sum rescaled.
    doubled = tmp_path / "doubled.csv"
    doubled.write_text("\n".join(",".join(repr(2 * v) for v in row) for row in ROWS) + "\n")
    assert tp.loss(tp.MatrixFile(doubled, normalize=True), 0.5) == tp.loss(ROWS, 0.5)
    with pytest.raises(tp.TplError, match="sum"):
        tp.loss(doubled, 0.5)
    assert repr(smoothed).startswith("MatrixFile(") and "smoothing=0.01" in repr(smoothed)


def test_a_matrix_file_with_bad_options_is_refused_naming_them(files):
    with pytest.raises(tp.TplError, match="P smoothing: .*-1"):
        tp.loss(tp.MatrixFile(files["sparse"], smoothing=-1), 0.5)
    with pytest.raises(tp.TplError, match="smoothing: a number"):
        tp.MatrixFile(files["sparse"], smoothing="a lot")
    with pytest.raises(tp.TplError, match="path: a str"):
        tp.MatrixFile(3)
    with pytest.raises(tp.TplError, match="normalize"):
        tp.MatrixFile(files["dense"], normalize="yes")
