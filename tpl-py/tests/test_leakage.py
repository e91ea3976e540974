"""loss, supremum, leakage, smooth and normalize against the CLI's JSON, to the last bit."""

from __future__ import annotations

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, AIS_SMOOTHED, EXAMPLES, ais_smoothed, read_budgets, read_matrix, same_bits

MATRICES = ["example4.csv", "absorbing.csv", "fig8_backward.csv", "fig8_forward.csv"]


@pytest.mark.parametrize("name", MATRICES)
@pytest.mark.parametrize("alphas", [[1.0], [0.5, 1000.0], [0.0, 0.5, 1.0, 30.0, 1000.0]])
def test_loss_equals_the_cli_for_one_two_and_many_alphas(repo_data, cli, name, alphas):
    # One or two α use Algorithm 1, more the piecewise function: the same choice as the CLI.
    args = [a for x in alphas for a in ("--alpha", repr(x))]
    expected, _ = cli("loss", "--matrix", EXAMPLES / name, *args)
    P = read_matrix(EXAMPLES / name)
    got = tp.loss(P, alphas)
    assert isinstance(got, np.ndarray) and got.shape == (len(alphas),)
    assert same_bits(got, expected["loss"])
    if len(alphas) == 1:
        scalar = tp.loss(P, alphas[0])
        assert isinstance(scalar, float) and same_bits(scalar, expected["loss"][0])


