"""postprocess and compare against the CLI's JSON, to the last bit."""

from __future__ import annotations

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, AIS_MATRICES, ROOT, AIS_SMOOTHED, EXAMPLES, ais_smoothed, read_counts, read_matrix, require_module, same_bits, without_provenance

STEPS = 300


@pytest.fixture(scope="module")
def ais(repo_data, tmp_path_factory):
    """The first STEPS steps of the AIS week as a counts file, its counts and matrices."""
    d = tmp_path_factory.mktemp("ais")
    lines = (AIS / "counts.csv").read_text().splitlines()
    (d / "counts.csv").write_text("\n".join(lines[: STEPS + 1]) + "\n")
    counts = read_counts(d / "counts.csv")
    pb, pf = read_matrix(AIS / "transition_backward.csv"), read_matrix(AIS / "transition_forward.csv")
    return d, counts, pb, pf


@pytest.fixture(scope="module")
def released(ais, tpl_bin):
    """A seeded laplace release by the CLI as CSV, and the same release by Python."""
    import subprocess

    d, counts, _, _ = ais
    out = subprocess.run(
        [str(tpl_bin), "release", "--counts", d / "counts.csv", "--scheme", "bd", "--epsilon", "1",
         "--window", "10", "--seed", "3", "--format", "csv"],
        capture_output=True, text=True, check=True,
    )
    (d / "r.csv").write_text(out.stdout)
    with pytest.warns(UserWarning):
        r = tp.release(counts, "bd", epsilon=1, window=10, seed=3)
    return d / "r.csv", r


@pytest.mark.parametrize("estimator", ["map", "map-dbsec", "map-integer", "mle", "smooth"])
def test_postprocess_of_a_release_equals_the_cli(repo_data, cli, ais, released, estimator):
    d, counts, pb, pf = ais
    r_csv, r = released
    total = int(counts[0].sum())
    extra = ["--backward", AIS / "transition_backward.csv"] if estimator == "smooth" else []
    expected, stderr = cli(
        "postprocess", "--releases", r_csv, "--total", total, "--forward", AIS / "transition_forward.csv",
        "--estimator", estimator, *extra,
    )
    # The estimator's warnings: on standard error from the CLI, as UserWarning from Python.
    warned = [line.split(": ", 3)[-1] for line in stderr.splitlines() if line.startswith("tpl: warning")]
    with __import__("warnings").catch_warnings(record=True) as record:
        __import__("warnings").simplefilter("always")
        got = tp.postprocess(r, total=total, forward=pf, estimator=estimator,
                             backward=pb if estimator == "smooth" else None)
    assert [str(w.message) for w in record] == warned == got.warnings
    assert got.estimator == expected["estimator"] and got.t.tolist() == expected["t"]
    assert same_bits(got.estimates, expected["estimates"])
    if estimator == "map-integer":
        assert got.estimates.dtype == np.int64
        assert np.all(got.estimates.sum(axis=1) == total)


def _cli_intervals(cli, ais, released, *flags):
    """`tpl postprocess --interval 0.9` of the released AIS stream with `flags`; with the
    releases, the population and the forward matrix the same call takes from Python."""
    _, counts, _, pf = ais
    r_csv, r = released
    total = int(counts[0].sum())
    expected, _ = cli(
        "postprocess", "--releases", r_csv, "--total", total, "--forward", AIS / "transition_forward.csv",
        "--interval", "0.9", *flags,
    )
    return expected, r, total, pf


def test_postprocess_intervals_with_a_seed_equal_the_cli(repo_data, cli, ais, released):
    expected, r, total, pf = _cli_intervals(
        cli, ais, released, "--interval-method", "bootstrap", "--replicates", "20", "--seed", "5"
    )
    got = tp.postprocess(r, total=total, forward=pf, interval=0.9, replicates=20, seed=5, interval_method="bootstrap")
    assert same_bits(got.estimates, expected["estimates"])
    assert got.interval == expected["interval"] == 0.9
    assert got.interval_method == expected["interval_method"] == "bootstrap"
    assert same_bits(got.lower, expected["lower"]) and same_bits(got.upper, expected["upper"])


def test_postprocess_model_intervals_are_the_default_and_equal_the_cli(repo_data, cli, ais, released):
    expected, r, total, pf = _cli_intervals(cli, ais, released)
    got = tp.postprocess(r, total=total, forward=pf, interval=0.9)
    assert got.interval_method == expected["interval_method"] == "model"
    assert same_bits(got.lower, expected["lower"]) and same_bits(got.upper, expected["upper"])
    assert np.all(got.lower <= got.estimates) and np.all(got.estimates <= got.upper)
    assert np.all(got.lower >= 0) and np.all(got.upper <= total)


