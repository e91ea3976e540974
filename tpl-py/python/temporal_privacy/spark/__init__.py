"""temporal_privacy.spark: user streams of millions of people on Apache Spark (PySpark ≥ 4).

Spark does the work that grows with the number of people — checking the stream, counting
people per step and cell, counting every person's moves, grouping the rows of each person —
and ``temporal_privacy`` (the Rust library of ``tpl``) does the privacy work, which grows
only with cells and steps. The semantics are those of ``tpl estimate``, written once in
``docs/formats.md`` §6.1 of the repository; ``docs/spark.md`` describes this module.

* :func:`counts`: the T × n counts matrix (people per step and cell), on the driver.
* :func:`transition_counts`: the n × n counts of moves between consecutive steps.
* :func:`estimate`: forward and backward matrices and the counts, equal to ``tpl estimate``
  on the same stream to the last bit (:class:`temporal_privacy.Estimated`).
* :func:`personalized_leakage`: one row per person — their own matrices, estimated from
  their own moves, and the leakage of a budget sequence under them — as a Spark DataFrame,
  computed by ``groupBy(user).applyInArrow`` (a person's rows always reach one call); and
  :func:`leakage_summary`: the worst person and quantiles.

The input is a Spark DataFrame with one row per person per time bucket: whole numbers
``timestamp_bucket, user_id, location_cell`` (any integer type, or a decimal with no
fraction digits as Parquet's unsigned 64-bit integers read; the names are keyword
arguments). The same checks as the CLI's apply: buckets evenly spaced, every person at every
bucket exactly once, at most 4096 distinct cells.

**Matrices estimated from people's movements are as sensitive as the movements.** The
matrices and counts these functions return, and the per-person leakage, are derived from the
private stream: keep them with it, and never publish them beside the releases as if they
were public knowledge.

Example (``spark`` an active ``SparkSession``)::

    import temporal_privacy as tp
    from temporal_privacy import spark as tps

    df = spark.read.parquet("stream.parquet")       # timestamp_bucket, user_id, location_cell
    known = tps.estimate(df, smoothing=0.01)        # == tpl estimate --smoothing 0.01
    r = tp.release(known.histogram, "bd", epsilon=1.0, window=10)
    people = tps.personalized_leakage(df, r.budget, smoothing=0.01, window=10)
    print(tps.leakage_summary(people))              # the worst person, quantiles
"""

from __future__ import annotations

import dataclasses
import decimal
import numbers
from typing import Any, Optional, Sequence, Union

try:
    import pyspark
    import pyarrow as pa
    from pyspark.sql import DataFrame, Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as _missing:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "temporal_privacy.spark needs PySpark ≥ 4 and pyarrow (and a Java runtime): "
        "pip install 'temporal-privacy[spark]'" + f" ({_missing})"
    ) from _missing

if int(pyspark.__version__.split(".")[0]) < 4:  # pragma: no cover - depends on the install
    raise ImportError(
        f"temporal_privacy.spark needs PySpark ≥ 4, found {pyspark.__version__}: "
        "pip install 'temporal-privacy[spark]'"
    )

import numpy as np
import numpy.typing as npt

from .. import Estimated, TplError, _native, _number, _step_range, _whole
from .. import estimate as _estimate
from .. import leakage as _leakage
from .. import matrices_from_transitions

__all__ = [
    "counts",
    "transition_counts",
    "estimate",
    "personalized_leakage",
    "leakage_summary",
    "BUCKET",
    "USER",
    "CELL",
    "MAX_CELLS",
]

BUCKET: str = "timestamp_bucket"
USER: str = "user_id"
CELL: str = "location_cell"

#: The largest number of distinct cells (matrix rows), as ``tpl estimate``.
MAX_CELLS: int = 4096

_LARGEST = 2**64 - 1

# A step range: "A..B", "A..", "..B", or a pair (A, B) with None for an open end.
StepArg = Optional[Union[str, tuple[Optional[int], Optional[int]]]]


# ---------------------------------------------------------------------------------------
# Checking a stream: the checks of tpl estimate, as Spark jobs.


@dataclasses.dataclass(frozen=True)
class _Checked:
    """A stream that passed the checks: its rows as columns ``b, u, c``, the distinct
    buckets (ascending, evenly spaced), the number of people, the distinct cells
    (ascending) and the people per (bucket, cell)."""

    rows: DataFrame
    buckets: list
    users: int
    cell_ids: list
    histogram: list

    def bucket(self, step: int) -> int:
        """The bucket of step ``step`` (from 1)."""
        return self.buckets[step - 1]


