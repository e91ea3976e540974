"""temporal_privacy.spark on a real Spark standalone cluster: a master and two workers, each
its own JVM started from this environment's PySpark, on loopback only. The recipe of
docs/spark.md §4 runs against it — the Python environment packed with venv-pack and shipped
with ``spark-submit --archives env.tar.gz#environment``, the executors running
``./environment/bin/python`` — for ``estimate`` and ``leakage``, and the results must equal
Spark ``local[2]`` (the same command line, in this process), ``tpl estimate`` and, for a few
people, ``tpl estimate`` + ``tpl leakage`` on their own stream.

Skipped, saying why, without a Java runtime, PySpark or venv-pack (failed instead under
TPL_REQUIRE_ALL=1). One cluster
serves the whole module; every JVM is killed at the end, with its process group."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import read_matrix, require_java, require_module, same_bits, unavailable

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

require_module("pyspark")

import pyspark  # noqa: E402

SPARK_HOME = Path(pyspark.__file__).resolve().parent
HEADER = "timestamp_bucket,user_id,location_cell"
# The stream: a lazy random walk of 120 people over 12 cells for 240 steps (28 800 rows).
USERS, STEPS, CELLS = 120, 240, 12
ESTIMATE = ["--smoothing", "0.01", "--steps", "..200"]
LEAKAGE = ["--epsilon", "0.1", "--window", "10", "--smoothing", "0.01"]
MATRIX_FILES = ["transition_forward.csv", "transition_backward.csv", "transition_counts.csv"]
START_TIMEOUT = 120  # seconds for the master and both workers to come up
JOB_TIMEOUT = 300  # seconds for one spark-submit


require_java()


def _free_ports(k: int) -> list:
    """k distinct free TCP ports on loopback (held open together so that they differ)."""
    socks = []
    try:
        for _ in range(k):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _kill_group(proc: subprocess.Popen) -> None:
    """End a process started with its own session, and everything it started (the launcher,
    the JVM, a worker's executors and their Python workers): SIGTERM, then SIGKILL."""
    for sig, wait in [(signal.SIGTERM, 15), (signal.SIGKILL, 15)]:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; its children in the group get the same signal once more.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        break


def _spark_env(base: Path) -> dict:
    """The environment of every Spark process of the test: loopback only, this PySpark's
    SPARK_HOME, an empty configuration folder, scratch space under ``base``."""
    conf = base / "conf"
    local = base / "local"
    conf.mkdir(exist_ok=True)
    local.mkdir(exist_ok=True)
    env = dict(os.environ)
    for name in ["SPARK_MASTER_HOST", "SPARK_MASTER_PORT", "SPARK_WORKER_OPTS", "SPARK_MASTER_OPTS", "MASTER"]:
        env.pop(name, None)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_CONF_DIR=str(conf),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="localhost",
        SPARK_LOCAL_DIRS=str(local),
    )
    return env


def _master_json(webui: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as r:
        return json.load(r)


class Cluster:
    def __init__(self, base: Path):
        self.base = base
        self.env = _spark_env(base)
        self.procs: list = []
        self.port, self.webui, *self.worker_webuis = _free_ports(4)
        self.url = f"spark://127.0.0.1:{self.port}"
        self.work_dirs = [base / f"worker{k}" for k in range(2)]

    def _start(self, name: str, *args: str) -> None:
        log = open(self.base / f"{name}.log", "wb")
        proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=self.env, cwd=self.base, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        proc.name = name
        self.procs.append(proc)

    def _wait(self, what: str, ready) -> dict:
        deadline = time.monotonic() + START_TIMEOUT
        state = None
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"the {p.name} JVM exited ({p.returncode}):\n{_tail(self.base / f'{p.name}.log')}")
            with contextlib.suppress(OSError, ValueError):
                state = _master_json(self.webui)
                if ready(state):
                    return state
            time.sleep(0.5)
        logs = "\n".join(f"--- {p.name}\n{_tail(self.base / f'{p.name}.log')}" for p in self.procs)
        raise RuntimeError(f"{what} not ready after {START_TIMEOUT} s (master: {state}):\n{logs}")

    def start_master(self) -> None:
        self._start(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.webui),
        )
        self._wait("the master", lambda s: s.get("status") == "ALIVE")

    def start_workers(self) -> None:
        for k, (work, webui) in enumerate(zip(self.work_dirs, self.worker_webuis)):
            work.mkdir()
            self._start(
                f"worker{k}", "org.apache.spark.deploy.worker.Worker", self.url,
                "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                "--webui-port", str(webui), "--work-dir", str(work),
            )

    def wait_for_workers(self) -> None:
        self._wait("two workers", lambda s: s.get("aliveworkers") == 2)

    def stop(self) -> None:
        for p in reversed(self.procs):
            _kill_group(p)