def test_postprocess_with_a_constant_epsilon_a_uniform_prior_and_a_given_prior_equals_the_cli(cli, tmp_path):
    releases = np.array([[6.0, 9.0, -1.0], [4.0, 12.0, 2.0], [7.0, 8.0, 1.0], [5.5, 10.0, 0.0]])
    f = tmp_path / "r.csv"
    f.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in releases) + "\n")
    P = [[0.9, 0.05, 0.05], [0.2, 0.7, 0.1], [0.0, 0.5, 0.5]]
    pf = tmp_path / "pf.csv"
    pf.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in P) + "\n")
    prior = tmp_path / "prior.csv"
    prior.write_text("0.25,0.5,0.25\n")
    # The causal filter uses the prior (smooth, the default, starts from the releases on up to
    # 64 cells and says that a prior given is not used).
    for prior_arg, prior_py in [("uniform", "uniform"), (str(prior), [0.25, 0.5, 0.25])]:
        expected, _ = cli("postprocess", "--releases", f, "--total", "16", "--epsilon", "0.3",
                          "--sensitivity", "1", "--forward", pf, "--prior", prior_arg, "--causal")
        got = tp.postprocess(releases, total=16, epsilon=0.3, sensitivity=1, forward=P, prior=prior_py, causal=True)
        assert same_bits(got.estimates, expected["estimates"])
        with pytest.warns(UserWarning, match="the prior given is not used"):
            tp.postprocess(releases, total=16, epsilon=0.3, sensitivity=1, forward=P, prior=prior_py)


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"epsilon": None}, "budgets are unknown"),
        ({"budgets": [0.1], "epsilon": None}, "1 budgets, but there are 2 releases"),
        ({"budgets": [0.1, 0.1]}, "not both"),
        ({"forward": None}, "forward"),
        ({"forward": np.eye(3)}, "3×3"),
        ({"estimator": "magic"}, "estimator"),
        ({"prior": "magic"}, "prior"),
        ({"prior": [0.5, 0.2]}, "prior"),
        ({"total": -1}, "total"),
        ({"interval": 0.0}, "interval"),
        ({"seed": 1}, "interval"),
        ({"interval": 0.9, "replicates": 1}, "replicates"),
        ({"interval": 0.9, "replicates": 10**12, "interval_method": "bootstrap"}, "replicates"),
        ({"interval": 0.9, "replicates": 50}, "replicates: a setting of the bootstrap"),
        ({"interval": 0.9, "sampler": "secure"}, "sampler: a setting of the bootstrap"),
        ({"interval": 0.9, "seed": 1, "interval_method": "model"}, "seed: a setting of the bootstrap"),
        ({"releases": [[1.0, np.inf], [1.0, 2.0]]}, "releases"),
    ],
)
def test_bad_postprocess_arguments_are_named(kwargs, words):
    args = {"releases": [[6.0, 9.0], [4.0, 12.0]], "total": 15, "epsilon": 0.5,
            "forward": [[0.9, 0.1], [0.2, 0.8]]} | kwargs
    with pytest.raises(tp.TplError) as e:
        tp.postprocess(**args)
    assert words in str(e.value)


def test_compare_with_a_seed_equals_the_cli(repo_data, cli, ais):
    d, counts, _, _ = ais
    expected, stderr = cli(
        "compare", "--counts", d / "counts.csv",
        *AIS_SMOOTHED,
        "--epsilon", "1", "--window", "10", "--runs", "3", "--seed", "1", "--postprocess", "map",
    )
    assert "NOT private" in stderr
    with pytest.warns(UserWarning, match="NOT private"):
        got = tp.compare(counts, **ais_smoothed(), epsilon=1, window=10, runs=3, seed=1, postprocess="map")
    assert got.rows == expected["rows"]
    for key in ["epsilon", "window", "alpha", "sensitivity", "runs", "seed", "seeded", "horizon", "cells",
                "postprocess", "version"]:
        assert got[key] == expected[key], key
    assert [r["strategy"] for r in got.rows][:2] == ["laplace", "laplace+map"]
    # The benchmark's relative error beside the absolute and squared ones.
    assert all(r["mre"] > 0 and r["mre_std"] >= 0 for r in got.rows if r["error"] is None)