def _whole_type(dtype: T.DataType) -> bool:
    """Integer types, and decimals without fraction digits (Parquet's UINT64 reads as
    decimal(20,0))."""
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return True
    return isinstance(dtype, T.DecimalType) and dtype.scale == 0


def _value(v: Any) -> int:
    """A whole number collected from Spark (int or Decimal) as a Python int."""
    return int(v)


def _check(df: DataFrame, bucket: str, user: str, cell: str) -> _Checked:
    """The checks of ``tpl estimate`` on a stream DataFrame, as few Spark jobs: whole numbers
    0..2⁶⁴−1 without nulls, buckets evenly spaced, every person at every bucket exactly once,
    at most :data:`MAX_CELLS` cells. Errors are :class:`TplError`s worded as the library's."""
    if not isinstance(df, DataFrame):
        raise TplError(f"stream: a Spark DataFrame is needed, got a {type(df).__name__}")
    names = (bucket, user, cell)
    fields = {f.name: f for f in df.schema.fields}
    for name in names:
        if name not in fields:
            raise TplError(
                f"stream: no column {name!r} (columns: {', '.join(df.columns)}); "
                "name the columns with bucket=, user= and cell="
            )
        if not _whole_type(fields[name].dataType):
            raise TplError(
                f"stream: column {name!r} is {fields[name].dataType.simpleString()}: "
                "whole numbers 0..2⁶⁴−1 are needed (an integer type, or decimal(20,0))"
            )
    rows = df.select(F.col(bucket).alias("b"), F.col(user).alias("u"), F.col(cell).alias("c"))
    # One scan: the number of rows, the values missing, the smallest and largest values.
    stats = rows.agg(
        F.count(F.lit(1)).alias("rows"),
        *[F.count(F.col(k)).alias(f"n{k}") for k in "buc"],
        *[F.min(F.col(k)).alias(f"min{k}") for k in "buc"],
        *[F.max(F.col(k)).alias(f"max{k}") for k in "buc"],
    ).first()
    if stats["rows"] == 0:
        raise TplError("stream: no data rows (empty stream)")
    for k, name in zip("buc", names):
        if stats[f"n{k}"] != stats["rows"]:
            raise TplError(f"stream: column {name!r}: {stats['rows'] - stats[f'n{k}']} row(s) without a value")
        for bound in ("min", "max"):
            v = _value(stats[f"{bound}{k}"])
            if not 0 <= v <= _LARGEST:
                raise TplError(f"stream: column {name!r}: {v} is not a whole number from 0 to {_LARGEST}")
    # People per (bucket, cell): the counts matrix, and the distinct buckets and cells.
    histogram = [(_value(r["b"]), _value(r["c"]), r["count"]) for r in rows.groupBy("b", "c").count().collect()]
    buckets = sorted({b for b, _, _ in histogram})
    cell_ids = sorted({c for _, c, _ in histogram})
    _check_spacing(buckets)
    # Every person at every bucket once: no pair twice, and as many pairs per person as buckets.
    pairs = rows.groupBy("b", "u").agg(F.count(F.lit(1)).alias("k"))
    per_user = pairs.groupBy("u").agg(F.count(F.lit(1)).alias("pairs"), F.max("k").alias("most"))
    density = per_user.agg(
        F.count(F.lit(1)).alias("users"),
        F.sum(F.when(F.col("pairs") != len(buckets), 1).otherwise(0)).alias("short"),
        F.max("most").alias("most"),
    ).first()
    if density["short"] or density["most"] > 1:
        _name_first_departure(rows, pairs, per_user, buckets)
    if len(cell_ids) > MAX_CELLS:
        raise TplError(f"stream: {len(cell_ids)} distinct cells: at most {MAX_CELLS} are supported")
    return _Checked(rows, buckets, density["users"], cell_ids, histogram)


def _check_spacing(buckets: list) -> None:
    """Buckets (distinct, ascending) must be evenly spaced: the step of a Markov chain is one
    fixed interval. Checked by the library's own check of a stream (``tpl-core``), which
    names the first missing bucket."""
    _native.check_buckets(np.array(buckets, dtype=np.uint64))


