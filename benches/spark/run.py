"""Benchmark (not a test): `temporal_privacy.spark.estimate` in Spark local mode against the
single-process `tpl estimate` on the same synthetic stream, and per-person leakage through
Spark against a loop over people in one Python process. See README.md beside this file.

    python benches/spark/run.py --tpl target/release/tpl [--rows 10000000] [--runs 3] [--dir /tmp/tpl-spark-bench]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq


def stream(rows: int, steps: int, cells: int, seed: int) -> pa.Table:
    """A lazy random walk on a ring of cells, one row per person per bucket, in bucket order
    (as `tpl simulate` writes streams)."""
    users = rows // steps
    rng = np.random.default_rng(seed)
    walk = np.empty((steps, users), dtype=np.int64)
    walk[0] = rng.integers(0, cells, users)
    for t in range(1, steps):
        walk[t] = (walk[t - 1] + rng.choice(np.array([-1, 0, 0, 0, 1]), users)) % cells
    return pa.table(
        {
            "timestamp_bucket": np.repeat(np.arange(steps, dtype=np.int64), users),
            "user_id": np.tile(np.arange(users, dtype=np.int64), steps),
            "location_cell": walk.reshape(-1),
        }
    )


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tpl", required=True)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--cells", type=int, default=64)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--people-rows", type=int, default=1_000_000, help="rows of the per-person leakage part")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--dir", default="/tmp/tpl-spark-bench")
    p.add_argument("--people-only", action="store_true", help="time the per-person leakage part only")
    a = p.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import temporal_privacy as tp
    from temporal_privacy import spark as tps

    start = time.perf_counter()
    spark = (SparkSession.builder.master(a.master).config("spark.ui.showConsoleProgress", False)
             .config("spark.log.level", "ERROR").config("spark.driver.memory", "2g").getOrCreate())
    print(f"Spark session ({a.master}): {time.perf_counter() - start:.1f} s")
    if not a.people_only:
        estimates(a, d, spark, tps)
    people(a, d, spark, tp, tps)
    spark.stop()


def estimates(a, d, spark, tps) -> None:
    table = stream(a.rows, a.steps, a.cells, 1)
    pq.write_table(table, d / "stream.parquet", row_group_size=1_000_000)
    pacsv.write_csv(table, d / "stream.csv", pacsv.WriteOptions(quoting_style="none"))
    print(f"{a.rows} rows ({a.rows // a.steps} people × {a.steps} steps, {a.cells} cells); "
          f"CSV {os.path.getsize(d / 'stream.csv') / 1e6:.0f} MB, Parquet {os.path.getsize(d / 'stream.parquet') / 1e6:.0f} MB")

    cli = [timed(lambda: subprocess.run([a.tpl, "estimate", "--stream", str(d / "stream.csv"), "--out", str(d / "cli"),
                                         "--smoothing", "0.01"], check=True, capture_output=True)) for _ in range(a.runs)]
    print(f"tpl estimate (CSV, one process): median {statistics.median(cli):.1f} s of {[round(t, 1) for t in cli]}")
    for form in ["parquet", "csv"]:
        def run():
            if form == "parquet":
                df = spark.read.parquet(str(d / "stream.parquet"))
            else:
                df = spark.read.option("header", True).schema(
                    "timestamp_bucket long, user_id long, location_cell long").csv(str(d / "stream.csv"))
            return tps.estimate(df, 0.01)
        times = [timed(run) for _ in range(a.runs)]
        print(f"spark estimate ({form}, {a.master}): median {statistics.median(times):.1f} s of {[round(t, 1) for t in times]}")


def people(a, d, spark, tp, tps) -> None:
    # Per-person leakage: every person's own matrices and the leakage of ε = 0.1 per step.
    part = stream(a.people_rows, a.steps, a.cells, 2)
    pq.write_table(part, d / "people.parquet")
    records = np.column_stack([part.column(c).to_numpy() for c in part.column_names]).astype(np.uint64)
    users = records[:, 1]
    order = np.argsort(users, kind="stable")
    bounds = np.searchsorted(users[order], np.arange(users.max() + 2))

    def loop():
        for u in range(len(bounds) - 1):
            own = records[order[bounds[u]:bounds[u + 1]]]
            e = tp.estimate(own, 0.01)
            tp.leakage(e.backward, e.forward, epsilon=0.1, horizon=len(own), window=10)

    single = timed(loop)
    print(f"per-person leakage, one Python process ({len(bounds) - 1} people): {single:.1f} s")
    df = spark.read.parquet(str(d / "people.parquet"))
    times = [timed(lambda: tps.personalized_leakage(df, 0.1, 0.01, 10).write.mode("overwrite").parquet(str(d / "people_out")))
             for _ in range(a.runs)]
    print(f"per-person leakage, spark ({a.master}): median {statistics.median(times):.1f} s of {[round(t, 1) for t in times]}")


if __name__ == "__main__":
    main()
