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
* Anything ``tpl`` refuses raises :class:`TplError` (a ``ValueError``) with the library's
  message, prefixed by the argument at fault; so do arrays of the wrong dtype or shape.
* Long computations release the GIL: other Python threads run meanwhile.
* Randomness comes from the operating system unless ``seed=`` is given, and then a
  ``UserWarning`` says that the output is reproducible, hence not private.

>>> import temporal_privacy as tp
>>> round(tp.loss([[0.9, 0.1], [0.2, 0.8]], 1.0), 6)
0.706275
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Iterator, Mapping, Optional

import numpy as np

from . import _native
from ._native import TplError

__all__ = [
    "TplError",
    "loss",
    "supremum",
    "leakage",
    "smooth",
    "normalize",
    "Leakage",
    "__version__",
]

__version__: str = _native.__version__


# ---------------------------------------------------------------------------------------
# Checking inputs: every refusal is a TplError naming the argument.


def _array(x: Any, name: str, ndim: int) -> np.ndarray:
    """``x`` as a C-contiguous float64 array of ``ndim`` dimensions, or a TplError."""
    if isinstance(x, (str, bytes)):
        raise TplError(f"{name}: an array of numbers is needed, got a {type(x).__name__}")
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as e:
        raise TplError(f"{name}: not an array of numbers ({e})") from None
    if a.dtype.kind not in "iuf":
        raise TplError(
            f"{name}: an array of integers or floats is needed, got dtype {a.dtype}"
        )
    if a.ndim != ndim:
        shape = "a 1-D array (one value per step)" if ndim == 1 else "a 2-D array"
        raise TplError(f"{name}: {shape} is needed, got shape {a.shape}")
    if a.size == 0:
        raise TplError(f"{name}: the array is empty (shape {a.shape})")
    return np.ascontiguousarray(a, dtype=np.float64)


def _matrix(x: Any, name: str) -> np.ndarray:
    """A transition matrix argument: a non-empty square 2-D array of numbers."""
    a = _array(x, name, 2)
    if a.shape[0] != a.shape[1]:
        raise TplError(f"{name}: a square n × n matrix is needed, got shape {a.shape}")
    return a


def _optional_matrix(x: Any, name: str) -> Optional[np.ndarray]:
    return None if x is None else _matrix(x, name)


def _number(x: Any, name: str) -> float:
    """A real number argument."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TplError(f"{name}: a number is needed, got {x!r}")
    return float(x)


def _whole(x: Any, name: str, minimum: int = 0, maximum: int = 2**64 - 1) -> int:
    """A whole-number argument within [minimum, maximum]."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TplError(f"{name}: a whole number is needed, got {x!r}")
    v = int(x)
    if not minimum <= v <= maximum:
        raise TplError(f"{name}: {v} is not a whole number from {minimum} to {maximum}")
    return v


# ---------------------------------------------------------------------------------------
# Results: attributes, and mapping access with the CLI's JSON field names.


class _Fields(Mapping):
    """Fields by attribute (``r.max_tpl``) or by the CLI's JSON name (``r["max_tpl"]``);
    ``dict(r)`` or ``r.to_dict()`` gives them all."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> list:
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]

    def to_dict(self) -> dict:
        """The fields that are set, by name (arrays are not copied)."""
        return {k: getattr(self, k) for k in self._names()}


@dataclasses.dataclass(frozen=True, eq=False)
class Leakage(_Fields):
    """The leakage of a budget sequence (``tpl leakage``): per step t = 1..T the budget
    ε_t, BPL_t, FPL_t and TPL_t = BPL_t + FPL_t − ε_t, their maximum, and with a window W
    the leakage of every window of W steps (one per start t = 1..T−W+1, TKDE Theorem 3,
    rounded up) and its maximum."""

    t: np.ndarray
    epsilon: np.ndarray
    bpl: np.ndarray
    fpl: np.ndarray
    tpl: np.ndarray
    max_tpl: float
    window: Optional[int] = None
    window_leakage: Optional[np.ndarray] = None
    max_window_leakage: Optional[float] = None


# ---------------------------------------------------------------------------------------
# Leakage: tpl loss, tpl supremum, tpl leakage.


def loss(P: Any, alpha: Any) -> Any:
    """The temporal privacy loss function L(α) of a transition matrix (TKDE eq. 24).

    If a release leaked α about a person, the next release under correlation ``P`` (with
    budget ε) leaks L(α) + ε: L is 0 without correlation and α for the strongest one. As
    ``tpl loss --matrix P --alpha A …``.

    Args:
        P: n × n row-stochastic matrix (numbers).
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
    m = _matrix(P, "P")
    try:
        a = np.asarray(alpha)
    except (ValueError, TypeError) as e:
        raise TplError(f"alpha: not a number or an array of numbers ({e})") from None
    if a.dtype.kind not in "iuf":
        raise TplError(f"alpha: numbers are needed, got dtype {a.dtype}")
    if a.size == 0:
        return np.empty(a.shape, dtype=np.float64)
    values = _native.loss(m, np.ascontiguousarray(a, dtype=np.float64).reshape(-1))
    if a.ndim == 0:
        return float(values[0])
    return values.reshape(a.shape)