def _name_first_departure(rows: DataFrame, pairs: DataFrame, per_user: DataFrame, buckets: list) -> None:
    """Raises the error of the first (bucket, user) pair, in that order, given twice or
    missing: the one the library names."""
    first = lambda df: df.agg(F.min(F.struct("b", "u")).alias("p")).first()["p"]  # noqa: E731
    twice = first(pairs.where(F.col("k") > 1))
    short = per_user.where(F.col("pairs") != len(buckets)).select("u")
    spark = rows.sparkSession
    every = spark.createDataFrame([(decimal.Decimal(b),) for b in buckets], "b decimal(20,0)")
    every = every.withColumn("b", F.col("b").cast(rows.schema["b"].dataType))
    missing = first(F.broadcast(every).crossJoin(short).join(pairs, ["b", "u"], "left_anti"))
    key = lambda p: (_value(p["b"]), _value(p["u"]))  # noqa: E731
    if twice is not None and (missing is None or key(twice) < key(missing)):
        b, u = key(twice)
        raise TplError(f"stream: user {u} appears twice in bucket {b}")
    b, u = key(missing)
    raise TplError(f"stream: user {u} never appears in bucket {b}: a stream lists every user at every bucket")


def _cells(checked: _Checked, cells: Any) -> tuple[list, dict]:
    """The cell id of every matrix row, and the row of every cell id: the distinct cells in
    ascending order, or ids 0..n−1 with ``cells=n`` (``--cells n``)."""
    if cells is None:
        ids = checked.cell_ids
    else:
        n = _whole(cells, "cells")
        if not 1 <= n <= MAX_CELLS:
            raise TplError(f"cells {n}: 1 to {MAX_CELLS} cells are supported")
        largest = checked.cell_ids[-1]
        if largest >= n:
            raise TplError(f"cells: the stream has cell {largest}, but cells={n} indexes ids 0..{n - 1}")
        ids = list(range(n))
    return ids, {c: i for i, c in enumerate(ids)}


def _steps(checked: _Checked, steps: Any) -> tuple[int, int]:
    """The first and last step (from 1) of a step range, resolved by the library."""
    text = _step_range(steps)
    return _native.resolve_steps(".." if text is None else text, len(checked.buckets))


def _smoothing(smoothing: Any) -> Optional[float]:
    """A smoothing argument, refused before any Spark job with the library's message."""
    if smoothing is None:
        return None
    s = _number(smoothing, "smoothing")
    matrices_from_transitions([[1]], s)
    return s


def _histogram(checked: _Checked, ids: list, row: dict) -> np.ndarray:
    """The T × n counts matrix: people per step and cell."""
    position = {b: t for t, b in enumerate(checked.buckets)}
    table = np.zeros((len(checked.buckets), len(ids)), dtype=np.int64)
    for b, c, k in checked.histogram:
        table[position[b], row[c]] = k
    return table


def _moves(checked: _Checked, row: dict, first: int, last: int) -> np.ndarray:
    """The n × n counts of moves between consecutive steps that both lie in first..last,
    summed across partitions: each person's rows in bucket order, each row's previous one."""
    n = len(row)
    table = np.zeros((n, n), dtype=np.uint64)
    if first == last:
        return table
    previous = Window.partitionBy("u").orderBy("b")
    moves = checked.rows.select("b", "c", F.lag("b").over(previous).alias("pb"), F.lag("c").over(previous).alias("pc"))
    dtype = checked.rows.schema["b"].dataType
    # The stream is dense: a row's previous one is the person's previous step.
    moves = moves.where(F.col("pb").isNotNull())
    if first > 1:
        moves = moves.where(F.col("pb") >= F.lit(str(checked.bucket(first))).cast(dtype))
    if last < len(checked.buckets):
        moves = moves.where(F.col("b") <= F.lit(str(checked.bucket(last))).cast(dtype))
    for r in moves.groupBy("pc", "c").count().collect():
        table[row[_value(r["pc"])], row[_value(r["c"])]] += np.uint64(r["count"])
    return table


# ---------------------------------------------------------------------------------------
# The public functions.


