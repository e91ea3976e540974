"""temporal_privacy: differential privacy under temporal correlations, on numpy arrays.

The Python package of ``tpl``. Every function calls the same Rust library functions, with
the same parameters, as the ``tpl`` command of the same name, so every number equals the
CLI's JSON to the last bit (``docs/python.md`` in the repository; the mathematics in
``docs/model.md``).

Conventions:

* Matrices are n × n arrays of numbers, row-stochastic (every row sums to 1 within 1e-9).
  In a backward matrix P_B row j is Pr(value at t−1 | value at t = j); in a forward matrix
  P_F row j is Pr(value at t | value at t−1 = j). ``smooth`` and ``normalize`` give the
  CLI's ``--smoothing`` and ``--normalize``.
* Every function and method raises :class:`TplError` (a ``ValueError``) for an input ``tpl``
  refuses, wrong types, dtypes and shapes included, with the library's message prefixed by the
  argument at fault; :class:`Stream`'s calls also raise its subclasses
  :class:`StreamBusyError`, :class:`StreamReadOnlyError` and :class:`StreamDamagedError`.
  Each docstring's "Raises:" section says which inputs.
* The signatures are annotated in this module (``py.typed``), with the aliases
  ``ArrayLike``, ``MatrixLike`` (an array, a matrix file's path, or a :class:`MatrixFile`)
  and the names ``Strategy``, ``Scheme``, ``Estimator`` and ``Sampler`` take.
* Long computations release the GIL: other Python threads run meanwhile.
* Randomness comes from the operating system unless ``seed=`` is given, and then a
  ``UserWarning`` says that the output is reproducible, hence not private.

>>> import temporal_privacy as tp
>>> round(tp.loss([[0.9, 0.1], [0.2, 0.8]], 1.0), 6)
0.706275
"""

from __future__ import annotations

import copy
import dataclasses
import json
import numbers
import os
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Literal, Mapping, Optional, Sequence, Union, overload

import numpy as np
import numpy.typing as npt

from . import _native

if TYPE_CHECKING:
    # The errors are the native module's classes; these are what a type checker knows of them.
    class TplError(ValueError):
        """An input tpl refuses, with the library's message naming the argument at fault."""

    class StreamBusyError(TplError): ...

    class StreamReadOnlyError(TplError): ...

    class StreamDamagedError(TplError): ...

else:
    from ._native import StreamBusyError, StreamDamagedError, StreamReadOnlyError, TplError

__all__ = [
    "TplError",
    "StreamBusyError",
    "StreamReadOnlyError",
    "StreamDamagedError",
    "loss",
    "supremum",
    "leakage",
    "effective_budgets",
    "smooth",
    "normalize",
    "MatrixFile",
    "allocate",
    "Leakage",
    "Allocation",
    "release",
    "Release",
    "postprocess",
    "Estimates",
    "compare",
    "Comparison",
    "estimate",
    "Estimated",
    "read_stream",
    "UserStream",
    "matrices_from_transitions",
    "TransitionMatrices",
    "Stream",
    "__version__",
]

__version__: str = _native.__version__

# Type aliases of the annotations (MatrixLike follows MatrixFile, below).
ArrayLike = npt.ArrayLike
Strategy = Literal["upper-bound", "quantified", "window"]
Scheme = Literal["laplace", "uniform", "sample", "bd", "ba", "pba", "planned", "dsat", "fast"]
Estimator = Literal["map", "map-dbsec", "map-integer", "mle", "smooth", "kalman"]
Sampler = Literal["discrete", "float", "secure"]


# ---------------------------------------------------------------------------------------
# Checking inputs: every refusal is a TplError naming the argument.


def _numeric(x: Any, name: str, ndim: int) -> np.ndarray:
    """``x`` as a non-empty numpy array of integers or floats with ``ndim`` dimensions, or a
    TplError naming ``name``."""
    if isinstance(x, (str, bytes)):
        raise TplError(f"{name}: an array of numbers is needed, got a {type(x).__name__}")
    if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
        raise TplError(
            f"{name}: a masked array with masked entries: its mask would be ignored; fill them "
            "(x.filled(value)) or drop them first"
        )
    try:
        a = np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:
        raise _not_numbers(name, e) from None
    if a.dtype.kind == "O":
        _refuse_objects(a, name)
    if a.dtype.kind not in "iuf":
        raise TplError(f"{name}: an array of integers or floats is needed, got dtype {a.dtype}")
    if a.ndim != ndim:
        shape = f"a {ndim}-D array"
        raise TplError(f"{name}: {shape} is needed, got shape {a.shape}")
    if a.size == 0:
        raise TplError(f"{name}: the array is empty (shape {a.shape})")
    return a


def _not_numbers(name: str, e: Exception) -> TplError:
    """The error of an argument numpy cannot make an array of numbers of, with numpy's reason
    (rows of different lengths named as such: numpy calls them an "inhomogeneous shape")."""
    ragged = "ragged rows (rows of different lengths): " if "inhomogeneous" in str(e) else ""
    return TplError(f"{name}: not an array of numbers: {ragged}{e}")


def _short_int(v: int) -> str:
    """An integer for a message: as typed up to 20 digits, else its first digits and exponent
    (``1e400``, ``1.18e21``), never hundreds of digits."""
    digits = str(abs(v))
    if len(digits) <= 20:
        return str(v)
    mantissa = f"{digits[0]}.{digits[1:4]}".rstrip("0").rstrip(".")
    return f"{'-' if v < 0 else ''}{mantissa}e{len(digits) - 1}"


def _refuse_objects(a: np.ndarray, name: str) -> None:
    """Refuses an array of Python objects (dtype object): naming an integer no 64-bit type holds
    (which is what makes numpy fall back to objects for a list of numbers), else the dtype."""
    for v in a.flat:
        if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and not -(2**63) <= int(v) < 2**64:
            raise TplError(f"{name}: integer {_short_int(int(v))} is beyond 64 bits: no double holds it exactly")
    raise TplError(
        f"{name}: an array of integers or floats is needed, got dtype object (Python objects; convert them "
        "first, e.g. np.asarray(x, dtype=float))"
    )


def _array(x: Any, name: str, ndim: int) -> np.ndarray:
    """``x`` as a C-contiguous float64 array of ``ndim`` dimensions, or a TplError. Integers
    beyond 2⁵³ that no double holds are refused, never rounded."""
    a = _numeric(x, name, ndim)
    f = np.ascontiguousarray(a, dtype=np.float64)
    if a.dtype.kind in "iu":
        for i in np.flatnonzero(np.abs(f) >= 2.0**53):
            v = int(a.flat[i])
            if int(float(v)) != v:
                raise TplError(f"{name}: integer {v} has no exact double (beyond 2^53): it would be read as {int(float(v))}")
    return f


