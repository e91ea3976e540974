"""temporal_privacy.spark against the CLI and the library: Spark in local[2] mode, one
session for the module, its workers running this interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, ROOT, read_counts, read_matrix, require_java, require_module, same_bits

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# Without PySpark (an install of the package alone) these tests are skipped, not failed.
require_module("pyspark")
require_java()

from pyspark.sql import SparkSession  # noqa: E402

from temporal_privacy import spark as tps  # noqa: E402

SCHEMA = "timestamp_bucket long, user_id long, location_cell long"


@pytest.fixture(scope="module")
def spark():
    session = (
        SparkSession.builder.master("local[2]")
        .appName("temporal_privacy tests")
        .config("spark.sql.shuffle.partitions", 4)
        .config("spark.default.parallelism", 4)
        .config("spark.ui.enabled", False)
        .config("spark.ui.showConsoleProgress", False)
        .config("spark.log.level", "ERROR")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def ais_array(repo_data):
    return np.loadtxt(AIS / "stream.csv", delimiter=",", skiprows=1, dtype=np.uint64)


@pytest.fixture(scope="module")
def ais(spark, ais_array):
    # Spread over several partitions, rows shuffled: no order to lean on.
    rows = ais_array[np.random.default_rng(7).permutation(len(ais_array))].astype(np.int64)
    return spark.createDataFrame(rows.tolist(), SCHEMA).repartition(5).cache()


def frame(spark, records, schema=SCHEMA):
    return spark.createDataFrame([tuple(int(v) for v in r) for r in records], schema)


# ---------------------------------------------------------------------------------------
# Equal to the CLI on the AIS week.


def test_counts_of_the_ais_week_are_its_counts_file(repo_data, ais):
    assert np.array_equal(tps.counts(ais), read_counts(AIS / "counts.csv"))
    wider = tps.counts(ais, cells=30)
    assert wider.shape == (1944, 30) and not wider[:, 23:].any()
    assert np.array_equal(wider[:, :23], read_counts(AIS / "counts.csv"))


@pytest.mark.parametrize(
    "smoothing,steps,cells", [(None, None, None), (0.01, None, None), (0.01, "..972", None), (None, "973..", 30)]
)
def test_estimate_of_the_ais_week_equals_tpl_estimate(repo_data, cli, tmp_path, ais, smoothing, steps, cells):
    extra = [] if smoothing is None else ["--smoothing", str(smoothing)]
    extra += [] if steps is None else ["--steps", steps]
    extra += [] if cells is None else ["--cells", str(cells)]
    expected, _ = cli("estimate", "--stream", AIS / "stream.csv", "--out", tmp_path, *extra)
    got = tps.estimate(ais, smoothing, steps=steps, cells=cells)
    for side in ["forward", "backward"]:
        assert same_bits(got[side], read_matrix(tmp_path / f"transition_{side}.csv")), side
        assert got[f"{side}_identity_rows"] == expected[f"{side}_identity_rows"], side
    assert np.array_equal(got.counts, read_matrix(tmp_path / "transition_counts.csv").astype(np.int64))
    for key in ["users", "horizon", "transitions", "smoothing", "cell_ids"]:
        assert np.array_equal(got[key], expected[key]), key
    assert list(got.steps) == expected["steps"]
    if cells is not None:
        assert set(range(23, 30)) <= set(expected["forward_identity_rows"])  # the cells never seen


def test_estimate_equals_the_library_on_the_same_records(ais, ais_array):
    got, lib = tps.estimate(ais, 0.01, steps="100..1500"), tp.estimate(ais_array, 0.01, steps="100..1500")
    for key in lib:
        a, b = got[key], lib[key]
        assert (same_bits(a, b) if key in ("forward", "backward") else np.array_equal(a, b)), key


def test_transition_counts_add_across_partitions_and_people(spark, ais, ais_array):
    whole = tps.transition_counts(ais)
    assert whole.dtype == np.uint64 and int(whole.sum()) == 140 * 1943
    assert np.array_equal(whole, tps.transition_counts(ais.repartition(11, "location_cell")))
    # The people split in two streams: their counts add up to the whole's.
    odd = ais.where("user_id % 2 = 1")
    even = ais.where("user_id % 2 = 0")
    both = tps.transition_counts(odd, cells=23) + tps.transition_counts(even, cells=23)
    assert np.array_equal(both, whole)
    assert np.array_equal(tps.transition_counts(ais, steps=(5, 5)), np.zeros((23, 23)))


def test_buckets_evenly_spaced_from_any_origin_give_the_same_estimate(spark, ais_array):
    part = ais_array[ais_array[:, 0] < 200].astype(np.int64)
    moved = part * np.array([5, 1, 1]) + np.array([28_000_000, 10**12, 0])
    a = tps.estimate(frame(spark, part), 0.1)
    b = tps.estimate(frame(spark, moved), 0.1)
    assert same_bits(a.forward, b.forward) and np.array_equal(a.histogram, b.histogram)


def test_unsigned_64_bit_ids_as_decimals(spark):
    big = 2**64 - 1
    records = [(big - 1, big, 3), (big, big, big), (big - 1, 0, big), (big, 0, 3)]
    df = spark.createDataFrame(
        [tuple(map(__import__("decimal").Decimal, r)) for r in records],
        "timestamp_bucket decimal(20,0), user_id decimal(20,0), location_cell decimal(20,0)",
    )
    got = tps.estimate(df)
    lib = tp.estimate(np.array(records, dtype=np.uint64))
    assert same_bits(got.forward, lib.forward) and got.cell_ids.tolist() == [3, big]
    people = tps.personalized_leakage(df, 0.5).orderBy("max_tpl").collect()
    assert [int(p.user_id) for p in people] == [0, big] or [int(p.user_id) for p in people] == [big, 0]


# ---------------------------------------------------------------------------------------
# Per-person leakage.


def test_personalized_leakage_audits_the_budgets_at_the_releases_sensitivity(ais):
    # Regression: a release with Δ = 1 was audited as if Δ = 2 (half its leakage).
    at_one = tps.personalized_leakage(ais, [0.05] * 4, 0.01, sensitivity=1).orderBy("user_id").collect()
    doubled = tps.personalized_leakage(ais, [0.1] * 4, 0.01).orderBy("user_id").collect()
    assert [r.max_tpl for r in at_one] == [r.max_tpl for r in doubled]


def person_by_person(ais_array, user, budgets, smoothing, window, steps=None):
    """The library called on one person's stream."""
    own = ais_array[ais_array[:, 1] == user]
    e = tp.estimate(own, smoothing, steps=steps)
    if isinstance(budgets, float):
        return e, tp.leakage(e.backward, e.forward, epsilon=budgets, horizon=len(own), window=window)
    return e, tp.leakage(e.backward, e.forward, budgets, window=window)


