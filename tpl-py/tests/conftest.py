"""Shared fixtures: the `tpl` binary whose JSON every function is checked against, and the
example and test data of the repository.

The tests run wherever the package is installed, also from a copy of this folder outside the
repository: a test that needs the binary (``$TPL_BIN``, else ``target/release/tpl``), the
repository's data (``$TPL_REPO``, else the checkout this folder is in), PySpark or another
tool that is absent is skipped, saying what it needs. ``TPL_REQUIRE_ALL=1`` (set by
``scripts/test-all``) turns every such skip into a failure, so that CI runs everything."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

# The repository whose data the tests read: $TPL_REPO, else the checkout around this folder.
ROOT = Path(os.environ.get("TPL_REPO") or Path(__file__).resolve().parents[2])
REQUIRE_ALL = os.environ.get("TPL_REQUIRE_ALL") == "1"
EXAMPLES = ROOT / "examples" / "data"
AIS = ROOT / "testdata" / "ais_nyharbor_week_5min"
# The AIS week's matrices as CLI flags, and smoothed by 0.01 as the tests read them.
AIS_MATRICES = ("--backward", AIS / "transition_backward.csv", "--forward", AIS / "transition_forward.csv")
AIS_SMOOTHED = (*AIS_MATRICES, "--smoothing", "0.01")


def _find_tpl() -> Path:
    """The `tpl` binary: $TPL_BIN, else target/release/tpl of $CARGO_TARGET_DIR or the repo."""
    if os.environ.get("TPL_BIN"):
        return Path(os.environ["TPL_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "tpl"


def unavailable(reason: str):
    """Skips the calling test (or module, at import) because `reason` — a tool or file it
    needs — is missing; fails instead under TPL_REQUIRE_ALL=1, where every test must run."""
    if REQUIRE_ALL:
        pytest.fail(f"{reason} (TPL_REQUIRE_ALL=1: every test must run)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str):
    """``import name``, or :func:`unavailable` when it is not installed."""
    try:
        return __import__(name)
    except ImportError:
        unavailable(f"{name} is not installed")


def _java_works() -> bool:
    """Whether `java -version` runs ($JAVA_HOME/bin/java, else java on PATH)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        return False
    try:
        return subprocess.run([java, "-version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def require_java() -> None:
    """:func:`unavailable` without a Java runtime, which Spark needs (17 or later)."""
    if not _java_works():
        unavailable("no Java runtime (`java -version` fails): Spark needs Java 17+")


@pytest.fixture(scope="session")
def repo_data() -> Path:
    """The repository's example and test data (``examples/data``, ``testdata``), for the
    tests that read them: ROOT, or a skip saying where it looked."""
    if not (AIS.is_dir() and EXAMPLES.is_dir()):
        unavailable(
            f"needs the repository's testdata/ and examples/data/, not found under {ROOT}: "
            "run the tests from a checkout, or set TPL_REPO to one"
        )
    return ROOT


@pytest.fixture(scope="session")
def tpl_bin() -> Path:
    path = _find_tpl()
    if not path.is_file():
        unavailable(
            f"needs the tpl binary, not found at {path}: build it (cargo build --release -p tpl-cli) "
            "or set TPL_BIN; scripts/test-all does both"
        )
    return path


@pytest.fixture(scope="session")
def cli(tpl_bin):
    """cli(*args) runs `tpl ARGS --format json` in the repository root and returns
    (parsed JSON, stderr)."""

    def run(*args: str):
        out = subprocess.run(
            [str(tpl_bin), *map(str, args), "--format", "json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout), out.stderr

    return run


def read_matrix(path: Path) -> np.ndarray:
    """A matrix file of the repository (commas and/or whitespace, `#` comments), parsed
    with Python's correctly rounded float() as the CLI parses it."""
    rows = []
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            rows.append([float(v) for v in re.split(r"[,\s]+", line) if v])
    return np.array(rows, dtype=np.float64)


def read_budgets(path: Path) -> np.ndarray:
    return np.array(
        [float(l.split("#", 1)[0]) for l in Path(path).read_text().splitlines() if l.split("#", 1)[0].strip()]
    )


def read_counts(path: Path) -> np.ndarray:
    """A counts file with a `timestamp_bucket,c0,…` header, as integers (T × n)."""
    return np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)[:, 1:]


def same_bits(a, b) -> bool:
    """Equal to the last bit, element by element (arrays or scalars)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all(a.view(np.int64) == b.view(np.int64)))


def ais_smoothed() -> dict:
    """The AIS week's matrices smoothed as the flags ``AIS_SMOOTHED`` read them, as the
    ``backward=`` and ``forward=`` keywords of a function of the package."""
    import temporal_privacy as tp

    return {s: tp.smooth(read_matrix(AIS / f"transition_{s}.csv"), 0.01) for s in ["backward", "forward"]}


def without_provenance(page: str) -> str:
    """An HTML report without its provenance (its first definition list: who wrote it and
    how), for comparing the pages the CLI and the package write."""
    start = page.index('<dl class="params">')
    return page[:start] + page[page.index("</dl>\n", start) + 6:]