def counts(
    df: DataFrame, cells: Optional[int] = None, *, bucket: str = BUCKET, user: str = USER, cell: str = CELL
) -> npt.NDArray[np.int64]:
    """The T × n counts matrix of a user stream: row t, column i is the number of people in
    the i-th cell at the t-th bucket (ascending) — the counts file ``tpl simulate`` writes
    beside its stream, the histogram ``tpl compare --stream`` scores. Computed by Spark, a
    T × n int64 array on the driver.

    These are the true counts of the private stream: what a release protects, never to be
    published as they are.

    Args:
        df: the stream: one row per person per bucket (``docs/formats.md`` §6).
        cells: ``None``: column i is the i-th distinct cell id, ascending; ``n``: column i
            is cell id i (0..n−1), cells never seen are columns of zeros (``--cells n``).
        bucket, user, cell: the column names.

    Raises:
        TplError: the stream is not dense, has a gap, a null, a negative or non-integer
            column, more than 4096 cells, or a cell ≥ ``cells``.

    Example::

        >>> from temporal_privacy import spark as tps
        >>> df = spark.createDataFrame([(0, 7, 0), (0, 8, 1), (1, 7, 1), (1, 8, 1)],
        ...                            "timestamp_bucket long, user_id long, location_cell long")
        >>> tps.counts(df).tolist()                  # doctest: +SKIP
        [[1, 1], [0, 2]]
    """
    checked = _check(df, bucket, user, cell)
    ids, row = _cells(checked, cells)
    return _histogram(checked, ids, row)


def transition_counts(
    df: DataFrame,
    cells: Optional[int] = None,
    *,
    steps: StepArg = None,
    bucket: str = BUCKET,
    user: str = USER,
    cell: str = CELL,
) -> npt.NDArray[np.uint64]:
    """The n × n transition counts of a user stream: C[i][j] is the number of (person, t)
    with the i-th cell at step t and the j-th cell at step t + 1, exactly as ``tpl estimate``
    counts them (``docs/formats.md`` §6.1). Each partition's moves are counted where they
    lie and the counts add up on the driver (a uint64 array).

    Args:
        df: the stream (``docs/formats.md`` §6).
        cells: as in :func:`counts`.
        steps: count only the moves between two consecutive steps of ``"A..B"`` (or a pair
            ``(A, B)``): step t is the t-th bucket, ascending, from 1 (``--steps``).
        bucket, user, cell: the column names.

    Example::

        >>> tps.transition_counts(df).tolist()       # doctest: +SKIP
        [[0, 1], [0, 1]]
    """
    checked = _check(df, bucket, user, cell)
    ids, row = _cells(checked, cells)
    return _moves(checked, row, *_steps(checked, steps))


def estimate(
    df: DataFrame,
    smoothing: Optional[float] = None,
    *,
    cells: Optional[int] = None,
    steps: StepArg = None,
    bucket: str = BUCKET,
    user: str = USER,
    cell: str = CELL,
) -> Estimated:
    """The forward and backward transition matrices of a user stream, with optional
    Laplacian smoothing (TKDE eq. 28), and its counts: ``tpl estimate`` through Spark. Spark
    counts the moves; the matrices are built from those counts by the library function
    ``tpl estimate`` uses (:func:`temporal_privacy.matrices_from_transitions`), so every
    entry equals the CLI's to the last bit.

    **The matrices are estimated from the private stream and are as sensitive as it is**:
    an adversary's knowledge is modelled by matrices from public data (or another period);
    keep these with the private data, never beside releases as if they were public.

    Args:
        df: the stream (``docs/formats.md`` §6).
        smoothing: s ≥ 0 (``--smoothing s``), or ``None`` for none.
        cells: ``n`` to index rows by cell id 0..n−1 (``--cells n``; cells never seen get
            identity rows), or ``None``: row i is the i-th distinct cell id, ascending.
        steps: estimate from steps A..B only (``--steps``): ``"A..B"`` or ``(A, B)``.
        bucket, user, cell: the column names.

    Returns:
        :class:`temporal_privacy.Estimated`, the fields of :func:`temporal_privacy.estimate`:
        ``forward, backward, counts, cell_ids, histogram`` (T × n, every step), ``users,
        horizon, transitions, smoothing, forward_identity_rows, backward_identity_rows,
        steps``.

    Example::

        >>> known = tps.estimate(df, smoothing=0.01)   # doctest: +SKIP
        >>> known.forward.shape, known.steps
        ((2, 2), (1, 2))
    """
    s = _smoothing(smoothing)
    checked = _check(df, bucket, user, cell)
    ids, row = _cells(checked, cells)
    first, last = _steps(checked, steps)
    moves = _moves(checked, row, first, last)
    m = matrices_from_transitions(moves, s)
    return Estimated(
        forward=m.forward,
        backward=m.backward,
        counts=moves.astype(np.int64),
        cell_ids=np.array(ids, dtype=np.uint64),
        cells=len(ids),
        users=checked.users,
        horizon=last - first + 1,
        transitions=int(moves.sum(dtype=np.uint64)),
        smoothing=s,
        forward_identity_rows=m.forward_identity_rows,
        backward_identity_rows=m.backward_identity_rows,
        histogram=_histogram(checked, ids, row),
        steps=(first, last),
    )


