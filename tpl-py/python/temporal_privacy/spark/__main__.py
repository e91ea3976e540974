"""The command line of temporal_privacy.spark, for a stream in Parquet or CSV:

    python -m temporal_privacy.spark estimate --stream S --out DIR [--smoothing s] [--cells n] [--steps A..B]
    python -m temporal_privacy.spark leakage --stream S --out DIR (--epsilon e | --budgets FILE)
                                            [--window W] [--smoothing s] [--steps A..B]

or the same through ``spark-submit`` (``spark-submit --archives env.tar.gz#env
$(python -c 'import temporal_privacy.spark.__main__ as m; print(m.__file__)') estimate …``;
``docs/spark.md``). ``estimate`` writes the files of ``tpl estimate`` (the matrices, the
transition counts, ``cells.csv``) and ``counts.csv`` (people per bucket and cell);
``leakage`` writes ``people/`` (Parquet, one row per person) and ``summary.json``. Both
print a JSON summary on standard output. Bad input exits with status 2 and one line
``temporal_privacy.spark: error: …`` on standard error.

Everything written is derived from the private stream, and is as sensitive as it is.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Optional

PROG = "python -m temporal_privacy.spark"
NOTE = (
    "note: these files are estimated from the private stream and are as sensitive as it is; "
    "keep them with it, never beside releases as if they were public"
)


class UserError(Exception):
    """Bad input: reported on one line, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="tpl estimate and per-person leakage on Apache Spark")
    sub = p.add_subparsers(dest="command", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--stream", required=True, help="the stream: a Parquet file or folder, or a CSV file or folder")
        q.add_argument("--input-format", choices=["parquet", "csv"], help="default: from the name (.csv or else Parquet)")
        q.add_argument("--out", required=True, help="folder for the results (created)")
        q.add_argument("--smoothing", type=float, help="Laplacian smoothing s ≥ 0 (TKDE eq. 28)")
        q.add_argument("--steps", help="estimate from steps A..B only (step t: the t-th bucket, from 1)")
        q.add_argument("--bucket", default="timestamp_bucket", help="bucket column (default %(default)s)")
        q.add_argument("--user", default="user_id", help="person column (default %(default)s)")
        q.add_argument("--cell", default="location_cell", help="cell column (default %(default)s)")
        q.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")

    e = sub.add_parser("estimate", help="forward and backward matrices, transition counts, counts (tpl estimate)")
    common(e)
    e.add_argument("--cells", type=int, help="index rows by cell id 0..n−1 (cells never seen: identity rows)")
    lk = sub.add_parser("leakage", help="every person's leakage under their own matrices, and the summary")
    common(lk)
    lk.add_argument("--epsilon", type=float, help="the budget ε of every step")
    lk.add_argument("--budgets", help="a budget file: one ε_t per line (# comments)")
    lk.add_argument(
        "--sensitivity",
        type=float,
        default=2.0,
        help="the L1 sensitivity Δ the release's budgets were calibrated to: each ε_t is audited as 2·ε_t/Δ (default 2)",
    )
    lk.add_argument("--window", type=int, help="report each person's worst leakage over W steps")
    lk.add_argument("--quantiles", default="0.5,0.9,0.99", help="levels of the summary (default %(default)s)")
    return p


def _input_format(args: argparse.Namespace) -> str:
    path = Path(args.stream)
    if not path.exists() and "://" not in args.stream:
        raise UserError(f"{args.stream}: no such file or folder")
    if args.input_format:
        return args.input_format
    if path.suffix.lower() == ".csv" or (path.is_dir() and any(path.glob("*.csv")) and not any(path.glob("*.parquet"))):
        return "csv"
    return "parquet"


def _budgets(path: str) -> list:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None
    values = []
    for line, raw in enumerate(text.splitlines(), 1):
        v = raw.split("#", 1)[0].strip()
        if v:
            try:
                values.append(float(v))
            except ValueError:
                raise UserError(f"{path}: line {line}: {v!r} is not a number") from None
    return values


def _session(master: Optional[str]):
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    conf = SparkConf()
    chosen = master or conf.get("spark.master", "local[*]")
    if chosen.startswith("local"):
        # Local workers run the driver's interpreter (where temporal_privacy is installed).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("temporal_privacy.spark").config("spark.log.level", "ERROR")
    if master:
        builder = builder.master(master)
    return builder.getOrCreate()


def _read(spark, args: argparse.Namespace, form: str):
    """The stream as a DataFrame of whole numbers: Parquet as it is typed, CSV as text whose
    fields must be whole numbers 0..2⁶⁴−1 (as ``tpl estimate`` reads them)."""
    from pyspark.sql import functions as F

    names = [args.bucket, args.user, args.cell]
    if form == "parquet":
        return spark.read.parquet(args.stream)
    df = spark.read.option("header", True).option("comment", "#").csv(args.stream)
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise UserError(f"{args.stream}: no column {missing[0]!r} in the header (columns: {', '.join(df.columns)})")
    df = df.select(*[F.trim(F.col(n)).alias(n) for n in names])
    bad = F.lit(False)
    for n in names:
        bad = bad | F.col(n).isNull() | ~F.col(n).rlike("^[0-9]{1,20}$")
    first = df.where(bad).first()
    if first is not None:
        for k, n in enumerate(names):
            v = first[n]
            if v is None or not v.isdigit() or len(v) > 20:
                raise UserError(
                    f"{args.stream}: column {k + 1} ({n}): {v!r} is not a whole number from 0 to {2**64 - 1}"
                )
    typed = df.select(*[F.col(n).cast("decimal(20,0)").alias(n) for n in names])
    largest = typed.agg(*[F.max(n).alias(n) for n in names]).first()
    for k, n in enumerate(names):
        if largest[n] is not None and int(largest[n]) > 2**64 - 1:
            raise UserError(f"{args.stream}: column {k + 1} ({n}): {int(largest[n])} is not a whole number from 0 to {2**64 - 1}")
    # Long columns when every value fits (faster to sort and group).
    if all(largest[n] is None or int(largest[n]) < 2**63 for n in names):
        typed = df.select(*[F.col(n).cast("long").alias(n) for n in names])
    return typed


def _matrix_text(comment: list, rows) -> str:
    lines = [f"# {c}" for c in comment]
    lines += [",".join(repr(float(v)) if isinstance(v, float) else str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def _estimate(spark, args: argparse.Namespace, form: str) -> dict:
    from temporal_privacy.spark import estimate

    df = _read(spark, args, form)
    e = estimate(df, args.smoothing, cells=args.cells, steps=args.steps, bucket=args.bucket, user=args.user, cell=args.cell)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    smoothing = "none" if e.smoothing is None else f"s = {e.smoothing}"
    head = (
        f"temporal_privacy.spark estimate: {e.users} users, {e.horizon} steps {e.steps[0]}..{e.steps[1]}, "
        f"{len(e.cell_ids)} cells; Laplacian smoothing {smoothing}"
    )
    sensitive = "SENSITIVE: estimated from the private stream; not public knowledge, never publish beside releases"
    ids = lambda rows: ", ".join(str(e.cell_ids[i]) for i in rows)  # noqa: E731
    files = {
        "transition_forward.csv": _matrix_text(
            [head, sensitive, f"P_F[i][j] = Pr(cell j at t+1 | cell i at t); identity rows (cell ids): [{ids(e.forward_identity_rows)}]"],
            e.forward.tolist(),
        ),
        "transition_backward.csv": _matrix_text(
            [head, sensitive, f"P_B[j][i] = Pr(cell i at t-1 | cell j at t); identity rows (cell ids): [{ids(e.backward_identity_rows)}]"],
            e.backward.tolist(),
        ),
        "transition_counts.csv": _matrix_text(
            [head, sensitive, "C[i][j] = number of (user, t) with cell i at t and cell j at t+1"], e.counts.tolist()
        ),
        "cells.csv": "index,cell_id\n" + "".join(f"{i},{c}\n" for i, c in enumerate(e.cell_ids.tolist())),
        "counts.csv": "timestamp_bucket," + ",".join(f"c{i}" for i in range(len(e.cell_ids))) + "\n"
        + "".join(f"{t}," + ",".join(map(str, row)) + "\n" for t, row in enumerate(e.histogram.tolist())),
    }
    for name, text in files.items():
        (out / name).write_text(text)
    print(f"{PROG}: {NOTE} ({out})", file=sys.stderr)
    return {
        "users": e.users,
        "horizon": e.horizon,
        "cells": len(e.cell_ids),
        "cell_ids": e.cell_ids.tolist(),
        "transitions": e.transitions,
        "smoothing": e.smoothing,
        "forward_identity_rows": e.forward_identity_rows,
        "backward_identity_rows": e.backward_identity_rows,
        "steps": list(e.steps),
        "out": str(out),
        "files": list(files),
        "sensitive": True,
    }


def _leakage_arguments(args: argparse.Namespace) -> tuple:
    """The budgets (ε, or the list of a budget file) and the quantile levels of ``leakage``,
    checked before Spark starts."""
    if (args.epsilon is None) == (args.budgets is None):
        raise UserError("give --epsilon e (every step) or --budgets FILE, one of them")
    try:
        quantiles = [float(q) for q in args.quantiles.split(",")]
    except ValueError:
        raise UserError(f"--quantiles {args.quantiles!r}: numbers from 0 to 1, comma-separated") from None
    return (args.epsilon if args.epsilon is not None else _budgets(args.budgets)), quantiles


def _leakage(spark, args: argparse.Namespace, form: str) -> dict:
    from temporal_privacy.spark import leakage_summary, personalized_leakage

    budgets, quantiles = _leakage_arguments(args)
    df = _read(spark, args, form)
    people = personalized_leakage(
        df, budgets, args.smoothing, args.window, sensitivity=args.sensitivity, steps=args.steps, bucket=args.bucket, user=args.user, cell=args.cell
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    people.write.mode("overwrite").parquet(str(out / "people"))
    summary = leakage_summary(spark.read.parquet(str(out / "people")), quantiles, user=args.user)
    summary["quantiles"] = {str(q): v for q, v in summary["quantiles"].items()}
    if "window_quantiles" in summary:
        summary["window_quantiles"] = {str(q): v for q, v in summary["window_quantiles"].items()}
    summary.update({"out": str(out), "files": ["people", "summary.json"], "sensitive": True})
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=_json_value) + "\n")
    print(f"{PROG}: {NOTE} ({out})", file=sys.stderr)
    return summary


def _json_value(v: Any) -> Any:
    """Decimal user ids (unsigned 64-bit) as JSON integers."""
    if hasattr(v, "to_integral_value"):
        return int(v)
    raise TypeError(f"{type(v).__name__} is not JSON")


def main(argv: Optional[list] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        for flag, value in [("--smoothing", args.smoothing), ("--epsilon", getattr(args, "epsilon", None))]:
            if value is not None and not math.isfinite(value):
                raise UserError(f"{flag} {value}: a finite number is needed")
        form = _input_format(args)
        if args.command == "leakage":
            _leakage_arguments(args)
        try:
            from temporal_privacy import TplError
            from temporal_privacy.spark import counts  # noqa: F401  (PySpark and pyarrow present, before Spark starts)
        except ImportError as e:
            raise UserError(str(e)) from None
        spark = _session(args.master)
        from pyspark.errors import AnalysisException

        try:
            result = (_estimate if args.command == "estimate" else _leakage)(spark, args, form)
        except AnalysisException as e:
            raise UserError(f"{args.stream}: {str(e).splitlines()[0]}") from None
        except TplError as e:
            raise UserError(f"{args.stream}: {e}") from None
    except UserError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, default=_json_value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