class MatrixFile:
    """A transition matrix file with the reading options of the command line: wherever a
    matrix is taken, ``MatrixFile(path, smoothing=s, normalize=True)`` is read as ``--matrix
    path --smoothing s --normalize`` reads it. A sparse ``from,to,p`` file stays sparse and its
    smoothing stays symbolic ((p + s)/(1 + n·s), never n × n numbers), which :func:`smooth`
    on an array cannot do (docs/formats.md §2).

    Raises:
        TplError: ``path`` not a str or os.PathLike, ``smoothing`` not a number, ``normalize`` not a
            bool; the file itself is read (and refused, naming it) where the matrix is used.

    Example:
        >>> import temporal_privacy as tp, tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> path = os.path.join(d, "p.csv")
        >>> _ = open(path, "w").write("from,to,p\\n0,0,1\\n1,1,1\\n")
        >>> tp.loss(tp.MatrixFile(path, smoothing=1.0), 1.0) == tp.loss(tp.smooth([[1, 0], [0, 1]], 1.0), 1.0)
        True
    """

    __slots__ = ("path", "smoothing", "normalize")

    path: str
    smoothing: Optional[float]
    normalize: bool

    def __init__(
        self, path: Union[str, os.PathLike[str]], smoothing: Optional[float] = None, normalize: bool = False
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TplError(f"path: a str or os.PathLike is needed, got {path!r}")
        self.path = os.fspath(path)
        self.smoothing = None if smoothing is None else _number(smoothing, "smoothing")
        if not isinstance(normalize, (bool, np.bool_)):
            raise TplError(f"normalize: True or False is needed, got {normalize!r}")
        self.normalize = bool(normalize)

    def __repr__(self) -> str:
        return f"MatrixFile({self.path!r}, smoothing={self.smoothing!r}, normalize={self.normalize!r})"


# A transition matrix: its rows as an array, or the path of a matrix file (dense text, JSON,
# .npy, or sparse from,to,p), or a MatrixFile.
MatrixLike = Union[npt.ArrayLike, str, os.PathLike[str], MatrixFile]


def _matrix_or_path(x: Any, name: str) -> Union[np.ndarray, str, tuple[str, Optional[float], bool]]:
    """A transition matrix argument of the functions that also read a file: the path (str or
    os.PathLike) of a matrix file in any form ``tpl`` reads — dense text, JSON, ``.npy`` or the
    sparse ``from,to,p`` CSV, which stays sparse (docs/formats.md §2) — passed on to be read
    as ``--matrix`` reads it, a :class:`MatrixFile` (path and reading options), or an array
    (:func:`_matrix`)."""
    if isinstance(x, MatrixFile):
        return (x.path, x.smoothing, x.normalize)
    if isinstance(x, (str, os.PathLike)):
        return os.fspath(x)
    return _matrix(x, name)


def _matrix(x: Any, name: str) -> np.ndarray:
    """A transition matrix argument: a non-empty square 2-D array of numbers. A matrix of
    float32 or float16 entries, whose rows sum to 1 only to its own precision, is accepted
    within that precision and its rows rescaled to sum to 1 (:func:`normalize`)."""
    low = getattr(x, "dtype", None)
    a = _array(x, name, 2)
    if a.shape[0] != a.shape[1]:
        raise TplError(f"{name}: a square n × n matrix is needed, got shape {a.shape}")
    # A NaN, infinite or negative entry is the entry's fault, named by the library's check,
    # not a row sum's.
    finite = bool(np.all(np.isfinite(a)) and np.all(a >= 0))
    if low is not None and low.kind == "f" and low.itemsize < 8 and finite:
        tolerance = 4 * a.shape[1] * float(np.finfo(low).eps)
        sums = a.sum(axis=1)
        if np.all(np.abs(sums - 1) <= tolerance):
            return _native.normalize(a)
        row = int(np.argmax(np.abs(sums - 1)))
        raise TplError(
            f"{name}: row {row + 1} sums to {sums[row]:.9g}, not 1 within the precision of {low} "
            f"(tolerance {tolerance:.3g})"
        )
    return a


def _counts(x: Any, name: str = "counts", negative: bool = False) -> np.ndarray:
    """A stream of count vectors: a T × n array of numbers, one row per step; ≥ 0 unless
    ``negative`` (noisy releases)."""
    try:
        one_dimensional = np.ndim(x) == 1
    except (ValueError, TypeError) as e:
        raise _not_numbers(name, e) from None
    a = None if one_dimensional else _array(x, name, 2)
    if a is None:
        raise TplError(f"{name}: a 2-D array T × n (one row per step) is needed, got a 1-D array; "
                       "for one cell use counts.reshape(-1, 1)")
    if not negative and np.any(a < 0):
        t, j = np.argwhere(a < 0)[0]
        raise TplError(f"{name}: step {t + 1}, cell {j}: count {a[t, j]:g} is negative")
    return a


def _seed_warning(seed: Optional[int], what: str) -> None:
    if seed is not None:
        warnings.warn(f"seed={seed} makes {what} reproducible, hence NOT private", UserWarning, stacklevel=3)


def _optional_matrix(x: Any, name: str) -> Optional[Union[np.ndarray, str]]:
    return None if x is None else _matrix_or_path(x, name)


def _number(x: Any, name: str) -> float:
    """A real number argument (a 0-d numpy array of one is one)."""
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf":
        x = x.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TplError(f"{name}: a number is needed, got {x!r}")
    try:
        return float(x)
    except OverflowError:
        raise TplError(f"{name}: {_short_int(int(x))} is beyond the largest double (±1.8e308)") from None


def _level(x: Any, name: str) -> float:
    """A confidence level, strictly between 0 and 1."""
    level = _number(x, name)
    if not 0.0 < level < 1.0:
        raise TplError(f"{name} {level}: not a level strictly between 0 and 1 (e.g. 0.9)")
    return level


def _whole(x: Any, name: str, minimum: int = 0, maximum: int = 2**64 - 1) -> int:
    """A whole-number argument within [minimum, maximum]."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TplError(f"{name}: a whole number is needed, got {x!r}")
    v = int(x)
    if not minimum <= v <= maximum:
        raise TplError(f"{name}: {_short_int(v)} is not a whole number from {minimum} to {maximum}")
    return v


# ---------------------------------------------------------------------------------------
# Results: attributes, and mapping access with the CLI's JSON field names.


class _Fields(Mapping[str, Any]):
    """Fields by attribute (``r.max_tpl``) or by the CLI's JSON name (``r["max_tpl"]``);
    ``dict(r)`` or ``r.to_dict()`` gives them all. Fields the CLI prints only on request
    (a window's, an interval's) are absent from the mapping when not asked for, and ``None``
    as attributes."""

    _optional: ClassVar[tuple[str, ...]] = ()

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> list[str]:
        return [
            f.name
            for f in dataclasses.fields(self)
            if not f.name.startswith("_") and (f.name not in self._optional or getattr(self, f.name) is not None)
        ]

    def to_dict(self, numpy: bool = False) -> dict[str, Any]:
        """The fields that are set, by the CLI's JSON names, as plain Python values (lists,
        floats, ints, bools, strings, ``None``), so that ``json.dumps(r.to_dict())`` works;
        with ``numpy=True`` the arrays stay numpy arrays (not copied)."""
        fields = {k: getattr(self, k) for k in self._names()}
        return fields if numpy else _plain(fields)

    def to_json(self) -> str:
        """The fields that are set as one JSON object: ``json.dumps(r.to_dict())``."""
        return json.dumps(self.to_dict())


def _plain(v: Any) -> Any:
    """``v`` with numpy arrays and scalars as Python lists and numbers (for JSON)."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _plain(dataclasses.asdict(v))
    return v


@dataclasses.dataclass(frozen=True, eq=False)
class Leakage(_Fields):
    """The leakage of a budget sequence (``tpl leakage``): per step t = 1..T the budget
    ε_t, BPL_t, FPL_t and TPL_t = BPL_t + FPL_t − ε_t, their maximum, and with a window W
    the leakage of every window of W steps (one per start t = 1..T−W+1, TKDE Theorem 3,
    rounded up) and its maximum."""

    _optional: ClassVar[tuple[str, ...]] = ("window", "window_leakage", "max_window_leakage")

    t: npt.NDArray[np.int64]
    epsilon: npt.NDArray[np.float64]
    bpl: npt.NDArray[np.float64]
    fpl: npt.NDArray[np.float64]
    tpl: npt.NDArray[np.float64]
    max_tpl: float
    window: Optional[int] = None
    window_leakage: Optional[npt.NDArray[np.float64]] = None
    max_window_leakage: Optional[float] = None


@dataclasses.dataclass(frozen=True, eq=False)
class Allocation(_Fields):
    """Budgets per step that keep the temporal leakage under α, with their audit
    (``tpl allocate``): ``budgets`` ε_1..ε_T and the audited ``bpl, fpl, tpl, max_tpl``;
    the suprema of BPL and FPL at the steady budget (``None`` when unbounded); with a window,
    its largest leakage; ``guarantee`` = ``{"quantity", "bound", "holds"}``, what the
    strategy promises and whether the audit of the printed budgets confirms it. Also
    ``steady_budget`` (the budget of the middle steps) and ``limited_by`` (``None``, or
    ``{"side", "q", "epsilon"}`` when the budget is capped below what α calls for because a
    larger one makes that side's leakage unbounded), and then ``note``, the sentence saying
    why α is not reached."""

    _optional: ClassVar[tuple[str, ...]] = ("window", "max_window_leakage", "note")

    strategy: str
    alpha: float
    budgets: npt.NDArray[np.float64]
    bpl: npt.NDArray[np.float64]
    fpl: npt.NDArray[np.float64]
    tpl: npt.NDArray[np.float64]
    max_tpl: float
    sup_backward: Optional[float]
    sup_forward: Optional[float]
    guarantee: dict[str, Any]
    steady_budget: float
    window: Optional[int] = None
    max_window_leakage: Optional[float] = None
    limited_by: Optional[dict[str, Any]] = None
    note: Optional[str] = None


@dataclasses.dataclass(frozen=True, eq=False)
class Release(_Fields):
    """A w-event release (``tpl release``): per step t = 1..T whether it ``published``
    afresh (or repeated the previous release), the budget ε_t it spent (``budget`` = test +
    publication, with ``test_budget`` and ``publication_budget`` apart; the latter is 0 at a
    repeat), and the released vector (``releases``, T × n, raw: negative values possible,
    whole numbers with the discrete sampler); ``max_window_budget``, the largest sum of ε_t
    over ``window`` consecutive steps. How it was made: ``scheme, epsilon, window,
    sensitivity, sampler, seeded, version`` and the matrices given (``backward``,
    ``forward``: ``{"file", "n", "normalize", "smoothing"}`` as in the CLI's JSON, ``file``
    being ``None`` for an array; or ``None``), also as ``provenance``. With
    ``interval``: ``lower`` and ``upper`` (T × n), each fresh release with the shortest exact
    interval of its noise; a repeat carries its publication's."""

    _optional: ClassVar[tuple[str, ...]] = ("interval", "lower", "upper")

    scheme: str
    epsilon: float
    window: int
    sensitivity: float
    sampler: str
    seeded: bool
    version: str
    t: npt.NDArray[np.int64]
    published: npt.NDArray[np.bool_]
    budget: npt.NDArray[np.float64]
    test_budget: npt.NDArray[np.float64]
    publication_budget: npt.NDArray[np.float64]
    releases: npt.NDArray[np.float64]
    max_window_budget: float
    backward: Optional[dict[str, Any]] = None
    forward: Optional[dict[str, Any]] = None
    interval: Optional[float] = None
    lower: Optional[npt.NDArray[np.float64]] = None
    upper: Optional[npt.NDArray[np.float64]] = None

    @property
    def provenance(self) -> dict[str, Any]:
        """How the release was made, as the CLI's JSON records it."""
        keys = ["scheme", "epsilon", "window", "sensitivity", "sampler", "seeded", "version", "backward", "forward"]
        return {k: getattr(self, k) for k in keys}