def _pack(out: Path) -> Path:
    """This environment packed by venv-pack, as docs/spark.md §4 packs one — without PySpark,
    which the executors take from Spark itself (its pyspark.zip), and without the build and
    test tools (maturin, pip, pytest, the packages' own tests): 90 MB in about 4 s, where the
    whole environment is 590 MB in 28 s."""
    site = Path(sysconfig.get_paths()["purelib"]).relative_to(sys.prefix)
    exclude = [
        f"{site}/pyspark/*", f"{site}/pyspark-*", f"{site}/py4j/*", f"{site}/py4j-*", "bin/maturin", f"{site}/maturin*",
        f"{site}/pip/*", f"{site}/setuptools/*", f"{site}/_pytest/*", f"{site}/pygments/*", f"{site}/*/tests/*",
        f"{site}/pyarrow/include/*",
    ]
    args = [sys.executable, "-m", "venv_pack", "-p", sys.prefix, "-o", str(out), "--compress-level", "1", "-q"]
    for pattern in exclude:
        args += ["--exclude", pattern]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def _cluster_tools_missing() -> str:
    """Why this environment cannot pack itself for the cluster, or the empty string."""
    try:
        import venv_pack  # noqa: F401
    except ImportError:
        return "venv-pack is not installed (pip install venv-pack): the cluster test ships this environment with it"
    if sys.prefix == sys.base_prefix:
        return f"not a virtual environment, which venv-pack needs to pack (python: {sys.executable})"
    return ""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The master and two workers, up, with the packed environment as ``archive`` (packed
    while the workers start). Every JVM ends with the module, however it ends."""
    # Where the package is installed as a user installs it, the cluster's tools may be absent:
    # then the test says why it skips (and fails under TPL_REQUIRE_ALL=1, as in CI).
    missing = _cluster_tools_missing()
    if missing:
        unavailable(missing)
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.start_master()
        c.start_workers()
        c.archive = _pack(tmp_path_factory.mktemp("env") / "env.tar.gz")
        c.wait_for_workers()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """The stream as a Parquet folder of four files (for Spark) and as one CSV file (for
    `tpl`), with the records as an array."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = tmp_path_factory.mktemp("stream")
    rng = np.random.default_rng(25)
    walk = np.empty((STEPS, USERS), dtype=np.int64)
    walk[0] = rng.integers(0, CELLS, USERS)
    for t in range(1, STEPS):
        walk[t] = (walk[t - 1] + rng.choice([-1, 0, 0, 1], USERS)) % CELLS
    bucket = np.repeat(np.arange(STEPS, dtype=np.int64) * 300 + 1_700_000_000, USERS)
    user = np.tile(np.arange(USERS, dtype=np.int64) * 101 + 7, STEPS)
    records = np.column_stack([bucket, user, walk.reshape(-1)])
    # Rows shuffled over the files: no order to lean on.
    records = records[rng.permutation(len(records))]
    folder = base / "stream.parquet"
    folder.mkdir()
    for k, part in enumerate(np.array_split(records, 4)):
        pq.write_table(
            pa.table({"timestamp_bucket": part[:, 0], "user_id": part[:, 1], "location_cell": part[:, 2]}),
            folder / f"part-{k}.parquet",
        )
    csv = base / "stream.csv"
    np.savetxt(csv, records, fmt="%d", delimiter=",", header=HEADER, comments="")
    return {"parquet": folder, "csv": csv, "records": records}