def test_loss_of_the_done_when_example_is_the_cli_value(cli, tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("0.9,0.1\n0.2,0.8\n")
    expected, _ = cli("loss", "--matrix", f, "--alpha", "1.0")
    assert same_bits(tp.loss([[0.9, 0.1], [0.2, 0.8]], 1.0), expected["loss"][0])


def test_loss_keeps_the_shape_of_an_array_of_alphas(repo_data):
    P = read_matrix(EXAMPLES / "example4.csv")
    a = np.array([[0.5, 1.0], [2.0, 3.0]])
    got = tp.loss(P, a)
    assert got.shape == (2, 2)
    assert same_bits(got.ravel(), tp.loss(P, a.ravel()))


def test_loss_of_the_ais_matrix_is_alpha(repo_data, cli):
    # Rows with disjoint supports: L(α) = α (Theorem 7).
    P = read_matrix(AIS / "transition_forward.csv")
    expected, _ = cli("loss", "--matrix", AIS / "transition_forward.csv", "--alpha", "2")
    assert same_bits(tp.loss(P, 2), expected["loss"][0]) and tp.loss(P, 2) == 2.0


@pytest.mark.parametrize(
    "name,eps", [("fig8_backward.csv", 0.1), ("absorbing.csv", 0.1), ("absorbing.csv", 0.3), ("example4.csv", 2.0)]
)
def test_supremum_equals_the_cli(repo_data, cli, name, eps):
    expected, _ = cli("supremum", "--matrix", EXAMPLES / name, "--epsilon", eps)
    got = tp.supremum(read_matrix(EXAMPLES / name), eps)
    if expected["bounded"]:
        assert same_bits(got, expected["supremum"])
    else:
        assert got is None and expected["supremum"] is None


def test_supremum_of_the_smoothed_ais_matrix_equals_the_cli_with_smoothing(repo_data, cli):
    expected, _ = cli(
        "supremum", "--matrix", AIS / "transition_backward.csv", "--smoothing", "0.01", "--epsilon", "0.1"
    )
    P = tp.smooth(read_matrix(AIS / "transition_backward.csv"), 0.01)
    assert same_bits(tp.supremum(P, 0.1), expected["supremum"])


def _check_leakage(got, expected):
    assert same_bits(got.t, expected["t"]) or list(got.t) == expected["t"]
    for key in ["epsilon", "bpl", "fpl", "tpl"]:
        assert same_bits(got[key], expected[key]), key
    assert same_bits(got.max_tpl, expected["max_tpl"])
    if "window" in expected:
        assert got.window == expected["window"]
        assert same_bits(got.window_leakage, expected["window_leakage"])
        assert same_bits(got.max_window_leakage, expected["max_window_leakage"])
    else:
        assert got.window is None and "window_leakage" not in got


def test_leakage_of_the_fig8_budgets_equals_the_cli(repo_data, cli):
    expected, _ = cli(
        "leakage",
        "--backward", EXAMPLES / "fig8_backward.csv",
        "--forward", EXAMPLES / "fig8_forward.csv",
        "--budgets", EXAMPLES / "budgets.txt",
        "--window", "3",
    )
    got = tp.leakage(
        backward=read_matrix(EXAMPLES / "fig8_backward.csv"),
        forward=read_matrix(EXAMPLES / "fig8_forward.csv"),
        budgets=read_budgets(EXAMPLES / "budgets.txt"),
        window=3,
    )
    _check_leakage(got, expected)
    assert list(got.keys())[:6] == ["t", "epsilon", "bpl", "fpl", "tpl", "max_tpl"]


@pytest.mark.parametrize("side", ["backward", "forward", "both", "none"])
def test_leakage_of_a_constant_budget_equals_the_cli(repo_data, cli, side):
    files = {"backward": EXAMPLES / "absorbing.csv", "forward": EXAMPLES / "example4.csv"}
    if side == "both":
        files = {"backward": EXAMPLES / "fig8_backward.csv", "forward": EXAMPLES / "fig8_forward.csv"}
    elif side == "none":
        files = {}
    elif side == "backward":
        files = {"backward": files["backward"]}
    else:
        files = {"forward": files["forward"]}
    args = [a for k, v in files.items() for a in (f"--{k}", v)]
    expected, _ = cli("leakage", *args, "--epsilon", "0.1", "--horizon", "50")
    got = tp.leakage(**{k: read_matrix(v) for k, v in files.items()}, epsilon=0.1, horizon=50)
    _check_leakage(got, expected)


def test_leakage_of_a_day_of_the_ais_week_equals_the_cli(repo_data, cli):
    expected, _ = cli(
        "leakage", *AIS_SMOOTHED, "--epsilon", "0.05", "--horizon", "288", "--window", "12"
    )
    got = tp.leakage(**ais_smoothed(), epsilon=0.05, horizon=288, window=12)
    _check_leakage(got, expected)


def test_normalize_equals_the_cli_reading_with_normalize(cli, tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("3,1\n1,2\n")
    expected, _ = cli("loss", "--matrix", f, "--normalize", "--alpha", "0.7")
    P = tp.normalize([[3, 1], [1, 2]])
    assert same_bits(P.sum(axis=1), [1.0, 1.0]) or np.allclose(P.sum(axis=1), 1)
    assert same_bits(tp.loss(P, 0.7), expected["loss"][0])


def test_results_are_mappings_with_the_json_names():
    r = tp.leakage(epsilon=0.5, horizon=3)
    assert dict(r).keys() == {"t", "epsilon", "bpl", "fpl", "tpl", "max_tpl"}
    assert r["max_tpl"] == r.max_tpl == 0.5
    assert r.to_dict(numpy=True)["bpl"] is r.bpl
    assert r.to_dict()["bpl"] == r.bpl.tolist() and type(r.to_dict()["bpl"][0]) is float


def test_a_releases_budgets_are_audited_at_its_sensitivity(tmp_path):
    # Regression: the budgets of a release with sensitivity 1 were audited as if Δ = 2,
    # half the leakage `stream status` reports for the same stream.
    P = np.array([[0.8, 0.2], [0.3, 0.7]])
    assert tp.effective_budgets([0.1, 0.0, 0.25], 1).tolist() == [0.2, 0.0, 0.5]
    at_one = tp.leakage(P, P, [0.2, 0.2, 0.0], sensitivity=1)
    doubled = tp.leakage(P, P, [0.4, 0.4, 0.0])
    assert at_one.max_tpl == doubled.max_tpl and at_one.epsilon.tolist() == [0.4, 0.4, 0.0]
    assert tp.leakage(P, P, epsilon=0.2, horizon=3, sensitivity=1).max_tpl == tp.leakage(P, P, epsilon=0.4, horizon=3).max_tpl
    s = tp.Stream.create(tmp_path / "d1.db", "uniform", epsilon=1, window=5, sensitivity=1, backward=P, forward=P)
    for t in range(5):
        s.push([t, 3], key=t)
    status = s.status()
    audit = tp.leakage(P, P, status["budgets"], sensitivity=1)
    assert audit.max_tpl == status["leakage"]["realized"]["max_tpl"]
    with pytest.raises(tp.TplError, match="sensitivity"):
        tp.leakage(P, P, [0.1], sensitivity=0)