@pytest.mark.parametrize("schemes,runs", [("upper-bound,window", 1), ("dsat,bd,fast", 2)])
def test_compare_of_named_schemes_equals_the_cli(repo_data, cli, ais, schemes, runs):
    d, counts, pb, pf = ais
    expected, _ = cli(
        "compare", "--counts", d / "counts.csv",
        *AIS_MATRICES,
        "--epsilon", "1", "--window", "10", "--runs", str(runs), "--seed", "2", "--schemes", schemes,
    )
    with pytest.warns(UserWarning):
        got = tp.compare(counts, backward=pb, forward=pf, epsilon=1, window=10, runs=runs, seed=2,
                         schemes=schemes.split(","))
    assert got.rows == expected["rows"]
    assert [r["strategy"] for r in got.rows] == schemes.split(",")
    if schemes.startswith("upper-bound"):
        # A strategy that cannot run on this input says why.
        assert got.rows[0]["mae"] is None and "disjoint supports" in got.rows[0]["error"]
    else:
        # dsat and fast, run only when named, keep every window within ε.
        assert got.rows[0]["max_window_budget"] <= 1 and got.rows[2]["max_window_budget"] <= 1


def test_the_standard_suite_equals_the_cli(repo_data, cli):
    path = ROOT / "testdata" / "us_unemployment_monthly" / "counts.csv"
    expected, _ = cli("compare", "--suite", "standard", "--counts", path, "--epsilon", "1", "--window", "40",
                      "--runs", "2", "--seed", "5")
    with pytest.warns(UserWarning):
        got = tp.compare(read_counts(path), epsilon=1, window=40, runs=2, seed=5, suite="standard")
    assert got.rows == expected["rows"]
    assert [r["strategy"] for r in got.rows] == ["laplace", "uniform", "sample", "bd", "ba", "pba", "dsat", "fast"]
    for kwargs, words in [({"suite": "everything"}, "suite"), ({"suite": "standard", "schemes": ["bd"]}, "not both")]:
        with pytest.raises(tp.TplError, match=words):
            tp.compare(read_counts(path)[:50], epsilon=1, window=4, runs=1, **kwargs)


def test_the_comparison_as_a_dataframe():
    pd = require_module("pandas")
    c = tp.compare(np.array([[5, 5]] * 8), epsilon=1, window=2, runs=1, schemes=["laplace", "sample"])
    df = c.dataframe
    assert isinstance(df, pd.DataFrame) and list(df.index) == ["laplace", "sample"]


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"schemes": ["magic"]}, "magic"),
        ({"postprocess": "mle"}, "postprocess"),
        ({"runs": 0}, "runs"),
        ({"counts": [[1.5, 2]] * 3}, "not an integer"),
        ({"window": None}, "window"),
        ({"backward": np.eye(3)}, "3×3"),
    ],
)
def test_bad_compare_arguments_are_named(kwargs, words):
    args = {"counts": [[5, 5]] * 6, "epsilon": 1.0, "window": 2, "runs": 1} | kwargs
    with pytest.raises(tp.TplError) as e:
        tp.compare(**args)
    assert words in str(e.value)


def test_compare_shows_the_kalman_baseline_unless_told_not_to():
    counts = np.array([[10 + t % 3, 20 - t % 4] for t in range(12)])
    forward = [[0.9, 0.1], [0.2, 0.8]]
    kw = dict(forward=forward, epsilon=1, window=4, runs=1, schemes=["bd"], postprocess="smooth")
    with pytest.warns(UserWarning):
        rows = [r["strategy"] for r in tp.compare(counts, seed=3, **kw).rows]
    assert rows == ["bd", "bd+smooth", "bd+kalman", "prior-mean"]
    with pytest.warns(UserWarning):
        rows = [r["strategy"] for r in tp.compare(counts, seed=3, baseline=False, **kw).rows]
    assert rows == ["bd", "bd+smooth", "prior-mean"]
    with pytest.raises(tp.TplError, match="baseline"):
        tp.compare(counts, baseline="yes", **kw)