@dataclasses.dataclass(frozen=True, eq=False)
class Estimates(_Fields):
    """Estimates of the true counts behind noisy releases (``tpl postprocess``): per step
    t = 1..T the estimated count vector (``estimates``, T × n, each row summing to the
    population N; an integer array for ``map-integer``), the ``estimator``'s name, its
    ``warnings`` (also issued as ``UserWarning``), whether the estimator was the default
    (``estimator_default``) and whether it is ``causal`` (each step from the releases up to
    it only), and with ``interval`` the per-cell interval ends ``lower`` and ``upper`` (whole
    numbers) and how they were made (``interval_method``: ``model`` or ``bootstrap``)."""

    _optional: ClassVar[tuple[str, ...]] = ("interval", "lower", "upper", "interval_method")

    estimator: str
    t: npt.NDArray[np.int64]
    estimates: npt.NDArray[Any]
    warnings: list[str]
    estimator_default: bool
    causal: bool
    interval: Optional[float] = None
    lower: Optional[npt.NDArray[np.float64]] = None
    upper: Optional[npt.NDArray[np.float64]] = None
    interval_method: Optional[Literal["model", "bootstrap"]] = None


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison(_Fields):
    """Strategies scored on one count stream (``tpl compare``): ``rows``, one dict per
    strategy with the CLI's JSON fields (``strategy, mae, mse, mre, max_window_budget,
    max_tpl, max_window_leakage, guaranteed_max_tpl, guaranteed_max_window_leakage,
    published_fraction, mae_std, mse_std, mre_std, error``), and the parameters of the run.
    ``dataframe`` gives the rows as a ``pandas.DataFrame`` (pandas is optional). With
    ``postprocess``, ``postprocess_default`` says whether its estimator was the default.
    ``matrices`` is the CLI's object of where the matrices came from (given here, so
    ``in_sample`` is unknown when any was given). :meth:`report` writes the page of
    ``tpl compare --report``."""

    _optional: ClassVar[tuple[str, ...]] = ("postprocess_default",)

    rows: list[dict[str, Any]]
    epsilon: float
    window: int
    alpha: float
    sensitivity: float
    runs: int
    seed: int
    seeded: bool
    horizon: int
    cells: int
    postprocess: Optional[str]
    version: str
    matrices: dict[str, Any]
    postprocess_default: Optional[bool] = None
    _report: Any = dataclasses.field(default=None, repr=False)

    def __getstate__(self) -> dict:
        # The run behind report() stays in this process: a pickled Comparison is its fields.
        return {**self.__dict__, "_report": None}

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)

    def __deepcopy__(self, memo: dict) -> "Comparison":
        # A copy in this process shares the run behind report() (it is never changed).
        new = object.__new__(type(self))
        for key, value in self.__dict__.items():
            object.__setattr__(new, key, value if key == "_report" else copy.deepcopy(value, memo))
        return new

    def report(self, path: Any, name: str = "counts") -> dict[str, Any]:
        """Writes the page of ``tpl compare --report`` to ``path`` (a new or overwritten
        ``.html`` file in a folder that exists): the parameters, the table and the chart of
        error against audited leakage, the counts named ``name`` in its title — the same
        bytes the CLI writes for the same comparison, but for the provenance and the
        sentence on where the matrices came from. Returns
        ``{"out", "bytes"}``.

        Raises:
            TplError: a path that is not an ``.html`` file or cannot be written.
        """
        if self._report is None:
            raise TplError(
                "report: this Comparison holds no run to draw (it was not made by compare() in this process, "
                "e.g. it was unpickled)"
            )
        out = _html_path(path)
        made_by = [("made by", "temporal_privacy.compare (Python)"), ("tpl", self.version)]
        return {"out": out, "bytes": self._report.report(out, str(name), made_by)}

    @property
    def dataframe(self) -> Any:
        """The rows as a ``pandas.DataFrame`` indexed by strategy (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Comparison.dataframe needs pandas: pip install pandas") from e
        return pd.DataFrame(self.rows).set_index("strategy")


@dataclasses.dataclass(frozen=True, eq=False)
class Estimated(_Fields):
    """Matrices estimated from a user stream (``tpl estimate``): ``forward`` P_F and
    ``backward`` P_B (n × n), the transition ``counts`` C[i][j] (moves from cell i to cell
    j between consecutive buckets), the ``cell_ids`` of the rows, the ``histogram`` of the
    stream (T × n users per bucket and cell, every step; ``None`` when estimated from a
    stream file, which is never held whole), and ``cells`` (n), ``users, horizon,
    transitions, smoothing, forward_identity_rows, backward_identity_rows, steps`` as in
    the CLI's JSON (``horizon`` and ``steps``: the steps estimated from)."""

    _optional: ClassVar[tuple[str, ...]] = ("histogram",)

    forward: npt.NDArray[np.float64]
    backward: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    cell_ids: npt.NDArray[np.uint64]
    cells: int
    users: int
    horizon: int
    transitions: int
    smoothing: Optional[float]
    forward_identity_rows: list[int]
    backward_identity_rows: list[int]
    histogram: Optional[npt.NDArray[np.int64]]
    steps: tuple[int, int]


@dataclasses.dataclass(frozen=True, eq=False)
class UserStream(_Fields):
    """A user stream file read whole (:func:`read_stream`, ``docs/formats.md`` §6):
    ``states`` (T × N int64: ``states[t, u]`` is the index in ``cell_ids`` of user u's cell
    at the t-th bucket, users in ascending id order), ``cell_ids`` (uint64, ascending),
    ``users`` (N), ``horizon`` (T), and the buckets: ``first_bucket`` and
    ``bucket_spacing``."""

    states: npt.NDArray[np.int64]
    cell_ids: npt.NDArray[np.uint64]
    users: int
    horizon: int
    first_bucket: int
    bucket_spacing: int


# ---------------------------------------------------------------------------------------
# Leakage: tpl loss, tpl supremum, tpl leakage.


@overload
def loss(P: MatrixLike, alpha: float) -> float: ...
@overload
def loss(P: MatrixLike, alpha: Union[Sequence[float], npt.NDArray[Any]]) -> npt.NDArray[np.float64]: ...
def loss(
    P: MatrixLike, alpha: Union[float, Sequence[float], npt.NDArray[Any]]
) -> Union[float, npt.NDArray[np.float64]]:
    """The temporal privacy loss function L(α) of a transition matrix (TKDE eq. 24).

    If a release leaked α about a person, the next release under correlation ``P`` (with
    budget ε) leaks L(α) + ε: L is 0 without correlation and α for the strongest one. As
    ``tpl loss --matrix P --alpha A …``.

    Args:
        P: n × n row-stochastic matrix (numbers), or the path of a matrix file (dense, JSON,
            ``.npy``, or sparse ``from,to,p``: a city grid of 10⁴ cells costs milliseconds).
        alpha: α ≥ 0, a number or an array of numbers.

    Returns:
        L(α) as a float for a number, or a float64 array of ``alpha``'s shape.

    Raises:
        TplError: a matrix that is not row-stochastic, a negative or non-finite α.

    Example:
        >>> import temporal_privacy as tp
        >>> P = [[0.8, 0.2], [0.0, 1.0]]
        >>> tp.loss(P, [0.5, 1000.0])            # doctest: +SKIP
        array([0.37..., 1.609...])
    """
    m = _matrix_or_path(P, "P")
    if isinstance(alpha, numbers.Integral) and not isinstance(alpha, (bool, np.bool_)):
        alpha = _number(alpha, "alpha")  # an integer beyond a double is named as such
    try:
        a = np.asarray(alpha)
    except (ValueError, TypeError) as e:
        raise _not_numbers("alpha", e) from None
    if a.dtype.kind == "O":
        _refuse_objects(a, "alpha")
    if a.dtype.kind not in "iuf":
        raise TplError(f"alpha: numbers are needed, got dtype {a.dtype}")
    if a.size == 0:
        return np.empty(a.shape, dtype=np.float64)
    values = _native.loss(m, np.ascontiguousarray(a, dtype=np.float64).reshape(-1))
    if a.ndim == 0:
        return float(values[0])
    return values.reshape(a.shape)


def supremum(P: MatrixLike, epsilon: float) -> Optional[float]:
    """The limit of the backward (or forward) leakage when every step spends ε (TKDE
    Theorem 11), or ``None`` when it grows without bound. As ``tpl supremum``.

    Args:
        P: P_B for the limit of BPL, P_F for that of FPL (n × n, row-stochastic).
        epsilon: the budget ε > 0 of every step.

    Returns:
        The supremum (a float), or ``None`` when the leakage is unbounded.

    Raises:
        TplError: a matrix (or matrix file) that is not row-stochastic, ε that is not a finite
            number > 0.

    Example:
        >>> import temporal_privacy as tp
        >>> tp.supremum([[0.8, 0.2], [0.0, 1.0]], 0.3) is None   # ε ≥ log(1/0.8)
        True
    """
    return _native.supremum(_matrix_or_path(P, "P"), _number(epsilon, "epsilon"))


