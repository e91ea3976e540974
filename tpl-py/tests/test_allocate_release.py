"""allocate and release against the CLI's JSON (seeded releases to the last bit), and the
noise statistics of a release."""

from __future__ import annotations

import math
import subprocess
import warnings

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, AIS_MATRICES, AIS_SMOOTHED, EXAMPLES, ais_smoothed, ROOT, read_budgets, read_counts, read_matrix, same_bits

FIG8 = {"backward": EXAMPLES / "fig8_backward.csv", "forward": EXAMPLES / "fig8_forward.csv"}


def _check_allocation(got, expected):
    # One definition of the fields (tpl-report's AllocationOutput): the same names.
    assert set(got) == set(expected)
    for key in ["strategy", "alpha", "max_tpl", "sup_backward", "sup_forward", "guarantee", "steady_budget",
                "limited_by"]:
        assert got[key] == expected[key] or same_bits(got[key], expected[key]), key
    for key in ["budgets", "bpl", "fpl", "tpl"]:
        assert same_bits(got[key], expected[key]), key
    assert got.window == expected.get("window")
    assert got.max_window_leakage == expected.get("max_window_leakage")
    assert got.guarantee["holds"] is True


@pytest.mark.parametrize(
    "strategy,horizon,window",
    [("upper-bound", 12, None), ("upper-bound", 12, 3), ("quantified", 5, None), ("quantified", 9, 9), ("window", 10, 4)],
)
def test_allocate_equals_the_cli_on_the_fig8_matrices(repo_data, cli, strategy, horizon, window):
    args = ["--strategy", strategy, "--alpha", "1", "--horizon", str(horizon)]
    if window:
        args += ["--window", str(window)]
    expected, _ = cli("allocate", "--backward", FIG8["backward"], "--forward", FIG8["forward"], *args)
    got = tp.allocate(
        strategy,
        backward=read_matrix(FIG8["backward"]),
        forward=read_matrix(FIG8["forward"]),
        alpha=1.0,
        horizon=horizon,
        window=window,
    )
    _check_allocation(got, expected)


@pytest.mark.parametrize("strategy", ["upper-bound", "quantified", "window"])
def test_allocate_equals_the_cli_on_a_day_of_the_smoothed_ais_week(repo_data, cli, strategy):
    expected, _ = cli(
        "allocate", "--strategy", strategy, *AIS_SMOOTHED, "--alpha", "1", "--horizon", "288", "--window", "12"
    )
    got = tp.allocate(strategy, **ais_smoothed(), alpha=1, horizon=288, window=12)
    _check_allocation(got, expected)