def test_the_defaults_are_smooth_offline_and_the_causal_filter_online():
    P = np.array([[0.9, 0.1], [0.2, 0.8]])
    noisy = np.array([[6.0, 9.0], [4.0, 12.0], [7.0, 8.0], [5.0, 10.0]])
    e = tp.postprocess(noisy, total=15, epsilon=0.5, forward=P)
    assert (e.estimator, e.estimator_default, e.causal) == ("smooth", True, False)
    assert np.array_equal(e.estimates, tp.postprocess(noisy, total=15, epsilon=0.5, forward=P, estimator="smooth").estimates)
    c = tp.postprocess(noisy, total=15, epsilon=0.5, forward=P, causal=True)
    assert (c.estimator, c.estimator_default, c.causal) == ("map", True, True)
    named = tp.postprocess(noisy, total=15, epsilon=0.5, forward=P, estimator="map")
    assert (named.estimator_default, named.causal) == (False, True) and np.array_equal(named.estimates, c.estimates)
    for not_causal in ("smooth", "kalman"):
        with pytest.raises(tp.TplError, match="causal"):
            tp.postprocess(noisy, total=15, epsilon=0.5, forward=P, causal=True, estimator=not_causal)
    with pytest.raises(tp.TplError, match="causal"):
        tp.postprocess(noisy, total=15, epsilon=0.5, forward=P, causal="yes")
    counts = np.array([[5, 5]] * 8)
    default = tp.compare(counts, P, P, epsilon=1, window=2, runs=1, seed=1, schemes=["bd"], postprocess=True)
    assert default.postprocess == "smooth" and default.postprocess_default is True
    assert [r["strategy"] for r in default.rows][:2] == ["bd", "bd+smooth"]
    named = tp.compare(counts, P, P, epsilon=1, window=2, runs=1, seed=1, schemes=["bd"], postprocess="map")
    assert named.postprocess == "map" and named.postprocess_default is False
    plain = tp.compare(counts, P, P, epsilon=1, window=2, runs=1, seed=1, schemes=["bd"])
    assert plain.postprocess is None and "postprocess_default" not in plain


def test_the_default_equals_the_cli_default(repo_data, cli, tmp_path):
    P = EXAMPLES / "fig8_forward.csv"
    noisy = np.array([[6.0, 9.0], [4.0, 12.0], [7.0, 8.0]])
    path = tmp_path / "r.csv"
    path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in noisy) + "\n")
    for extra, kw in (([], {}), (["--causal"], {"causal": True})):
        expected, _ = cli("postprocess", "--releases", path, "--total", "15", "--epsilon", "0.5", "--forward", P, *extra)
        got = tp.postprocess(noisy, total=15, epsilon=0.5, forward=read_matrix(P), **kw)
        assert got.estimator == expected["estimator"] and got.estimator_default == expected["estimator_default"]
        assert got.causal == expected["causal"] and same_bits(got.estimates, expected["estimates"])


def test_the_comparison_page_is_the_cli_page_but_for_its_provenance(repo_data, cli, ais, tmp_path):
    d, counts, _, _ = ais
    cli_page = tmp_path / "cli.html"
    cli("compare", "--counts", d / "counts.csv", *AIS_SMOOTHED, "--epsilon", "1", "--window", "10", "--runs", "2",
        "--seed", "3", "--postprocess", "--report", cli_page)
    with pytest.warns(UserWarning, match="NOT private"):
        got = tp.compare(counts, **ais_smoothed(), epsilon=1, window=10, runs=2, seed=3, postprocess=True)
    wrote = got.report(tmp_path / "py.html", name="counts.csv")
    page = (tmp_path / "py.html").read_text()
    assert wrote == {"out": str(tmp_path / "py.html"), "bytes": len(page.encode())}
    assert "temporal_privacy.compare (Python)" in page
    # The CLI read the matrices from files; here they were given.
    from_files, given = "Matrices read from files", "Matrices given"
    cli_text = cli_page.read_text()
    assert from_files in cli_text and given in page
    cli_sentence = cli_text[cli_text.index(from_files):cli_text.index("</dd>", cli_text.index(from_files))]
    py_sentence = page[page.index(given):page.index("</dd>", page.index(given))]
    assert without_provenance(page).replace(py_sentence, "") == without_provenance(cli_text).replace(cli_sentence, "")
    assert got.matrices == {"source": "given", "train_steps": None, "score_steps": [1, STEPS], "in_sample": None}


def test_a_comparison_page_needs_an_html_name(tmp_path):
    c = tp.compare(np.array([[5, 5]] * 8), epsilon=1, window=2, runs=1, schemes=["laplace"])
    with pytest.raises(tp.TplError, match="html"):
        c.report(tmp_path / "counts.csv")
    with pytest.raises(tp.TplError, match="cannot write"):
        c.report(tmp_path / "missing" / "c.html")
    assert not (tmp_path / "counts.csv").exists()


def test_a_comparison_pickles_copies_and_converts_as_plain_data(tmp_path):
    import copy
    import dataclasses
    import pickle

    c = tp.compare(np.array([[5, 5]] * 8), epsilon=1, window=2, runs=1, schemes=["laplace"])
    back = pickle.loads(pickle.dumps(c))
    assert back.to_dict() == c.to_dict() and back.rows == c.rows
    with pytest.raises(tp.TplError, match="no run to draw"):
        back.report(tmp_path / "c.html")
    deep = copy.deepcopy(c)
    assert deep.report(tmp_path / "d.html")["bytes"] > 0
    assert dataclasses.asdict(c)["rows"] == c.rows