def leakage(
    backward: Optional[MatrixLike] = None,
    forward: Optional[MatrixLike] = None,
    budgets: Optional[ArrayLike] = None,
    *,
    epsilon: Optional[float] = None,
    horizon: Optional[int] = None,
    window: Optional[int] = None,
    sensitivity: float = 2,
) -> Leakage:
    """Backward, forward and temporal privacy leakage of a budget sequence (TKDE eqs.
    11–15), and with ``window`` the leakage of every window of that many steps (Theorem 3).
    As ``tpl leakage``; also the audit of any budgets a release spent — pass the release's
    ``sensitivity``: each ε_t is audited as its loss 2·ε_t/Δ (:func:`effective_budgets`),
    so the budgets of a release with Δ = 1 count double.

    Args:
        backward: P_B known to the adversary, or ``None`` (then BPL_t = ε_t).
        forward: P_F known to the adversary, or ``None`` (then FPL_t = ε_t).
        budgets: ε_1..ε_T (a 1-D array, ε_t ≥ 0); or give ``epsilon`` and ``horizon``.
        epsilon: the same ε > 0 at every step (with ``horizon``).
        horizon: the number of steps T, 1 ≤ T ≤ 10⁸ (with ``epsilon``).
        window: W with 1 ≤ W ≤ T, to report every window's leakage.
        sensitivity: Δ the budgets were calibrated to (default 2: ε_t as given); the
            returned ``epsilon`` is the sequence audited, 2·ε_t/Δ.

    Returns:
        :class:`Leakage` with ``t, epsilon, bpl, fpl, tpl, max_tpl`` and, with a window,
        ``window, window_leakage, max_window_leakage``.

    Raises:
        TplError: a matrix that is not row-stochastic or of another size than the other, budgets
            that are not finite and ≥ 0 (or whose loss 2·ε_t/Δ overflows), a bad ε, horizon,
            window or sensitivity, budgets= given with epsilon=, or neither.

    Example:
        >>> import temporal_privacy as tp
        >>> P = [[0.8, 0.2], [0.2, 0.8]]
        >>> r = tp.leakage(backward=P, forward=P, budgets=[0.2, 0.1, 0.1], window=2)
        >>> r.max_tpl >= 0.2 and len(r.window_leakage) == 2
        True
    """
    pb = _optional_matrix(backward, "backward")
    pf = _optional_matrix(forward, "forward")
    if budgets is not None:
        if epsilon is not None or horizon is not None:
            raise TplError("budgets: give budgets=, or epsilon= with horizon=, not both")
        b, e, t = effective_budgets(budgets, sensitivity), None, None
    elif epsilon is not None and horizon is not None:
        e = _number(epsilon, "epsilon")
        if e > 0 and e != float("inf"):
            e = float(effective_budgets([e], sensitivity)[0])
        b, t = None, _whole(horizon, "horizon")
    elif epsilon is not None:
        raise TplError(f"epsilon {epsilon}: needs horizon= (the number of steps), or give budgets=")
    elif horizon is not None:
        raise TplError(f"horizon {horizon}: needs epsilon= (the budget of every step), or give budgets=")
    else:
        raise TplError("give budgets=, or epsilon= with horizon=")
    w = None if window is None else _whole(window, "window", minimum=1)
    eps, bpl, fpl, tpl, max_tpl, windows = _native.leakage(pb, pf, b, e, t, w)
    steps = np.arange(1, len(eps) + 1, dtype=np.int64)
    if windows is None:
        return Leakage(steps, eps, bpl, fpl, tpl, max_tpl)
    return Leakage(steps, eps, bpl, fpl, tpl, max_tpl, w, windows[0], windows[1])


def effective_budgets(budgets: ArrayLike, sensitivity: float) -> npt.NDArray[np.float64]:
    """The loss 2·ε_t/Δ of each budget of a release calibrated to L1 sensitivity Δ against
    one person changing cell (rounded up, never understated): what the leakage of a
    release's budgets is audited on. The identity at Δ = 2.

    Raises:
        TplError: budgets that are not finite and ≥ 0, a sensitivity that is not a finite number
            > 0, a loss that overflows a double (a sensitivity far below a budget).

    Example:
        >>> import temporal_privacy as tp
        >>> tp.effective_budgets([0.1, 0.0], 1).tolist()
        [0.2, 0.0]
    """
    return _native.effective_budgets(_array(budgets, "budgets", 1), _number(sensitivity, "sensitivity"))


def smooth(P: ArrayLike, s: float) -> npt.NDArray[np.float64]:
    """Laplacian smoothing of TKDE eq. (28): every row p becomes (p + s)/Σ(p + s); larger
    ``s`` weakens the correlation. The CLI's ``--smoothing s``.

    Raises:
        TplError: a matrix that is not row-stochastic, s that is not a finite number ≥ 0.

    Example:
        >>> import temporal_privacy as tp
        >>> tp.smooth([[1.0, 0.0], [0.0, 1.0]], 1.0)[0].tolist() == [2 / 3, 1 / 3]
        True
    """
    return _native.smooth(_matrix(P, "P"), _number(s, "s"))


def normalize(P: ArrayLike) -> npt.NDArray[np.float64]:
    """Every row divided by its sum (rows of any finite size), as the CLI's
    ``--normalize`` reads a matrix file.

    Raises:
        TplError: a matrix with a negative or non-finite entry, or a row summing to 0.

    Example:
        >>> import temporal_privacy as tp
        >>> tp.normalize([[2, 2], [1, 3]]).tolist()
        [[0.5, 0.5], [0.25, 0.75]]
    """
    return _native.normalize(_matrix(P, "P"))


# ---------------------------------------------------------------------------------------
# Budgets: tpl allocate.


def allocate(
    strategy: Strategy,
    backward: Optional[MatrixLike] = None,
    forward: Optional[MatrixLike] = None,
    alpha: Optional[float] = None,
    horizon: Optional[int] = None,
    window: Optional[int] = None,
) -> Allocation:
    """Budgets per step that keep the temporal leakage under a target α, audited. As
    ``tpl allocate``.

    Strategies: ``"upper-bound"`` (TKDE Algorithm 7: one constant ε whose limit TPL is α,
    valid for any horizon), ``"quantified"`` (Algorithm 8: more budget at the first and
    last steps so that TPL_t = α at every step), ``"window"`` (the largest constant ε with
    every window of ``window`` steps leaking ≤ α; needs ``window``).

    Args:
        strategy: ``"upper-bound"``, ``"quantified"`` or ``"window"``.
        backward: P_B known to the adversary, or ``None``.
        forward: P_F known to the adversary, or ``None``.
        alpha: the target leakage α > 0.
        horizon: the number of steps T ≥ 1.
        window: W with 1 ≤ W ≤ T: required by ``"window"``; with the others, adds the audit
            of the largest leakage of W consecutive steps.

    Returns:
        :class:`Allocation`.

    Raises:
        TplError: an unreachable target (e.g. the two TKDE strategies with a matrix whose
            leakage grows without bound), bad arguments.

    Example:
        >>> import temporal_privacy as tp
        >>> P = tp.smooth([[1.0, 0.0], [0.0, 1.0]], 0.1)
        >>> a = tp.allocate("quantified", backward=P, forward=P, alpha=1.0, horizon=10)
        >>> a.guarantee["holds"] and a.max_tpl <= 1.0
        True
    """
    if not isinstance(strategy, str):
        raise TplError(f"strategy: a name is needed (upper-bound, quantified, window), got {strategy!r}")
    if alpha is None:
        raise TplError("alpha: the target leakage α > 0 is needed")
    if horizon is None:
        raise TplError("horizon: the number of steps T is needed")
    pb = _optional_matrix(backward, "backward")
    pf = _optional_matrix(forward, "forward")
    a = _number(alpha, "alpha")
    t = _whole(horizon, "horizon")
    w = None if window is None else _whole(window, "window", minimum=1)
    if strategy == "window" and w is None:
        raise TplError("window: the window strategy needs window=W (the window length)")
    fields, budgets, bpl, fpl, tpl = _native.allocate(strategy, pb, pf, a, t, w)
    return Allocation(**json.loads(fields), budgets=budgets, bpl=bpl, fpl=fpl, tpl=tpl)


# ---------------------------------------------------------------------------------------
# Releases: tpl release.

SCHEMES: tuple[str, ...] = ("laplace", "uniform", "sample", "bd", "ba", "pba", "planned", "dsat", "fast")