# ---------------------------------------------------------------------------------------
# Per-person leakage.


def _column_values(column: "pa.ChunkedArray") -> np.ndarray:
    """A column of whole numbers (integers, or decimal(20,0)) as uint64."""
    if pa.types.is_decimal(column.type):
        return np.array([int(v) for v in column.to_pylist()], dtype=np.uint64)
    return column.to_numpy().astype(np.uint64)


def _person_leakage(
    table: "pa.Table", budgets: Any, smoothing: Optional[float], window: Optional[int], steps: Optional[str], user: str
) -> "pa.Table":
    """One person's row of :func:`personalized_leakage` from their rows (columns ``b, u,
    c``): their matrices from their own moves, by :func:`temporal_privacy.estimate`, and the
    leakage of ``budgets`` (or of ε at every step, for a number) under them, by
    :func:`temporal_privacy.leakage`."""
    b, c = _column_values(table.column("b")), _column_values(table.column("c"))
    own = _estimate(np.column_stack([b, np.zeros_like(b), c]), smoothing, steps=steps)
    if isinstance(budgets, float):
        r = _leakage(own.backward, own.forward, epsilon=budgets, horizon=len(b), window=window)
    else:
        r = _leakage(own.backward, own.forward, budgets, window=window)
    return pa.table(
        {
            user: table.column("u").slice(0, 1),
            "cells": pa.array([len(own.cell_ids)], pa.int32()),
            "max_bpl": pa.array([float(r.bpl.max())], pa.float64()),
            "max_fpl": pa.array([float(r.fpl.max())], pa.float64()),
            "max_tpl": pa.array([float(r.max_tpl)], pa.float64()),
            "worst_step": pa.array([int(np.argmax(r.tpl)) + 1], pa.int64()),
            "max_window_leakage": pa.array([r.max_window_leakage], pa.float64()),
        }
    )