@pytest.mark.parametrize("budgets,smoothing,window,steps", [(0.1, 0.01, 10, None), ("varied", None, None, "..972")])
def test_personalized_leakage_equals_the_library_person_by_person(ais, ais_array, budgets, smoothing, window, steps):
    if budgets == "varied":
        budgets = np.random.default_rng(3).uniform(0.01, 0.3, 500)
    people = tps.personalized_leakage(ais, budgets, smoothing, window, steps=steps)
    rows = {r.user_id: r for r in people.collect()}
    assert len(rows) == 140
    for user in np.random.default_rng(11).choice(140, 12, replace=False).tolist() + [0, 139]:
        e, lib = person_by_person(ais_array, user, budgets, smoothing, window, steps)
        r = rows[user]
        assert r.cells == len(e.cell_ids)
        assert same_bits(r.max_tpl, lib.max_tpl) and same_bits(r.max_bpl, lib.bpl.max())
        assert same_bits(r.max_fpl, lib.fpl.max()) and r.worst_step == int(np.argmax(lib.tpl)) + 1
        if window is None:
            assert r.max_window_leakage is None
        else:
            assert same_bits(r.max_window_leakage, lib.max_window_leakage)


def test_one_person_equals_tpl_estimate_then_tpl_leakage(cli, tmp_path, ais, ais_array):
    user = 17
    own = ais_array[ais_array[:, 1] == user]
    path = tmp_path / "one.csv"
    np.savetxt(path, own, fmt="%d", delimiter=",", header="timestamp_bucket,user_id,location_cell", comments="")
    cli("estimate", "--stream", path, "--smoothing", "0.05", "--out", tmp_path / "m")
    expected, _ = cli(
        "leakage", "--backward", tmp_path / "m/transition_backward.csv", "--forward",
        tmp_path / "m/transition_forward.csv", "--epsilon", "0.2", "--horizon", str(len(own)), "--window", "12",
    )
    r = tps.personalized_leakage(ais.where(f"user_id = {user}"), 0.2, 0.05, 12).first()
    assert same_bits(r.max_tpl, expected["max_tpl"])
    assert same_bits(r.max_window_leakage, expected["max_window_leakage"])