def _main_file() -> str:
    import temporal_privacy.spark.__main__ as m

    return m.__file__


class Submission:
    """docs/spark.md §4: ``spark-submit`` in client mode against the cluster, the packed
    environment shipped with ``--archives`` and run by the executors. It starts at once; the
    local run and the CLI run meanwhile, and ``result()`` waits for it."""

    def __init__(self, cluster: Cluster, work: Path, *args: str):
        work.mkdir()
        self.work, self.what = work, args[0]
        env = dict(cluster.env, PYSPARK_DRIVER_PYTHON=sys.executable, PYSPARK_PYTHON="./environment/bin/python")
        command = [
            str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url, "--deploy-mode", "client",
            "--archives", f"{cluster.archive}#environment",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=8",
            # The first job waits for both executors, so that both take part.
            "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
            _main_file(), *args,
        ]
        with open(work / "stdout", "wb") as out, open(work / "stderr", "wb") as err:
            self.proc = subprocess.Popen(
                command, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _kill_group(self.proc)

    def result(self) -> dict:
        try:
            self.proc.wait(timeout=JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc)
            pytest.fail(f"spark-submit {self.what} ran over {JOB_TIMEOUT} s:\n{_tail(self.work / 'stderr')}")
        assert self.proc.returncode == 0, f"spark-submit {self.what}:\n{_tail(self.work / 'stderr', 80)}\n{_tail(self.work / 'stdout')}"
        # The driver's standard error reaches spark-submit's standard output (Spark's
        # PythonRunner merges them): the JSON summary is the last line.
        return json.loads((self.work / "stdout").read_text().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def local_spark():
    """Spark local[2] in this process: the module's command line below runs in it."""
    from pyspark.sql import SparkSession

    # Loopback only, also for a Java gateway this process starts now.
    saved = os.environ.get("SPARK_LOCAL_IP")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("temporal_privacy cluster tests")
        .config("spark.sql.shuffle.partitions", 4)
        .config("spark.ui.enabled", False)
        .config("spark.ui.showConsoleProgress", False)
        .config("spark.log.level", "ERROR")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    yield session
    session.stop()
    if saved is None:
        os.environ.pop("SPARK_LOCAL_IP", None)
    else:
        os.environ["SPARK_LOCAL_IP"] = saved


def _local(local_spark, *args: str) -> dict:
    """The same command line in Spark local[2] (the session above)."""
    from temporal_privacy.spark.__main__ import main

    assert local_spark.sparkContext.master == "local[2]"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "--master", "local[2]"]) == 0
    return json.loads(out.getvalue())


def _check_the_apps_ran_on_both_workers(cluster: Cluster, before: set) -> None:
    """Each worker ran an executor of the application that ran tasks, in a folder where the
    archive was unpacked as ``environment``."""
    deadline = time.monotonic() + 30
    while True:
        state = _master_json(cluster.webui)
        apps = [a["id"] for a in state.get("completedapps", []) if a["id"] not in before]
        if apps or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(apps) == 1, state
    for work in cluster.work_dirs:
        executors = [d for d in (work / apps[0]).glob("*") if d.is_dir()]
        assert executors, f"no executor of {apps[0]} on {work.name}"
        assert any((d / "environment" / "bin" / "python").exists() for d in executors), [
            sorted(p.name for p in d.iterdir()) for d in executors
        ]
        logs = "".join((d / "stderr").read_text(errors="replace") for d in executors if (d / "stderr").exists())
        assert "Finished task" in logs, f"the executor on {work.name} ran no task:\n{logs[-3000:]}"


def _completed(cluster: Cluster) -> set:
    return {a["id"] for a in _master_json(cluster.webui).get("completedapps", [])}