def personalized_leakage(
    df: DataFrame,
    budgets: Union[float, Sequence[float], npt.NDArray[Any]],
    smoothing: Optional[float] = None,
    window: Optional[int] = None,
    *,
    sensitivity: float = 2,
    steps: StepArg = None,
    bucket: str = BUCKET,
    user: str = USER,
    cell: str = CELL,
) -> DataFrame:
    """Every person's leakage under their own correlation (TKDE §3: leakage is defined per
    person, with that person's P_B and P_F; a release's guarantee is the worst person's).
    Each person's matrices are estimated from their own moves alone — ``tpl estimate`` on
    the stream of that one person: rows are the cells they visited, cells they never left
    are identity rows — and the leakage of ``budgets`` under them is
    :func:`temporal_privacy.leakage`'s. Spark groups each person's rows
    (``groupBy(user).applyInArrow``, so no person is split between calls) and the library
    computes, one person at a time on the executors.

    The result is as sensitive as the stream: how predictable each person is. Keep it with
    the private data.

    Args:
        df: the stream (``docs/formats.md`` §6), checked as in :func:`estimate`.
        budgets: ε_1..ε_T of the release (a 1-D array, e.g. ``Release.budget``), or one
            number ε > 0 spent at each of the stream's T steps.
        smoothing: s ≥ 0 applied to each person's matrices, or ``None``.
        window: W, to report each person's worst leakage over W consecutive steps.
        sensitivity: Δ the release's budgets were calibrated to (``Release.sensitivity``):
            each ε_t is audited as 2·ε_t/Δ (:func:`temporal_privacy.effective_budgets`), so
            a release with Δ = 1 leaks twice its budgets. Default 2.
        steps: estimate each person's matrices from steps A..B only (``"A..B"``, as in
            :func:`estimate`); the budgets still run over their own length.
        bucket, user, cell: the column names.

    Returns:
        A Spark DataFrame, one row per person: ``<user>`` (the user column), ``cells`` (the
        cells they visited: their matrices' size), ``max_bpl``, ``max_fpl``, ``max_tpl``,
        ``worst_step`` (the first step t of ``max_tpl``) and ``max_window_leakage`` (null
        without ``window``). Lazy: nothing runs until it is read or written.

    Example::

        >>> people = tps.personalized_leakage(df, [0.1] * 2, smoothing=0.01)   # doctest: +SKIP
        >>> tps.leakage_summary(people)["worst"]                              # doctest: +SKIP
        {'user_id': 8, 'max_tpl': 0.2}
    """
    s = _smoothing(smoothing)
    w = None if window is None else _whole(window, "window", minimum=1)
    if isinstance(budgets, numbers.Real) and not isinstance(budgets, bool):
        b: Any = _number(budgets, "budgets")
    else:
        b = budgets
    checked = _check(df, bucket, user, cell)
    _steps(checked, steps)
    # The budgets, the sensitivity and the window checked by the library before any job: the
    # leakage of someone whose moves are unknown (no matrices). What it audited (2·ε_t/Δ)
    # is what every person's leakage is computed from.
    if isinstance(b, float):
        audit = _leakage(None, None, epsilon=b, horizon=len(checked.buckets), window=w, sensitivity=sensitivity)
        b = float(audit.epsilon[0])
    else:
        audit = _leakage(None, None, b, window=w, sensitivity=sensitivity)
        b = np.ascontiguousarray(audit.epsilon, dtype=np.float64)
    schema = T.StructType(
        [
            T.StructField(user, df.schema[user].dataType, False),
            T.StructField("cells", T.IntegerType(), False),
            T.StructField("max_bpl", T.DoubleType(), False),
            T.StructField("max_fpl", T.DoubleType(), False),
            T.StructField("max_tpl", T.DoubleType(), False),
            T.StructField("worst_step", T.LongType(), False),
            T.StructField("max_window_leakage", T.DoubleType(), True),
        ]
    )
    text = _step_range(steps)

    def person(table: pa.Table) -> pa.Table:
        return _person_leakage(table, b, s, w, text, user)

    return checked.rows.groupBy("u").applyInArrow(person, schema)


def leakage_summary(
    people: DataFrame, quantiles: Sequence[float] = (0.5, 0.9, 0.99), *, user: Optional[str] = None
) -> dict[str, Any]:
    """The summary of :func:`personalized_leakage`: the number of people, the worst person
    (the largest ``max_tpl``, ties to the smallest id) and exact quantiles of ``max_tpl``
    (and of ``max_window_leakage`` when a window was asked for).

    **Not for publication.** Every number here is computed from each person's private
    moves, and ``worst`` names a person: the summary is as sensitive as the stream. It tells
    the curator how much the release leaked for these people; a guarantee to publish is one
    computed from public matrices alone (``tpl leakage``, ``tpl stream status``).

    Args:
        people: the DataFrame :func:`personalized_leakage` returned.
        quantiles: levels q in [0, 1]; each value is the smallest ``max_tpl`` with at least
            a fraction q of people at or below it (an actual person's value).
        user: the user column (default: the first column).

    Returns:
        A dict: ``people``, ``worst`` (``{user: id, "max_tpl": value}``), ``max_tpl``
        (the worst person's), ``quantiles`` (``{q: value}``), and with a window
        ``max_window_leakage`` and ``window_quantiles``.
    """
    qs = [_number(q, "quantiles") for q in quantiles]
    if any(not 0 <= q <= 1 for q in qs):
        raise TplError(f"quantiles: levels from 0 to 1 are needed, got {list(quantiles)}")
    key = user or people.columns[0]
    worst = people.orderBy(F.desc("max_tpl"), F.asc(key)).select(key, "max_tpl").first()
    if worst is None:
        raise TplError("people: no rows")
    out = {
        "people": people.count(),
        "worst": {key: worst[key], "max_tpl": worst["max_tpl"]},
        "max_tpl": worst["max_tpl"],
        "quantiles": dict(zip(qs, people.approxQuantile("max_tpl", qs, 0.0))),
    }
    windows = people.where(F.col("max_window_leakage").isNotNull())
    top = windows.agg(F.max("max_window_leakage")).first()[0]
    if top is not None:
        out["max_window_leakage"] = top
        out["window_quantiles"] = dict(zip(qs, windows.approxQuantile("max_window_leakage", qs, 0.0)))
    return out