def test_summary_names_the_worst_person_and_exact_quantiles(ais):
    people = tps.personalized_leakage(ais, 0.05, 0.01, 6).cache()
    summary = tps.leakage_summary(people, quantiles=(0.0, 0.5, 0.9, 1.0))
    rows = people.collect()
    values = np.array([r.max_tpl for r in rows])
    worst = min((-r.max_tpl, r.user_id) for r in rows)
    assert summary["people"] == 140
    assert summary["worst"] == {"user_id": worst[1], "max_tpl": -worst[0]} and summary["max_tpl"] == values.max()
    for q, v in summary["quantiles"].items():
        assert v == np.quantile(values, q, method="inverted_cdf"), q
    windows = np.array([r.max_window_leakage for r in rows])
    assert summary["max_window_leakage"] == windows.max()
    assert summary["window_quantiles"][0.5] == np.quantile(windows, 0.5, method="inverted_cdf")
    assert "max_window_leakage" not in tps.leakage_summary(tps.personalized_leakage(ais, 0.05))


# ---------------------------------------------------------------------------------------
# A million rows, written as Parquet.


def test_a_million_row_parquet_stream_equals_the_library(spark, tmp_path):
    pa = require_module("pyarrow")
    import pyarrow.parquet as pq

    users, steps, cells = 2000, 500, 16
    rng = np.random.default_rng(2024)
    # A lazy random walk on a ring of cells: stay, or step to a neighbour.
    walk = np.empty((steps, users), dtype=np.int64)
    walk[0] = rng.integers(0, cells, users)
    for t in range(1, steps):
        walk[t] = (walk[t - 1] + rng.choice([-1, 0, 0, 0, 1], users)) % cells
    bucket = np.repeat(np.arange(steps, dtype=np.int64) * 60 + 1_700_000_000, users)
    user = np.tile(np.arange(users, dtype=np.int64) * 7919, steps)
    records = np.column_stack([bucket, user, walk.reshape(-1)])
    assert len(records) == 10**6
    path = tmp_path / "stream.parquet"
    pq.write_table(
        pa.table({"timestamp_bucket": bucket, "user_id": user, "location_cell": walk.reshape(-1)}),
        path,
        row_group_size=100_000,
    )
    df = spark.read.parquet(str(path))
    got = tps.estimate(df, 0.01, steps="..400")
    lib = tp.estimate(records.astype(np.uint64), 0.01, steps="..400")
    assert same_bits(got.forward, lib.forward) and same_bits(got.backward, lib.backward)
    assert np.array_equal(got.counts, lib.counts) and np.array_equal(got.histogram, lib.histogram)
    assert got.users == users and got.transitions == users * 399
    # Per-person leakage of every one of the 2000 people, checked for a few.
    people = tps.personalized_leakage(df, 0.1, 0.01, 20).cache()
    assert people.count() == users
    for u in [0, 7919 * 1234, 7919 * 1999]:
        e, r = person_by_person(records.astype(np.uint64), u, 0.1, 0.01, 20)
        row = people.where(f"user_id = {u}").first()
        assert same_bits(row.max_tpl, r.max_tpl) and same_bits(row.max_window_leakage, r.max_window_leakage)


# ---------------------------------------------------------------------------------------
# Bad input: the library's words.


