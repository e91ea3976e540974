from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
from pyspark.sql import DataFrame

from .. import Estimated

BUCKET: str
USER: str
CELL: str
MAX_CELLS: int

StepArg = Optional[Union[str, tuple[Optional[int], Optional[int]]]]

def counts(
    df: DataFrame, cells: Optional[int] = None, *, bucket: str = ..., user: str = ..., cell: str = ...
) -> npt.NDArray[np.int64]: ...
def transition_counts(
    df: DataFrame,
    cells: Optional[int] = None,
    *,
    steps: StepArg = None,
    bucket: str = ...,
    user: str = ...,
    cell: str = ...,
) -> npt.NDArray[np.uint64]: ...
def estimate(
    df: DataFrame,
    smoothing: Optional[float] = None,
    *,
    cells: Optional[int] = None,
    steps: StepArg = None,
    bucket: str = ...,
    user: str = ...,
    cell: str = ...,
) -> Estimated: ...
def personalized_leakage(
    df: DataFrame,
    budgets: Union[float, Sequence[float], npt.NDArray[Any]],
    smoothing: Optional[float] = None,
    window: Optional[int] = None,
    *,
    sensitivity: float = 2,
    steps: StepArg = None,
    bucket: str = ...,
    user: str = ...,
    cell: str = ...,
) -> DataFrame: ...
def leakage_summary(
    people: DataFrame, quantiles: Sequence[float] = (0.5, 0.9, 0.99), *, user: Optional[str] = None
) -> dict[str, Any]: ...