def release(
    counts: ArrayLike,
    scheme: Scheme,
    epsilon: float,
    window: int,
    sensitivity: float = 2,
    backward: Optional[MatrixLike] = None,
    forward: Optional[MatrixLike] = None,
    seed: Optional[int] = None,
    interval: Optional[float] = None,
    budgets: Optional[ArrayLike] = None,
    sampler: Sampler = "discrete",
) -> Release:
    """Releases a stream of counts under a w-event scheme (``docs/w-event.md``), as
    ``tpl release``: every window of ``window`` steps spends at most ε.

    Schemes: ``"laplace"`` (ε at every step: event level, the reference), ``"uniform"``
    (ε/w every step), ``"sample"`` (ε once per window), ``"bd"`` and ``"ba"`` (Kellaris et
    al.'s budget distribution and absorption), ``"pba"`` (the correlation-aware absorption of
    Hemkumar et al. 2021, not Du et al.'s Personalized Budget Absorption of 2025; needs
    ``backward`` and/or ``forward``), ``"planned"`` (spends ``budgets``, one ε_t per step),
    ``"dsat"`` (Li et al. 2015: at most ⌈0.15·w⌉ releases a window, sampled by a noisy
    distance against an adaptive threshold; ``docs/w-event.md`` §3.10) and ``"fast"`` (Fan
    and Xiong 2014: at most ⌊0.15·w⌋ samples a window, Kalman-corrected, at intervals set by
    a PID controller; §3.11).

    The noise is the exact discrete Laplace mechanism, drawn from a CSPRNG seeded by the
    operating system: integer counts plus integer noise, never rounded by floating point.

    Args:
        counts: T × n array of counts (integers ≥ 0 within ±2⁵² for the discrete sampler;
            any integer or float dtype), one row per step.
        scheme: one of ``laplace, uniform, sample, bd, ba, pba, planned, dsat, fast``.
        epsilon: ε > 0 of every window of W steps (of every step for ``laplace``).
        window: W ≥ 1.
        sensitivity: the L1 sensitivity Δ > 0 of one step's counts (2: one person moving).
        backward, forward: the adversary's matrices (n × n); used by ``pba`` only, recorded
            in the provenance.
        seed: a seed (0 ≤ seed < 2⁶⁴) for a reproducible run, which is therefore NOT
            private: a ``UserWarning`` says so. Default: randomness from the OS.
        interval: a level in (0, 1) to add per-cell intervals ``lower`` and ``upper``.
        budgets: the plan ε_1..ε_T of ``planned``.
        sampler: ``"discrete"`` (exact, release-grade) or ``"float"`` (any finite data, NOT
            release-grade: a ``UserWarning`` says so).

    Returns:
        :class:`Release`.

    Raises:
        TplError: counts that are not a T × n array of numbers ≥ 0 (whole numbers within ±2⁵²
            for the discrete sampler), an unknown scheme or sampler, a bad ε, window or
            sensitivity (or a noise scale they make too large), matrices that are not
            row-stochastic or do not fit the counts, a missing or bad budget plan.

    Example:
        >>> import numpy as np, temporal_privacy as tp
        >>> counts = np.array([[10, 3], [11, 2], [11, 2], [12, 1]])
        >>> r = tp.release(counts, "bd", epsilon=1.0, window=2)
        >>> r.releases.shape, bool(r.max_window_budget <= 1.0)
        ((4, 2), True)
    """
    if not isinstance(scheme, str):
        raise TplError(f"scheme: a name is needed ({', '.join(SCHEMES)}), got {scheme!r}")
    if not isinstance(sampler, str):
        raise TplError(f"sampler: discrete or float, got {sampler!r}")
    c = _counts(counts)
    e = _number(epsilon, "epsilon")
    w = _whole(window, "window", minimum=1)
    d = _number(sensitivity, "sensitivity")
    pb = _optional_matrix(backward, "backward")
    pf = _optional_matrix(forward, "forward")
    s = None if seed is None else _whole(seed, "seed")
    level = None if interval is None else _level(interval, "interval")
    plan = None if budgets is None else _array(budgets, "budgets", 1)
    fields, arrays = _native.release(c, scheme, (e, w, d), pb, pf, plan, s, sampler, level)
    out = Release(**json.loads(fields), **arrays, t=np.arange(1, c.shape[0] + 1, dtype=np.int64))
    _seed_warning(s, "this release")
    if out.sampler == "float":
        _warn_float_sampler()
    return out


# ---------------------------------------------------------------------------------------
# Estimates: tpl postprocess.

ESTIMATORS: tuple[str, ...] = ("map", "map-dbsec", "map-integer", "mle", "smooth", "kalman")