def test_estimate_on_the_cluster_equals_local_mode_and_tpl_estimate(cluster, stream, local_spark, cli, tmp_path):
    before = _completed(cluster)
    with Submission(cluster, tmp_path / "driver", "estimate", "--stream", str(stream["parquet"]),
                    "--out", str(tmp_path / "cluster"), *ESTIMATE) as submitted:
        local = _local(local_spark, "estimate", "--stream", str(stream["parquet"]), "--out", str(tmp_path / "local"), *ESTIMATE)
        expected, _ = cli("estimate", "--stream", stream["csv"], "--out", tmp_path / "cli", *ESTIMATE)
        got = submitted.result()
    _check_the_apps_ran_on_both_workers(cluster, before)

    assert {k: v for k, v in got.items() if k != "out"} == {k: v for k, v in local.items() if k != "out"}
    assert got["users"] == USERS and got["steps"] == [1, 200]
    for key in ["users", "horizon", "cells", "cell_ids", "transitions", "steps", "forward_identity_rows", "backward_identity_rows"]:
        assert got[key] == expected[key], key
    # The cluster's files are the local run's, byte for byte; the matrices are tpl estimate's
    # to the last bit (the comment lines name the program that wrote them).
    for name in [*MATRIX_FILES, "cells.csv", "counts.csv"]:
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    for name in MATRIX_FILES:
        assert same_bits(read_matrix(tmp_path / "cluster" / name), read_matrix(tmp_path / "cli" / name)), name
    assert (tmp_path / "cluster/cells.csv").read_text() == (tmp_path / "cli/cells.csv").read_text()
    # People per bucket and cell, counted here.
    counts = np.loadtxt(tmp_path / "cluster/counts.csv", delimiter=",", skiprows=1, dtype=np.int64)
    order = np.argsort(stream["records"][:, 0], kind="stable")
    by_step = stream["records"][order].reshape(STEPS, USERS, 3)
    assert np.array_equal(counts[:, 0], np.arange(STEPS))
    assert np.array_equal(counts[:, 1:], np.stack([np.bincount(s[:, 2], minlength=CELLS) for s in by_step]))


def test_leakage_on_the_cluster_equals_local_mode_and_tpl_per_person(cluster, stream, local_spark, cli, tmp_path):
    import pyarrow.parquet as pq

    before = _completed(cluster)
    with Submission(cluster, tmp_path / "driver", "leakage", "--stream", str(stream["parquet"]),
                    "--out", str(tmp_path / "cluster"), *LEAKAGE) as submitted:
        local = _local(local_spark, "leakage", "--stream", str(stream["parquet"]), "--out", str(tmp_path / "local"), *LEAKAGE)
        got = submitted.result()
    _check_the_apps_ran_on_both_workers(cluster, before)

    assert {k: v for k, v in got.items() if k != "out"} == {k: v for k, v in local.items() if k != "out"}
    assert got == json.loads((tmp_path / "cluster/summary.json").read_text())
    assert got["people"] == USERS
    # Every person's row, equal to the last bit.
    people = [pq.read_table(tmp_path / run / "people").sort_by("user_id") for run in ["cluster", "local"]]
    assert people[0].num_rows == USERS and people[0].equals(people[1])
    rows = {r["user_id"]: r for r in people[0].to_pylist()}
    assert max(r["max_tpl"] for r in rows.values()) == got["max_tpl"] == got["worst"]["max_tpl"]
    # The worst person and two others: tpl estimate then tpl leakage on their own stream.
    records = stream["records"]
    for user in sorted({got["worst"]["user_id"], 7, 7 + 101 * (USERS - 1)}):
        own = records[records[:, 1] == user]
        own = own[np.argsort(own[:, 0])]
        path = tmp_path / f"person-{user}.csv"
        np.savetxt(path, own, fmt="%d", delimiter=",", header=HEADER, comments="")
        cli("estimate", "--stream", path, "--smoothing", "0.01", "--out", tmp_path / f"m{user}")
        expected, _ = cli(
            "leakage", "--backward", tmp_path / f"m{user}/transition_backward.csv",
            "--forward", tmp_path / f"m{user}/transition_forward.csv",
            "--epsilon", "0.1", "--horizon", str(len(own)), "--window", "10",
        )
        r = rows[user]
        assert same_bits(r["max_tpl"], expected["max_tpl"]), user
        assert same_bits(r["max_window_leakage"], expected["max_window_leakage"]), user