def test_allocate_refuses_an_unbounded_stream_as_the_cli_does(repo_data, tpl_bin):
    pb, pf = read_matrix(AIS / "transition_backward.csv"), read_matrix(AIS / "transition_forward.csv")
    out = subprocess.run(
        [str(tpl_bin), "allocate", "--strategy", "upper-bound", "--backward", AIS / "transition_backward.csv",
         "--forward", AIS / "transition_forward.csv", "--alpha", "1", "--horizon", "288"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert out.returncode == 2
    with pytest.raises(tp.TplError) as e:
        tp.allocate("upper-bound", backward=pb, forward=pf, alpha=1, horizon=288)
    message = str(e.value)
    assert message.startswith("backward: ") and message[len("backward: "):] in out.stderr
    a = tp.allocate("window", backward=pb, forward=pf, alpha=1, horizon=288, window=12)
    assert a.guarantee["holds"] and a.max_window_leakage <= 1


def _release_cli(cli, counts_file, *args):
    return cli("release", "--counts", counts_file, *args)


def _check_release(got, expected):
    # One definition of the fields (tpl-report's ReleaseOutput): the same names but the CLI's build.
    assert set(got) == set(expected) - {"build"}
    for key in ["scheme", "epsilon", "window", "sensitivity", "sampler", "seeded", "version"]:
        assert got[key] == expected[key], key
    assert same_bits(got.test_budget, expected["test_budget"])
    assert same_bits(got.publication_budget, expected["publication_budget"])
    assert got.t.tolist() == expected["t"]
    assert got.published.dtype == np.bool_ and got.published.tolist() == expected["published"]
    assert same_bits(got.budget, expected["budget"])
    assert same_bits(got.releases, expected["releases"])
    assert same_bits(got.max_window_budget, expected["max_window_budget"])
    for side in ["backward", "forward"]:
        assert (got[side] is None) == (expected[side] is None)
        if got[side] is not None:
            assert got[side]["n"] == expected[side]["n"]
            assert set(got[side]) == set(expected[side]) == {"file", "n", "normalize", "smoothing"}
    if "interval" in expected:
        assert same_bits(got.lower, expected["lower"]) and same_bits(got.upper, expected["upper"])
    assert same_bits(got.test_budget + got.publication_budget, got.budget) or np.all(
        got.test_budget + got.publication_budget <= got.budget
    )


@pytest.mark.parametrize("scheme", ["laplace", "uniform", "sample", "bd", "ba", "pba", "dsat", "fast"])
def test_a_seeded_release_of_the_ais_week_equals_the_cli(repo_data, cli, scheme):
    args = ["--scheme", scheme, "--epsilon", "1", "--window", "10", "--seed", "7", "--interval", "0.9"]
    if scheme == "pba":
        args += AIS_MATRICES
    expected, stderr = _release_cli(cli, AIS / "counts.csv", *args)
    assert "NOT private" in stderr
    matrices = {}
    if scheme == "pba":
        matrices = {s: read_matrix(AIS / f"transition_{s}.csv") for s in ["backward", "forward"]}
    with pytest.warns(UserWarning, match="seed=7 makes this release reproducible, hence NOT private"):
        got = tp.release(read_counts(AIS / "counts.csv"), scheme, epsilon=1, window=10, seed=7, interval=0.9, **matrices)
    _check_release(got, expected)


def test_a_planned_release_with_float_counts_and_sensitivity_equals_the_cli(cli, tmp_path):
    counts = tmp_path / "c.csv"
    counts.write_text("1,2,3\n4,5,6\n7,8,9\n10,11,12\n")
    plan = tmp_path / "plan.txt"
    plan.write_text("0.5\n0.25\n0.25\n0.5\n")
    expected, _ = _release_cli(
        cli, counts, "--scheme", "planned", "--budgets", plan, "--epsilon", "1", "--window", "3",
        "--sensitivity", "1", "--seed", "11",
    )
    c = np.arange(1.0, 13.0).reshape(4, 3)
    with pytest.warns(UserWarning):
        got = tp.release(c, "planned", epsilon=1, window=3, sensitivity=1, seed=11, budgets=[0.5, 0.25, 0.25, 0.5])
    _check_release(got, expected)
    for dtype in [np.int32, np.uint16, np.float32]:
        with pytest.warns(UserWarning):
            again = tp.release(c.astype(dtype), "planned", epsilon=1, window=3, sensitivity=1, seed=11,
                               budgets=[0.5, 0.25, 0.25, 0.5])
        assert same_bits(again.releases, got.releases)


def test_the_float_sampler_equals_the_cli_and_warns(cli, tmp_path):
    counts = tmp_path / "c.csv"
    counts.write_text("1.5,2\n3,4.25\n")
    expected, stderr = _release_cli(cli, counts, "--scheme", "laplace", "--epsilon", "1", "--window", "1",
                                    "--sampler", "float", "--seed", "2")
    assert "NOT release-grade" in stderr
    with pytest.warns(UserWarning) as record:
        got = tp.release([[1.5, 2], [3, 4.25]], "laplace", epsilon=1, window=1, sampler="float", seed=2)
    assert any("NOT release-grade" in str(w.message) for w in record)
    _check_release(got, expected)


def test_an_unseeded_release_does_not_warn_and_differs_between_calls():
    c = np.full((50, 20), 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = tp.release(c, "laplace", epsilon=1, window=1)
        b = tp.release(c, "laplace", epsilon=1, window=1)
    assert not a.seeded and not np.array_equal(a.releases, b.releases)


def test_the_noise_of_a_laplace_release_has_the_discrete_laplace_mean_absolute_value():
    # ε = 0.5 per step, Δ = 2: scale b = 4, Pr[k] ∝ p^|k| with p = e^(−1/4), E|X| = 2p/(1 − p²).
    counts = np.full((1000, 100), 50, dtype=np.int64)
    r = tp.release(counts, "laplace", epsilon=0.5, window=1)
    noise = r.releases - counts
    assert np.all(noise == np.round(noise))
    p = math.exp(-0.25)
    expected = 2 * p / (1 - p * p)
    assert abs(np.abs(noise).mean() / expected - 1) < 0.03
    assert abs(noise.mean()) < 0.1
    assert np.all(r.published) and same_bits(r.budget, np.full(1000, 0.5))


def test_release_statistics_of_uniform_follow_its_per_step_budget():
    # uniform spends ε/w at every step: scale Δ·w/ε = 2·10/1 = 20.
    counts = np.zeros((400, 100), dtype=np.int64)
    r = tp.release(counts, "uniform", epsilon=1, window=10)
    p = math.exp(-1 / 20)
    assert abs(np.abs(r.releases).mean() / (2 * p / (1 - p * p)) - 1) < 0.03
    assert r.max_window_budget <= 1.0


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"counts": [[1, -2]]}, "step 1, cell 1: count -2 is negative"),
        ({"counts": [[1.5, 2]]}, "not an integer"),
        ({"counts": [[2.0**53, 2]]}, "2^52"),
        ({"counts": [1, 2, 3]}, "reshape"),
        ({"counts": [["a"]]}, "dtype"),
        ({"counts": [[np.nan, 1]]}, "counts"),
        ({"scheme": "magic"}, "not one of laplace"),
        ({"scheme": "pba"}, "backward= and/or forward="),
        ({"scheme": "planned"}, "budgets="),
        ({"budgets": [0.1, 0.1]}, "planned only"),
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": 1e-300}, "epsilon"),
        ({"window": 0}, "window"),
        ({"sensitivity": -1}, "sensitivity"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"interval": 1.5}, "interval"),
        ({"sampler": "magic"}, "sampler"),
        ({"backward": np.eye(3)}, "3×3 but the counts have 2 cells"),
    ],
)
def test_bad_release_arguments_are_named(kwargs, words):
    args = {"counts": [[1, 2], [3, 4]], "scheme": "bd", "epsilon": 1.0, "window": 2} | kwargs
    with pytest.raises(tp.TplError) as e:
        tp.release(**args)
    assert words in str(e.value)


def test_a_planned_release_that_overspends_a_window_names_the_plan_step():
    with pytest.raises(tp.TplError, match="budget plan, step 2"):
        tp.release([[1], [2]], "planned", epsilon=1, window=2, budgets=[0.6, 0.6])


def test_a_capped_allocation_says_why_as_the_cli_does(repo_data, cli):
    absorbing = EXAMPLES / "absorbing.csv"
    expected, _ = cli("allocate", "--strategy", "upper-bound", "--backward", absorbing, "--alpha", "50",
                      "--horizon", "5")
    got = tp.allocate("upper-bound", backward=read_matrix(absorbing), alpha=50, horizon=5)
    assert got.limited_by == expected["limited_by"] == {"side": "backward", "q": 0.8, "epsilon": got.limited_by["epsilon"]}
    assert got.note == expected["note"] and "not reached" in got.note
    assert set(got) == set(expected)