def postprocess(
    releases: Union[ArrayLike, Release],
    total: int,
    budgets: Optional[ArrayLike] = None,
    epsilon: Optional[float] = None,
    forward: Optional[MatrixLike] = None,
    backward: Optional[MatrixLike] = None,
    estimator: Optional[Estimator] = None,
    prior: Union[Literal["frequency", "uniform"], ArrayLike] = "frequency",
    interval: Optional[float] = None,
    sensitivity: Optional[float] = None,
    replicates: Optional[int] = None,
    sampler: Optional[Sampler] = None,
    seed: Optional[int] = None,
    causal: bool = False,
    interval_method: Literal["model", "bootstrap"] = "model",
) -> Estimates:
    """Estimates of the true counts behind noisy releases, using the public forward matrix
    as prior knowledge (``docs/map.md``), as ``tpl postprocess``. Post-processing reads only
    public outputs and costs no privacy budget.

    Estimators: ``"smooth"`` (the default: every step from all releases, past and future;
    also uses ``backward``), ``"map"`` (the causal filter, the default with ``causal=True``:
    each step from the releases up to it, continuous MAP whose prior strength is learned from
    them, so a wrong matrix is discounted), ``"map-dbsec"`` (the DBSec paper's prior at full
    strength), ``"map-integer"`` (exact integer MAP), ``"mle"`` (least squares under the sum
    constraint, no prior), ``"kalman"`` (the classical Kalman filter and RTS smoother, its
    move weight and process noise fitted by maximum likelihood; n³ per step).

    Args:
        releases: T × n noisy releases (negative values allowed), or a :class:`Release`:
            then ``budgets`` default to its ``publication_budget`` (0 at a repeat, which
            brings no new information), ``sensitivity`` and ``sampler`` to its own.
        total: the exact, public population N ≥ 0; every estimate sums to N.
        budgets: ε_1..ε_T, the budget that set each release's noise (0: no new information).
        epsilon: instead of ``budgets``, the same ε_t > 0 for every release.
        forward: the public forward matrix (n × n); needed by every estimator but ``mle``
            when T > 1.
        backward: the public backward matrix, used by ``smooth`` (default: the forward
            matrix reversed).
        estimator: one of ``smooth, map, map-dbsec, map-integer, mle, kalman``, or ``None``
            for the default (``smooth``; ``map`` with ``causal=True``).
        prior: the initial prior: ``"frequency"`` (the first release, normalised),
            ``"uniform"``, or an array of n probabilities.
        interval: a level in (0, 1) for per-cell intervals (``docs/intervals.md``), made as
            ``interval_method`` says.
        sensitivity: Δ > 0 of the releases (default 2, or the release's).
        replicates: with the bootstrap: its replicates B ≥ 2 (default 100).
        sampler: with the bootstrap: the sampler of the replicates (default ``"discrete"``,
            or the release's).
        seed: with the bootstrap: a seed for reproducible replicates (no release is touched).
        causal: estimate each step from the releases up to it only, as a live stream must
            (``--causal``); refused with an estimator that is not causal.
        interval_method: with ``interval``: ``"model"`` (the default: from each estimate's
            standard error under the local-level model, at a small part of the estimate's
            cost) or ``"bootstrap"`` (a parametric bootstrap, B reruns of the estimator).

    Returns:
        :class:`Estimates`.

    Raises:
        TplError: releases that are not a T × n array of finite numbers, a bad population,
            budgets (or ε) missing, of another length or not finite and ≥ 0, a bad matrix or
            prior, an unknown estimator or sampler, a bad interval level or replicates, or
            a bootstrap setting (``replicates``, ``sampler``, ``seed``) without the bootstrap.

    Example:
        >>> import numpy as np, temporal_privacy as tp
        >>> P = [[0.9, 0.1], [0.2, 0.8]]
        >>> noisy = np.array([[6.0, 9.0], [4.0, 12.0], [7.0, 8.0]])
        >>> e = tp.postprocess(noisy, total=15, epsilon=0.5, forward=P)
        >>> e.estimates.sum(axis=1).round(9).tolist()
        [15.0, 15.0, 15.0]
    """
    # A bootstrap setting the caller gave without the bootstrap would be ignored without a word.
    given = [name for name, value in (("seed", seed), ("replicates", replicates), ("sampler", sampler))
             if value is not None]
    if isinstance(releases, Release):
        if budgets is None and epsilon is None:
            budgets = releases.publication_budget
        if sensitivity is None:
            sensitivity = releases.sensitivity
        if sampler is None:
            sampler = releases.sampler
        releases = releases.releases
    r = _counts(releases, "releases", negative=True)
    n_total = _whole(total, "total")
    if budgets is not None and epsilon is not None:
        raise TplError("budgets: give budgets= or epsilon=, not both")
    if budgets is None and epsilon is None:
        raise TplError("budgets: the budgets are unknown: give budgets= (ε_t of every release) or epsilon=")
    b = None if budgets is None else _array(budgets, "budgets", 1)
    e = None if epsilon is None else _number(epsilon, "epsilon")
    d = 2.0 if sensitivity is None else _number(sensitivity, "sensitivity")
    pf = _optional_matrix(forward, "forward")
    pb = _optional_matrix(backward, "backward")
    if not isinstance(causal, bool):
        raise TplError(f"causal {causal!r}: True or False")
    by_default = estimator is None
    if by_default:
        estimator = _native.ONLINE_ESTIMATOR if causal else _native.OFFLINE_ESTIMATOR
    if not isinstance(estimator, str):
        raise TplError(f"estimator: one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    if causal and estimator in ESTIMATORS and estimator not in _native.CAUSAL_ESTIMATORS:
        raise TplError(
            f"causal: {estimator} estimates each step from later releases too; a causal one is "
            f"{', '.join(_native.CAUSAL_ESTIMATORS)}"
        )
    if isinstance(prior, str):
        prior_name, prior_values = prior, None
    else:
        prior_name, prior_values = "explicit", _array(prior, "prior", 1)
    level = None if interval is None else _level(interval, "interval")
    b_reps = 100 if replicates is None else _whole(replicates, "replicates", minimum=2)
    s = None if seed is None else _whole(seed, "seed")
    if sampler is not None and not isinstance(sampler, str):
        raise TplError(f"sampler: discrete or float, got {sampler!r}")
    if interval_method not in ("model", "bootstrap"):
        raise TplError(f"interval_method: model or bootstrap, got {interval_method!r}")
    if given and (level is None or interval_method != "bootstrap"):
        raise TplError(
            f"{given[0]}: a setting of the bootstrap (interval=..., interval_method=\"bootstrap\"), "
            "which is not asked for"
        )
    fields, arrays = _native.postprocess(
        r, n_total, b, e, d, pf, pb, prior_name, prior_values, estimator, by_default, level, interval_method,
        b_reps, sampler or "discrete", s,
    )
    for w in arrays["warnings"]:
        warnings.warn(w, UserWarning, stacklevel=2)
    return Estimates(**json.loads(fields), **arrays, t=np.arange(1, r.shape[0] + 1, dtype=np.int64))


# ---------------------------------------------------------------------------------------
# Comparisons: tpl compare.


def compare(
    counts: ArrayLike,
    backward: Optional[MatrixLike] = None,
    forward: Optional[MatrixLike] = None,
    epsilon: Optional[float] = None,
    window: Optional[int] = None,
    runs: int = 10,
    postprocess: Optional[Union[Literal[True], Literal["smooth", "map", "map-dbsec", "kalman"]]] = None,
    seed: Optional[int] = None,
    schemes: Optional[Union[str, Sequence[str]]] = None,
    alpha: Optional[float] = None,
    sensitivity: float = 2,
    baseline: bool = True,
    suite: Optional[Literal["standard", "default"]] = None,
) -> Comparison:
    """Runs release strategies on one count stream and scores each on error and on the
    leakage the adversary's correlation really gives, realised (worst run) and guaranteed
    (over every run the strategy could produce). As ``tpl compare --counts`` with matrices.

    Strategies: the w-event schemes ``laplace, uniform, sample, bd, ba, pba`` and the
    allocators ``upper-bound, quantified, window`` (whose target is ``alpha``, default ε),
    by default; ``dsat`` and ``fast`` when named in ``schemes``.
    A strategy that cannot run on this input has ``None`` scores and its reason in ``error``.

    The matrices are the adversary's knowledge and the prior of post-processing: estimated
    from the very counts scored, they flatter every estimator (``docs/cli.md``, ``compare``);
    estimate them from another period (:func:`estimate`).

    Args:
        counts: T × n true counts (integers ≥ 0), one row per step.
        backward, forward: the adversary's correlation (n × n), or ``None``.
        epsilon: ε > 0 of the schemes, per window of ``window`` steps.
        window: W ≥ 1, also of the audited window leakage.
        runs: releases per strategy, 1 ≤ R ≤ 10 000 (errors averaged, leakage the worst run).
        postprocess: ``None``, ``True`` (``"smooth"``, the default), or ``"smooth"``, ``"map"``,
            ``"map-dbsec"``, ``"kalman"``: also score every
            strategy after that post-processing (rows ``<strategy>+<name>``, the classical
            baseline's ``<strategy>+kalman`` and the data-free ``prior-mean``).
        seed: a seed for reproducible runs, therefore NOT private (a ``UserWarning`` says so).
        schemes: the strategies to run, by name (default: all nine).
        alpha: the allocators' target α (default ε).
        sensitivity: Δ > 0.
        baseline: with ``postprocess``, also the ``+kalman`` rows (the Kalman smoother every
            accuracy figure is measured against); ``False`` leaves them out.
        suite: instead of ``schemes``, a named set: ``"standard"``, the field's standard
            comparison (``laplace, uniform, sample, bd, ba, pba, dsat, fast``), or
            ``"default"`` (as without ``schemes``); as ``tpl compare --suite``.

    Returns:
        :class:`Comparison`; ``.rows`` is a list of dicts, ``.dataframe`` a pandas DataFrame.

    Raises:
        TplError: counts that are not a T × n array of whole numbers ≥ 0, matrices that are
            not row-stochastic or do not fit the counts, a bad ε, window, runs, α or sensitivity,
            an unknown strategy, suite or post-processing, both ``schemes`` and ``suite``.

    Example:
        >>> import numpy as np, temporal_privacy as tp
        >>> P = tp.smooth(np.eye(3), 0.05)
        >>> counts = np.array([[40, 30, 30]] * 20)
        >>> c = tp.compare(counts, backward=P, forward=P, epsilon=1, window=5, runs=2,
        ...                schemes=["bd", "window"])
        >>> [r["strategy"] for r in c.rows]
        ['bd', 'window']
    """
    c = _counts(counts)
    pb = _optional_matrix(backward, "backward")
    pf = _optional_matrix(forward, "forward")
    if epsilon is None or window is None:
        raise TplError("epsilon and window are needed (ε of every window of W steps)")
    e = _number(epsilon, "epsilon")
    w = _whole(window, "window", minimum=1)
    r = _whole(runs, "runs")
    a = None if alpha is None else _number(alpha, "alpha")
    d = _number(sensitivity, "sensitivity")
    s = None if seed is None else _whole(seed, "seed")
    if schemes is not None:
        if isinstance(schemes, str):
            schemes = schemes.split(",")
        schemes = [str(x).strip() for x in schemes]
        if not schemes:
            raise TplError("schemes: name at least one strategy (or None for all)")
    postprocess_default = None if postprocess is None else postprocess is True
    if postprocess is True:
        postprocess = _native.OFFLINE_ESTIMATOR
    if postprocess is not None and not isinstance(postprocess, str):
        raise TplError(f"postprocess: True (smooth, the default) or a name: smooth, map, map-dbsec or kalman, got {postprocess!r}")
    if not isinstance(baseline, bool):
        raise TplError(f"baseline {baseline!r}: True or False")
    if suite is not None and not isinstance(suite, str):
        raise TplError(f"suite {suite!r}: a name, 'standard' or 'default'")
    native = _native.compare(
        c, pb, pf, e, w, d, schemes, suite, a, r, postprocess, bool(postprocess_default), baseline, s
    )
    out = json.loads(native.json())
    out["version"] = __version__
    result = Comparison(**out, _report=native)
    _seed_warning(s, "these releases")
    return result


# ---------------------------------------------------------------------------------------
# Matrices from a user stream: tpl estimate.


def estimate(
    stream: Union[ArrayLike, str, os.PathLike[str]],
    smoothing: Optional[float] = None,
    *,
    steps: Optional[Union[str, tuple[Optional[int], Optional[int]]]] = None,
    user: Optional[ArrayLike] = None,
    cell: Optional[ArrayLike] = None,
    cells: Optional[int] = None,
) -> Estimated:
    """The forward and backward transition matrices of a user stream (TKDE §6), with
    optional Laplacian smoothing (eq. 28), and the stream's counts per bucket. As
    ``tpl estimate`` (and the histogram ``tpl compare --stream`` scores).

    Args:
        stream: an R × 3 array of whole numbers, one record (bucket, user, cell) per user
            per bucket, in any order: the rows of a stream file (``docs/formats.md`` §6).
            Every user appears at every bucket, once; buckets are evenly spaced. Or the
            bucket column, with ``user`` and ``cell`` the other two. Or the path of a
            stream file (``str`` or ``os.PathLike``), read as ``tpl estimate --stream``
            reads it: the moves are counted as the file is read, never holding it, so a
            file larger than memory is fine (a few numbers per user and per bucket, plus
            the n × n counts); the result then has no ``histogram``.
        smoothing: s ≥ 0 (``--smoothing s``), or ``None`` for none.
        steps: estimate from steps A..B only (``--steps``): ``"A..B"``, ``"A.."``, ``"..B"``
            or a pair ``(A, B)`` (``None`` for an open end); step t is the t-th bucket in
            ascending order, from 1. A move into step A or out of step B is not counted, and
            the rows are still the cells of the whole stream, so that matrices from one
            period fit the counts (``histogram``) of another.
        user: the user column, when ``stream`` is the bucket column.
        cell: the cell column, when ``stream`` is the bucket column.
        cells: index the matrices by cell id (``--cells n``): row i is cell id i for i in
            0..n−1, cells never seen get identity rows and empty histogram columns; every id
            in the stream must be below n.

    Returns:
        :class:`Estimated`: row and column i of ``forward``, ``backward`` and ``counts`` is
        the i-th distinct cell id (``cell_ids``, ascending); ``histogram`` (T × n) counts the
        users per bucket and cell in that order. Rows without an observed move are identity
        rows (``forward_identity_rows``, ``backward_identity_rows``).

    Raises:
        TplError: records that are not whole numbers ≥ 0 in three columns, a stream file that
            cannot be read or is not a stream (naming the file, line and value), a user missing
            from a bucket or twice in one, unevenly spaced buckets, more than 4096 cells, a bad
            smoothing, step range or ``cells``.

    Example:
        >>> import numpy as np, temporal_privacy as tp
        >>> # Two people over three buckets: 0 → 0 → 1 and 1 → 1 → 1.
        >>> s = np.array([[0, 7, 0], [0, 8, 1], [1, 7, 0], [1, 8, 1], [2, 7, 1], [2, 8, 1]])
        >>> e = tp.estimate(s)
        >>> e.forward.tolist(), e.histogram.tolist()
        ([[0.5, 0.5], [0.0, 1.0]], [[1, 1], [1, 1], [0, 2]])
    """
    s = None if smoothing is None else _number(smoothing, "smoothing")
    n = None if cells is None else _whole(cells, "cells")
    if isinstance(stream, (str, os.PathLike)):
        if user is not None or cell is not None:
            raise TplError("stream: a path to a stream file takes no user= or cell= columns")
        return Estimated(**_native.estimate_file(os.fspath(stream), s, _step_range(steps), n), histogram=None)
    if user is not None or cell is not None:
        if user is None or cell is None:
            raise TplError("stream: give the bucket column with both user= and cell=, or an R × 3 array")
        columns = [_whole_column(x, name) for x, name in [(stream, "stream"), (user, "user"), (cell, "cell")]]
        if len({len(c) for c in columns}) != 1:
            raise TplError(f"stream: the columns have different lengths {[len(c) for c in columns]}")
        records = np.ascontiguousarray(np.column_stack(columns))
    else:
        records = _whole_array(stream, "stream", 2)
        if records.shape[1] != 3:
            raise TplError(f"stream: an R × 3 array (bucket, user, cell) is needed, got shape {records.shape}")
    return Estimated(**_native.estimate(records, s, _step_range(steps), n))


def read_stream(path: Union[str, os.PathLike[str]]) -> UserStream:
    """A user stream file (``docs/formats.md`` §6: header
    ``timestamp_bucket,user_id,location_cell``, one row per user per bucket, in any order)
    read whole, through the reader of the ``tpl`` command line, with the same checks and
    messages: every user at every bucket once, buckets evenly spaced, at most 4096 cells.
    To estimate matrices from a file too large to hold, give its path to :func:`estimate`.

    Args:
        path: the file (``str`` or ``os.PathLike``).

    Returns:
        :class:`UserStream`: the states per bucket (T × N indices into ``cell_ids``), the
        cell ids, the number of users and buckets, the first bucket and the spacing.

    Raises:
        TplError: the file cannot be read or is not a stream, naming the file, the line and
            the value (``stream: s.csv:3: user 0 appears twice in bucket 0``).

    Example:
        >>> import os, tempfile, temporal_privacy as tp
        >>> path = os.path.join(tempfile.mkdtemp(), "s.csv")
        >>> with open(path, "w") as f:
        ...     print("timestamp_bucket,user_id,location_cell", "0,7,30", "0,8,10", "1,7,30", "1,8,30", sep=chr(10), file=f)
        >>> s = tp.read_stream(path)
        >>> s.states.tolist(), s.cell_ids.tolist(), (s.first_bucket, s.bucket_spacing)
        ([[1, 0], [1, 1]], [10, 30], (0, 1))
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TplError(f"path: a file path (str or os.PathLike) is needed, got {type(path).__name__}")
    return UserStream(**_native.read_stream(os.fspath(path)))


def _step_range(steps: Any) -> Optional[str]:
    """A step range argument (``"A..B"`` or a pair ``(A, B)`` with ``None`` for an open end)
    as the text ``--steps`` takes, or ``None``."""
    if steps is None or isinstance(steps, str):
        return steps
    try:
        a, b = steps
    except (TypeError, ValueError):
        raise TplError(f"steps: \"A..B\" or a pair (A, B), got {steps!r}") from None
    return f"{'' if a is None else _whole(a, 'steps')}..{'' if b is None else _whole(b, 'steps')}"


@dataclasses.dataclass(frozen=True, eq=False)
class TransitionMatrices(_Fields):
    """The ``forward`` P_F and ``backward`` P_B matrices (n × n) of a table of transition
    counts, and the rows without data of each (``forward_identity_rows``,
    ``backward_identity_rows``), as in :class:`Estimated`."""

    forward: npt.NDArray[np.float64]
    backward: npt.NDArray[np.float64]
    forward_identity_rows: list[int]
    backward_identity_rows: list[int]


def matrices_from_transitions(counts: ArrayLike, smoothing: Optional[float] = None) -> TransitionMatrices:
    """The forward and backward matrices of transition counts C[i][j] (moves from cell i at
    one step to cell j at the next), built by the same library function as ``tpl estimate``
    builds them from a stream: counts gathered elsewhere — summed over the partitions of a
    Spark job (``temporal_privacy.spark``), over several files — give the CLI's matrices to
    the last bit.

    Matrices estimated from people's own movements are as sensitive as the movements: keep
    them with the private data, never beside the releases as if they were public.

    Args:
        counts: an n × n array of whole numbers ≥ 0 (below 2⁶⁴), n ≤ 4096.
        smoothing: s ≥ 0 (``--smoothing s``, TKDE eq. 28), or ``None`` for none.

    Returns:
        :class:`TransitionMatrices`: a row without any move (a cell never left, for P_F;
        never entered, for P_B) is an identity row and is listed.

    Raises:
        TplError: counts that are not a square table of whole numbers ≥ 0, more than 4096
            cells, a bad smoothing.

    Example:
        >>> import temporal_privacy as tp
        >>> m = tp.matrices_from_transitions([[1, 1], [0, 2]])
        >>> m.forward.tolist(), m.backward.tolist(), m.forward_identity_rows
        ([[0.5, 0.5], [0.0, 1.0]], [[1.0, 0.0], [0.3333333333333333, 0.6666666666666666]], [])
    """
    table = _whole_array(counts, "counts", 2, "transition counts")
    if table.shape[0] != table.shape[1]:
        raise TplError(f"counts: a square n × n table is needed, got shape {table.shape}")
    s = None if smoothing is None else _number(smoothing, "smoothing")
    return TransitionMatrices(**_native.matrices_from_transitions(table, s))


def _whole_array(x: Any, name: str, ndim: int, what: str = "ids and buckets") -> np.ndarray:
    """An array of whole numbers 0..2⁶⁴−1 (``what``: ids and buckets, or counts) as uint64; a
    value that is not one is named with its position."""
    a = _numeric(x, name, ndim)
    ok = (a >= 0) if a.dtype.kind != "f" else (np.isfinite(a) & (a == np.floor(a)) & (a >= 0) & (a < 2.0**64))
    if not np.all(ok):
        at = tuple(int(i) for i in np.argwhere(~ok)[0])
        where = f"row {at[0] + 1}, column {at[1] + 1}" if len(at) == 2 else f"entry {at[0] + 1}"
        raise TplError(f"{name}: {where}: {a[at].item()!r} is not a whole number ≥ 0 below 2^64 ({what} are whole numbers)")
    return np.ascontiguousarray(a, dtype=np.uint64)


def _whole_column(x: Any, name: str) -> np.ndarray:
    return _whole_array(x, name, 1)


# ---------------------------------------------------------------------------------------
# Durable streams: tpl stream.


def _warn_float_sampler() -> None:
    """The warning of every release drawn with the float sampler (as the CLI's), issued at the
    caller of the public function."""
    warnings.warn(
        "sampler=\"float\" is NOT release-grade: the low-order bits of float Laplace noise can reveal "
        "the counts; release with the default discrete sampler",
        UserWarning,
        stacklevel=3,
    )


def _html_path(path: Any) -> str:
    """A report's path: an ``.html`` (or ``.htm``) file, so that a mistyped data file is
    never overwritten by a page."""
    out = _path(path)
    if not out.lower().endswith((".html", ".htm")):
        raise TplError(f"path {out}: the report is an HTML page: give a file name ending in .html")
    return out


def _path(path: Any) -> str:
    """A file path argument (str, bytes or os.PathLike) as text."""
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TplError(f"path: a file path is needed, got {path!r}") from None


class Stream:
    """A durable stream (``tpl stream``, ``docs/stream.md``): one SQLite file holding the
    parameters and every step, released one row at a time. The budget carries over from one
    process to the next; every spend is checked before any noise is drawn; a step is
    durable before :meth:`push` returns it; a key already pushed with the same counts
    returns the stored release and spends nothing. Noise comes from the operating system at
    every push (no generator state is stored).

    A handle may be used from any thread: calls take their turn on it, and a push lets other
    Python threads run while it writes (several handles, in threads or processes, may also
    share a file). Create one with :meth:`create` or :meth:`open`; :meth:`close` (or a
    ``with`` block) lets the file go before the handle is collected.

    Raises:
        TplError: a bad argument of any call, named; StreamDamagedError: a file that is not a
            stream, or whose history was edited; StreamBusyError: another process held the
            stream too long; StreamReadOnlyError: a stream this process cannot write.

    Example:
        >>> import os, tempfile, temporal_privacy as tp
        >>> path = os.path.join(tempfile.mkdtemp(), "s.db")
        >>> s = tp.Stream.create(path, "bd", epsilon=1.0, window=4)
        >>> step = s.push([10, 3], key=100)
        >>> s.push([10, 3], key=100)["replayed"], s.status()["steps"]
        (True, 1)
    """

    def __init__(self, native: Any) -> None:
        self._handle = native
        self._path = os.fspath(native.path())
        self._float = native.sampler() == "float"

    @property
    def _native(self) -> Any:
        """The native handle, until :meth:`close`."""
        if self._handle is None:
            raise TplError("this Stream is closed: open the file again with Stream.open(path)")
        return self._handle

    def close(self) -> None:
        """Closes the file; the handle then refuses every call. Closing twice is allowed."""
        self._handle = None

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @classmethod
    def create(
        cls,
        path: Any,
        scheme: Scheme,
        epsilon: float,
        window: int,
        sensitivity: float = 2,
        backward: Optional[MatrixLike] = None,
        forward: Optional[MatrixLike] = None,
        alpha: Optional[float] = None,
        budgets: Optional[ArrayLike] = None,
        sampler: Sampler = "discrete",
        key_file: Any = None,
        estimator: Optional[Literal["map", "map-dbsec", "map-integer", "mle", "none"]] = None,
        total: Optional[int] = None,
    ) -> "Stream":
        """Creates the stream file ``path`` (an existing file is refused) with the
        parameters of ``tpl stream init`` and opens it: ``scheme`` and ``epsilon``,
        ``window``, ``sensitivity`` as :func:`release`; ``backward``/``forward`` the
        adversary's matrices (the leakage is then audited at every step, and ``pba`` uses
        them); ``alpha`` a leakage bound no step may exceed (with matrices); ``budgets`` the
        plan of ``planned``; ``sampler`` ``"discrete"`` or ``"float"``.

        With ``total`` (the public population N), every :meth:`push` also stores the causal
        estimate of the step's true counts by ``estimator`` (default ``"map"``; ``"map-dbsec"``,
        ``"map-integer"``, ``"mle"``; ``"none"``: releases only): a filter of the releases up
        to that step and the public parameters, which costs no privacy (``docs/stream.md``
        §6); the map estimators need ``forward``. :meth:`estimates` returns them.

        The stream's key — with which each step's counts are digested, so that a retry is
        recognised while the file alone tells nothing about the counts — is written to
        ``key_file`` (default: ``path + ".key"``). Both files are readable by their owner
        only; keep the key as private as the counts (``docs/stream.md`` §1–2).

        Raises:
            TplError: an existing file or key file, a folder that does not exist, "-" as a path,
                bad parameters (ε, window, sensitivity, α, budgets, matrices, scheme, sampler,
                estimator, total) or parameters under which step 1 could never be released; nothing
                is left behind.
        """
        if not isinstance(scheme, str):
            raise TplError(f"scheme: a name is needed ({', '.join(SCHEMES)}), got {scheme!r}")
        native = _native.NativeStream.create(
            _path(path),
            scheme,
            (_number(epsilon, "epsilon"), _whole(window, "window", minimum=1), _number(sensitivity, "sensitivity")),
            _optional_matrix(backward, "backward"),
            _optional_matrix(forward, "forward"),
            None if alpha is None else _number(alpha, "alpha"),
            None if budgets is None else _array(budgets, "budgets", 1),
            sampler if isinstance(sampler, str) else str(sampler),
            None if key_file is None else _path(key_file),
            None if estimator is None else str(estimator),
            None if total is None else _whole(total, "total", minimum=1),
        )
        return cls(native)

    @classmethod
    def open(cls, path: Any, key_file: Any = None) -> "Stream":
        """Opens the existing stream file ``path``; ``key_file`` is its key (default:
        ``path + ".key"``), needed by :meth:`push` only.

        Raises:
            TplError: no such file, "-"; StreamDamagedError: a file that is not a tpl stream (another
                program's SQLite database, a truncated or edited stream, a folder); a stream of a
                newer format.
        """
        return cls(_native.NativeStream.open(_path(path), None if key_file is None else _path(key_file)))

    @staticmethod
    def rekey(path: Any, key_file: Any = None) -> dict[str, Any]:
        """Gives the stream ``path`` a new key (written over ``key_file``, default
        ``path + ".key"``) and erases every counts digest made with the old one, as ``tpl
        stream rekey``; a stream of format 1 is upgraded. A retry of an earlier step is
        refused afterwards. Returns ``{"erased": n, "upgraded": bool}``.

        Raises:
            TplError, StreamDamagedError: as :meth:`open`; the key file cannot be written.
        """
        erased, upgraded = _native.NativeStream.rekey(_path(path), None if key_file is None else _path(key_file))
        return {"erased": erased, "upgraded": upgraded}

    @property
    def path(self) -> str:
        """The stream file."""
        return self._path

    def push(
        self, counts: ArrayLike, key: Optional[Union[int, Literal["next"]]] = None, estimate: bool = True
    ) -> dict[str, Any]:
        """Releases one step from its counts (a 1-D array of n whole numbers ≥ 0), as
        ``tpl stream push`` does with one row. ``key`` (an integer ≥ 0 that increases from
        step to step, e.g. the time bucket) makes a retry safe: the same key with the same
        counts returns the stored release. ``key="next"`` appends the counts after the last
        key, so a retry of such a push releases (and spends) again; a key is required.

        Returns a dict: ``t, key, published, budget, test_budget, publication_budget,
        release`` (array), ``replayed`` (the stored release was returned), ``refused`` (why
        the stream's checks refused the step, which then repeats the last release) and, with
        matrices, ``max_tpl`` and ``max_window_leakage`` so far. On a stream that stores
        estimates, also ``estimate``: the step's causal estimate (one pass of the filter over
        the stream, O(T); ``estimate=False`` leaves it to a later :meth:`update_estimates`,
        for loops of many pushes).

        Raises:
            TplError: counts that are not a 1-D array of numbers ≥ 0 (whole numbers within ±2⁵² for
                the discrete sampler) or of another width than the stream's, a missing or bad key, a
                stored key with other counts, a key before the last, a missing key file; nothing is
                recorded. StreamBusyError, StreamReadOnlyError, StreamDamagedError: as their names say.
        """
        row = _array(counts, "counts", 1)
        if np.any(row < 0):
            j = int(np.argmax(row < 0))
            raise TplError(f"counts: cell {j}: count {row[j]:g} is negative")
        if key is None:
            raise TplError(
                "key: a key is required (an integer that increases from step to step, e.g. the time "
                "bucket), so that a retry returns the stored release instead of spending again; "
                'pass key="next" to append after the last key without that protection'
            )
        k = None if isinstance(key, str) and key == "next" else _whole(key, "key", maximum=2**63 - 1)
        native = self._native
        if self._float:
            _warn_float_sampler()
        step = native.push(row, k)
        if not estimate:
            return step
        native.update_estimates()
        stored = native.estimates()
        if stored is not None:
            rows, failed = stored
            # A step the filter could not estimate has none (estimates() says why).
            if all(t != step["t"] for t, _ in failed):
                step["estimate"] = rows[step["t"] - 1]
        return step

    def update_estimates(self) -> int:
        """Makes and stores the causal estimates of the steps that have none yet, in one pass
        of the stream's filter; returns how many were made (0 for a stream without
        estimates).

        Raises:
            TplError: a closed handle; StreamDamagedError: an edited history.
        """
        return self._native.update_estimates()

    def estimates(self) -> Optional[npt.NDArray[np.float64]]:
        """The stored causal estimates (T × n; row t − 1 is x̂_t, from the releases r_1..r_t
        only; every row sums to the stream's ``total``), or ``None`` for a stream that stores
        none. Raises :class:`TplError` naming a step the filter could not estimate.

        Raises:
            TplError: a step without an estimate, a closed handle.
        """
        stored = self._native.estimates()
        if stored is None:
            return None
        rows, failed = stored
        if failed:
            t, why = failed[0]
            raise TplError(f"step {t}: no estimate: {why}")
        return rows

    def intervals(self, level: float = 0.9) -> Optional[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
        """The intervals of the stored causal estimates at ``level`` (``tpl stream export
        --estimates --interval LEVEL``): ``(lower, upper)``, each T × n, made from the standard
        error stored with each estimate — causal like it, fixed once stored, whole numbers
        within [0, total]; ``None`` for a stream that stores no estimates. Raises
        :class:`TplError` naming a step without one.

        Raises:
            TplError: a level not strictly between 0 and 1, a step without one, a closed handle.
        """
        stored = self._native.intervals(_level(level, "level"))
        if stored is None:
            return None
        lower, upper, missing = stored
        if missing:
            t, why = missing[0]
            raise TplError(f"step {t}: no interval: {why}")
        return lower, upper

    def smoothed(self, estimator: str = "smooth", total: Optional[int] = None) -> npt.NDArray[np.float64]:
        """The releases so far estimated again as a whole (``tpl stream export --smoothed``):
        ``smooth`` or ``kalman`` use the releases after each step too, so a past step's
        estimate changes as the stream grows; any estimator of :func:`postprocess` is
        accepted. ``total`` defaults to the stream's.

        Raises:
            TplError: an unknown estimator, no population, a closed handle.
        """
        if total is None:
            total = self.status()["total"]
            if total is None:
                raise TplError("total: this stream stores no estimates; give its population")
        return self._native.reestimated(str(estimator), _whole(total, "total", minimum=1))

    def status(self) -> dict[str, Any]:
        """Where the stream stands, as ``tpl stream status`` (its JSON fields): ``steps,
        scheme, epsilon, window, sensitivity, sampler, alpha, budgets, published, refused,
        last_key, max_window_spend``, ``leakage`` — ``{"realized", "guaranteed"}``, each
        ``{"max_tpl", "max_window_leakage"}`` or ``None`` without matrices: the audit of the
        budgets spent, and the bound over every run the scheme could have produced so far
        (``docs/model.md`` §9) — and the file's ``format_version``.

        Raises:
            TplError: a closed handle; StreamDamagedError: an edited history.
        """
        fields, budgets, published = self._native.status()
        return {**json.loads(fields), "budgets": budgets, "published": published, "version": __version__}

    def steps(self) -> list[dict[str, Any]]:
        """Every recorded step, in order (as ``tpl stream export``), as :meth:`push`
        returns them.

        Raises:
            TplError: a closed handle; StreamDamagedError: an edited history.
        """
        return self._native.steps()

    def report(self, path: Any) -> dict[str, Any]:
        """Writes the page of ``tpl stream report`` to ``path`` (an ``.html`` file in a
        folder that exists): the parameters, the busiest cells' releases and estimates over
        time, every window's spend against ε, the realised and guaranteed leakage and the
        refused steps, summarised to at most 400 points a series. Returns ``{"out",
        "bytes", "steps"}`` as the CLI's JSON.

        Raises:
            TplError: a closed handle or a path that cannot be written; StreamDamagedError:
            an edited history.
        """
        out = _html_path(path)
        made_by = [("made by", "temporal_privacy.Stream.report (Python)"), ("tpl", __version__)]
        size, steps = self._native.report(out, made_by)
        return {"out": out, "bytes": size, "steps": steps}

    def __repr__(self) -> str:
        return f"Stream({self._path!r}{', closed' if self._handle is None else ''})"