def supremum(P: Any, epsilon: Any) -> Optional[float]:
    """The limit of the backward (or forward) leakage when every step spends ε (TKDE
    Theorem 11), or ``None`` when it grows without bound. As ``tpl supremum``.

    Args:
        P: P_B for the limit of BPL, P_F for that of FPL (n × n, row-stochastic).
        epsilon: the budget ε > 0 of every step.

    Returns:
        The supremum (a float), or ``None`` when the leakage is unbounded.

    Example:
        >>> import temporal_privacy as tp
        >>> tp.supremum([[0.8, 0.2], [0.0, 1.0]], 0.3) is None   # ε ≥ log(1/0.8)
        True
    """
    return _native.supremum(_matrix(P, "P"), _number(epsilon, "epsilon"))


def leakage(
    backward: Any = None,
    forward: Any = None,
    budgets: Any = None,
    *,
    epsilon: Any = None,
    horizon: Any = None,
    window: Any = None,
) -> Leakage:
    """Backward, forward and temporal privacy leakage of a budget sequence (TKDE eqs.
    11–15), and with ``window`` the leakage of every window of that many steps (Theorem 3).
    As ``tpl leakage``; also the audit of any budgets a release spent.

    Args:
        backward: P_B known to the adversary, or ``None`` (then BPL_t = ε_t).
        forward: P_F known to the adversary, or ``None`` (then FPL_t = ε_t).
        budgets: ε_1..ε_T (a 1-D array, ε_t ≥ 0); or give ``epsilon`` and ``horizon``.
        epsilon: the same ε > 0 at every step (with ``horizon``).
        horizon: the number of steps T, 1 ≤ T ≤ 10⁸ (with ``epsilon``).
        window: W with 1 ≤ W ≤ T, to report every window's leakage.

    Returns:
        :class:`Leakage` with ``t, epsilon, bpl, fpl, tpl, max_tpl`` and, with a window,
        ``window, window_leakage, max_window_leakage``.

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
        b, e, t = _array(budgets, "budgets", 1), None, None
    elif epsilon is not None and horizon is not None:
        b, e, t = None, _number(epsilon, "epsilon"), _whole(horizon, "horizon")
    elif epsilon is not None:
        raise TplError(f"epsilon {epsilon}: needs horizon= (the number of steps), or give budgets=")
    elif horizon is not None:
        raise TplError(f"horizon {horizon}: needs epsilon= (the budget of every step), or give budgets=")
    else:
        raise TplError("give budgets=, or epsilon= with horizon=")
    w = None if window is None else _whole(window, "window")
    eps, bpl, fpl, tpl, max_tpl, windows = _native.leakage(pb, pf, b, e, t, w)
    steps = np.arange(1, len(eps) + 1, dtype=np.int64)
    if windows is None:
        return Leakage(steps, eps, bpl, fpl, tpl, max_tpl)
    return Leakage(steps, eps, bpl, fpl, tpl, max_tpl, w, windows[0], windows[1])


def smooth(P: Any, s: Any) -> np.ndarray:
    """Laplacian smoothing of TKDE eq. (28): every row p becomes (p + s)/Σ(p + s); larger
    ``s`` weakens the correlation. The CLI's ``--smoothing s``.

    Example:
        >>> import temporal_privacy as tp
        >>> tp.smooth([[1.0, 0.0], [0.0, 1.0]], 1.0)[0].tolist() == [2 / 3, 1 / 3]
        True
    """
    return _native.smooth(_matrix(P, "P"), _number(s, "s"))


def normalize(P: Any) -> np.ndarray:
    """Every row divided by its sum (rows of any finite size), as the CLI's
    ``--normalize`` reads a matrix file.

    Example:
        >>> import temporal_privacy as tp
        >>> tp.normalize([[2, 2], [1, 3]]).tolist()
        [[0.5, 0.5], [0.25, 0.75]]
    """
    return _native.normalize(_matrix(P, "P"))