@pytest.mark.parametrize(
    "records",
    [
        [[0, 0, 1], [0, 2, 1], [1, 0, 1]],  # user 2 missing at bucket 1
        [[0, 0, 1], [1, 0, 1], [3, 0, 1]],  # bucket 2 missing
        [[0, 0, 1], [0, 0, 1], [1, 0, 0]],  # twice
        [[0, 5, 1], [1, 5, 1], [1, 6, 1], [1, 6, 2], [0, 6, 2]],  # twice at bucket 1, before no one missing
        [[0, 5, 1], [1, 5, 1], [2, 5, 1], [0, 6, 2], [2, 6, 2], [2, 6, 3]],  # missing (1, 6) before twice (2, 6)
        [[0, 0, 1], [1, 1, 1]],  # every person missing once
    ],
)
def test_streams_that_are_not_dense_get_the_library_error(spark, records):
    with pytest.raises(tp.TplError) as lib:
        tp.estimate(records)
    with pytest.raises(tp.TplError) as got:
        tps.estimate(frame(spark, records))
    assert str(got.value) == str(lib.value)


@pytest.mark.parametrize("cells", [0, 2, 5000])
def test_bad_cells_get_the_library_error(spark, cells):
    records = [[0, 0, 1], [0, 1, 2], [1, 0, 2], [1, 1, 2]]
    with pytest.raises(tp.TplError) as lib:
        tp.estimate(records, cells=cells)
    with pytest.raises(tp.TplError) as got:
        tps.estimate(frame(spark, records), cells=cells)
    assert str(got.value) == str(lib.value)


def test_estimate_with_cells_equals_the_library(ais, ais_array):
    got, lib = tps.estimate(ais, 0.5, cells=40), tp.estimate(ais_array, 0.5, cells=40)
    assert same_bits(got.forward, lib.forward) and same_bits(got.backward, lib.backward)
    assert np.array_equal(got.histogram, lib.histogram) and got.backward_identity_rows == lib.backward_identity_rows


@pytest.mark.parametrize(
    "records,schema,kwargs,words",
    [
        ([[0, 0, -1]], SCHEMA, {}, "-1 is not a whole number"),
        ([[0, 0, None]], SCHEMA, {}, "1 row(s) without a value"),
        ([["0", "0", "1"]], "timestamp_bucket string, user_id string, location_cell string", {}, "is string"),
        ([(0.0, 0, 1)], "timestamp_bucket double, user_id long, location_cell long", {}, "is double"),
        ([[0, 0, 1]], "t long, user_id long, location_cell long", {}, "no column 'timestamp_bucket'"),
        ([[0, 0, 1]], "t long, user_id long, location_cell long", {"bucket": "t", "cells": 1}, "has cell 1"),
        ([[0, 0, 1]], SCHEMA, {"steps": "2.."}, "outside the data"),
        ([[0, 0, 1]], SCHEMA, {"steps": "x"}, "not a step range"),
        ([[0, 0, 1]], SCHEMA, {"smoothing": -1.0}, "smoothing"),
        ([], SCHEMA, {}, "empty stream"),
    ],
)
def test_bad_input_is_named(spark, records, schema, kwargs, words):
    with pytest.raises(tp.TplError) as e:
        tps.estimate(spark.createDataFrame(records, schema), **kwargs)
    assert words in str(e.value)


def test_more_than_4096_cells_are_refused(spark):
    df = spark.range(4097).selectExpr("0L as timestamp_bucket", "id as user_id", "id as location_cell")
    with pytest.raises(tp.TplError, match="4097 distinct cells: at most 4096"):
        tps.counts(df)


def test_bad_budgets_and_windows_are_refused_before_any_job(ais):
    for budgets, window, words in [(-0.1, None, "epsilon"), ([0.1, -1.0], None, "budgets"), (0.1, 5000, "window")]:
        with pytest.raises(tp.TplError, match=words):
            tps.personalized_leakage(ais, budgets, window=window)
    with pytest.raises(tp.TplError, match="quantiles"):
        tps.leakage_summary(tps.personalized_leakage(ais, 0.1), quantiles=[1.5])
    with pytest.raises(tp.TplError, match="DataFrame"):
        tps.counts(np.zeros((3, 3)))


