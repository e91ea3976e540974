"""Type stubs of temporal_privacy (the documentation is in __init__.py and docs/python.md).

Every function and method raises TplError (a ValueError) for an input tpl refuses, wrong
types, dtypes and shapes included, with a message naming the argument; Stream's calls also
raise its subclasses StreamBusyError, StreamReadOnlyError and StreamDamagedError. Each
docstring's "Raises:" section says which inputs.
"""

import os
from typing import Any, ClassVar, Iterator, Literal, Mapping, Optional, Sequence, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

ArrayLike = npt.ArrayLike
# A transition matrix: its rows as an array, or the path of a matrix file (dense text, JSON,
# .npy, or sparse from,to,p).
class MatrixFile:
    path: str
    smoothing: Optional[float]
    normalize: bool
    def __init__(
        self, path: Union[str, os.PathLike[str]], smoothing: Optional[float] = None, normalize: bool = False
    ) -> None: ...

MatrixLike = Union[npt.ArrayLike, str, os.PathLike[str], MatrixFile]
Strategy = Literal["upper-bound", "quantified", "window"]
Scheme = Literal["laplace", "uniform", "sample", "bd", "ba", "pba", "planned"]
Estimator = Literal["map", "map-dbsec", "map-integer", "mle", "smooth", "kalman"]
Sampler = Literal["discrete", "float", "secure"]

SCHEMES: tuple[str, ...]
ESTIMATORS: tuple[str, ...]

class TplError(ValueError):
    """An input tpl refuses, with the library's message naming the argument at fault."""

class StreamBusyError(TplError): ...
class StreamReadOnlyError(TplError): ...
class StreamDamagedError(TplError): ...

class _Fields(Mapping[str, Any]):
    _optional: ClassVar[tuple[str, ...]]
    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self, numpy: bool = False) -> dict[str, Any]: ...
    def to_json(self) -> str: ...

class Leakage(_Fields):
    t: npt.NDArray[np.int64]
    epsilon: npt.NDArray[np.float64]
    bpl: npt.NDArray[np.float64]
    fpl: npt.NDArray[np.float64]
    tpl: npt.NDArray[np.float64]
    max_tpl: float
    window: Optional[int]
    window_leakage: Optional[npt.NDArray[np.float64]]
    max_window_leakage: Optional[float]

class Allocation(_Fields):
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
    window: Optional[int]
    max_window_leakage: Optional[float]
    limited_by: Optional[dict[str, Any]]
    note: Optional[str]

class Release(_Fields):
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
    backward: Optional[dict[str, Any]]
    forward: Optional[dict[str, Any]]
    interval: Optional[float]
    lower: Optional[npt.NDArray[np.float64]]
    upper: Optional[npt.NDArray[np.float64]]
    @property
    def provenance(self) -> dict[str, Any]: ...

class Estimates(_Fields):
    estimator: str
    t: npt.NDArray[np.int64]
    estimates: npt.NDArray[Any]
    warnings: list[str]
    estimator_default: bool
    causal: bool
    interval: Optional[float]
    lower: Optional[npt.NDArray[np.float64]]
    upper: Optional[npt.NDArray[np.float64]]
    interval_method: Optional[Literal["model", "bootstrap"]]

class Comparison(_Fields):
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
    postprocess_default: Optional[bool]
    def report(self, path: Any, name: str = "counts") -> dict[str, Any]: ...
    @property
    def dataframe(self) -> Any: ...

class Estimated(_Fields):
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

class UserStream(_Fields):
    states: npt.NDArray[np.int64]
    cell_ids: npt.NDArray[np.uint64]
    users: int
    horizon: int
    first_bucket: int
    bucket_spacing: int

class TransitionMatrices(_Fields):
    forward: npt.NDArray[np.float64]
    backward: npt.NDArray[np.float64]
    forward_identity_rows: list[int]
    backward_identity_rows: list[int]

@overload
def loss(P: MatrixLike, alpha: float) -> float: ...
@overload
def loss(P: MatrixLike, alpha: Union[Sequence[float], npt.NDArray[Any]]) -> npt.NDArray[np.float64]: ...
def supremum(P: MatrixLike, epsilon: float) -> Optional[float]: ...
def leakage(
    backward: Optional[MatrixLike] = None,
    forward: Optional[MatrixLike] = None,
    budgets: Optional[ArrayLike] = None,
    *,
    epsilon: Optional[float] = None,
    horizon: Optional[int] = None,
    window: Optional[int] = None,
    sensitivity: float = 2,
) -> Leakage: ...
def effective_budgets(budgets: ArrayLike, sensitivity: float) -> npt.NDArray[np.float64]: ...
def smooth(P: ArrayLike, s: float) -> npt.NDArray[np.float64]: ...
def normalize(P: ArrayLike) -> npt.NDArray[np.float64]: ...
def allocate(
    strategy: Strategy,
    backward: Optional[MatrixLike] = None,
    forward: Optional[MatrixLike] = None,
    alpha: Optional[float] = None,
    horizon: Optional[int] = None,
    window: Optional[int] = None,
) -> Allocation: ...
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
) -> Release: ...
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
) -> Estimates: ...
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
) -> Comparison: ...
def read_stream(path: Union[str, os.PathLike[str]]) -> UserStream: ...
def estimate(
    stream: Union[ArrayLike, str, os.PathLike[str]],
    smoothing: Optional[float] = None,
    *,
    steps: Optional[Union[str, tuple[Optional[int], Optional[int]]]] = None,
    user: Optional[ArrayLike] = None,
    cell: Optional[ArrayLike] = None,
    cells: Optional[int] = None,
) -> Estimated: ...
def matrices_from_transitions(counts: ArrayLike, smoothing: Optional[float] = None) -> TransitionMatrices: ...

class Stream:
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
    ) -> "Stream": ...
    @classmethod
    def open(cls, path: Any, key_file: Any = None) -> "Stream": ...
    @staticmethod
    def rekey(path: Any, key_file: Any = None) -> dict[str, Any]: ...
    @property
    def path(self) -> str: ...
    def push(self, counts: ArrayLike, key: Union[int, Literal["next"]], estimate: bool = True) -> dict[str, Any]: ...
    def update_estimates(self) -> int: ...
    def estimates(self) -> Optional[npt.NDArray[np.float64]]: ...
    def intervals(
        self, level: float = 0.9
    ) -> Optional[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]: ...
    def smoothed(self, estimator: str = "smooth", total: Optional[int] = None) -> npt.NDArray[np.float64]: ...
    def status(self) -> dict[str, Any]: ...
    def steps(self) -> list[dict[str, Any]]: ...
    def report(self, path: Any) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Stream": ...
    def __exit__(self, *exc: Any) -> None: ...