# ---------------------------------------------------------------------------------------
# The command line, and the message without PySpark.


def run_module(*args):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.run(
        [sys.executable, "-m", "temporal_privacy.spark", *map(str, args)],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )


def test_command_line_estimate_writes_the_files_of_tpl_estimate(repo_data, cli, tmp_path):
    expected, _ = cli("estimate", "--stream", AIS / "stream.csv", "--smoothing", "0.01", "--out", tmp_path / "cli")
    out = run_module(
        "estimate", "--stream", AIS / "stream.csv", "--smoothing", "0.01", "--out", tmp_path / "spark", "--master", "local[2]"
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["sensitive"] is True and "as sensitive as it is" in out.stderr
    for key in ["users", "horizon", "cells", "cell_ids", "transitions", "steps", "forward_identity_rows"]:
        assert summary[key] == expected[key], key
    for name in ["transition_forward.csv", "transition_backward.csv", "transition_counts.csv"]:
        assert same_bits(read_matrix(tmp_path / "spark" / name), read_matrix(tmp_path / "cli" / name)), name
        assert "SENSITIVE" in (tmp_path / "spark" / name).read_text().splitlines()[1]
    assert (tmp_path / "spark/cells.csv").read_text() == (tmp_path / "cli/cells.csv").read_text()
    assert (tmp_path / "spark/counts.csv").read_text() == (AIS / "counts.csv").read_text()


def test_command_line_leakage_writes_people_and_the_summary(repo_data, spark, tmp_path, ais_array):
    part = ais_array[ais_array[:, 0] < 300]
    path = tmp_path / "part.csv"
    np.savetxt(path, part, fmt="%d", delimiter=",", header="timestamp_bucket,user_id,location_cell", comments="")
    (tmp_path / "budgets.txt").write_text("# a budget per step\n" + "0.05\n" * 300)
    out = run_module(
        "leakage", "--stream", path, "--budgets", tmp_path / "budgets.txt", "--window", "10", "--smoothing", "0.1",
        "--out", tmp_path / "out", "--master", "local[2]",
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary == json.loads((tmp_path / "out/summary.json").read_text())
    people = spark.read.parquet(str(tmp_path / "out/people"))
    worst = people.orderBy("max_tpl", ascending=False).first()
    assert summary["people"] == 140 and summary["worst"]["max_tpl"] == worst.max_tpl
    _, lib = person_by_person(part, worst.user_id, np.full(300, 0.05), 0.1, 10)
    assert same_bits(summary["max_tpl"], lib.max_tpl)


@pytest.mark.parametrize(
    "args,words",
    [
        (["estimate", "--stream", "/nonexistent.parquet", "--out", "x"], "no such file"),
        (["leakage", "--stream", AIS / "stream.csv", "--out", "x"], "--epsilon"),
        (["estimate", "--stream", AIS / "stream.csv", "--out", "x", "--smoothing", "nan"], "finite"),
    ],
)
def test_command_line_refuses_bad_arguments_before_spark_starts(repo_data, args, words):
    out = run_module(*args)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m temporal_privacy.spark: error: ") and words in lines[0]


def test_command_line_names_bad_rows_with_exit_status_2(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("timestamp_bucket,user_id,location_cell\n0,0,1\n1,0,x\n")
    out = run_module("estimate", "--stream", path, "--out", tmp_path / "o", "--master", "local[1]")
    assert out.returncode == 2 and out.stdout == ""
    # Spark's own log lines may come first; the error is one line, the last.
    errors = [l for l in out.stderr.splitlines() if "temporal_privacy.spark: error" in l]
    assert out.stderr.strip().splitlines()[-1] == errors[0]
    assert errors == [f"python -m temporal_privacy.spark: error: {path}: column 3 (location_cell): 'x' is not a whole number from 0 to {2**64 - 1}"]
    assert not (tmp_path / "o").exists()


def test_without_pyspark_the_import_error_names_the_extra():
    code = "import sys; sys.modules['pyspark'] = None\ntry:\n import temporal_privacy.spark\nexcept ImportError as e:\n print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'temporal-privacy[spark]'" in out.stdout and "PySpark ≥ 4" in out.stdout
