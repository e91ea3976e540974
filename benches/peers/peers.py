#!/usr/bin/env python3
"""The workloads of tpl's performance table, run through tpl and through its peers in one run.

Peers (run on demand, not in CI; see README.md here for the setup):

- numpy: the exact L(alpha) of a dense n = 200 matrix, vectorised (every ordered pair of rows,
  the best subset a prefix of the cells sorted by q_i/d_i, TKDE Theorem 5); the dense prior
  propagation p <- p @ P for n = 1000 over T = 2000 steps (the part of MAP post-processing that
  moves the prior); float Laplace noise on 10^6 counts (not release-grade: the insecure floor).
- OpenDP: make_laplace on a vector of 10^6 integer counts (exact, release-grade), when the
  opendp package is installed.
- tpl: the built binary, each figure the whole process (start-up, reading the input files,
  writing the output) through subprocess.

A peer's figure is the computation alone inside this Python process (inputs already in memory,
nothing written). tpl and the peer run in turn, --runs times each, so that both see the same
machine; each figure is a median, and the ratio tpl / peer the median of the paired ratios:
below 1 tpl is faster, although it also pays for its start-up and its file input and output.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:  # the script says how to install it
    sys.exit("peers.py needs numpy: pip install -r benches/peers/requirements.txt")

ALPHA = 0.1
SCALE = 20.0  # Laplace scale b = sensitivity 2 / epsilon 0.1, as the criterion bench


def paired(tpl, args, runs, peer):
    """tpl's whole process (`args`: its command line) or a call of the Python package
    (`args`: a function), and the peer's computation, run in turn `runs` times (after one
    warm-up of each), so that both see the same machine: the median wall time of each, in
    seconds, the median of the paired ratios tpl / peer, and the peer's last result."""
    if callable(args):
        run_tpl = args
    else:
        def run_tpl():
            subprocess.run([tpl, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_tpl()
    out = peer()
    tpl_times, peer_times = [], []
    for _ in range(runs):
        start = time.perf_counter()
        run_tpl()
        tpl_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        out = peer()
        peer_times.append(time.perf_counter() - start)
    ratio = statistics.median(t / p for t, p in zip(tpl_times, peer_times))
    return statistics.median(tpl_times), statistics.median(peer_times), ratio, out


def fastest_blas(f):
    """f, run with numpy's BLAS on all cores or on one, whichever ran faster in a trial of
    each: a description of the choice, and f under it."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return "its default threads (threadpoolctl not installed)", f

    def on_one():
        with threadpool_limits(limits=1, user_api="blas"):
            return f()

    trial = []
    for g in (f, on_one, f, on_one):
        start = time.perf_counter()
        g()
        trial.append(time.perf_counter() - start)
    if min(trial[1], trial[3]) < min(trial[0], trial[2]):
        return "one core", on_one
    return "all cores", f


def dense_matrix(n, seed):
    """A random dense row-stochastic n x n matrix."""
    rows = np.random.default_rng(seed).random((n, n))
    return rows / rows.sum(axis=1, keepdims=True)


def write_matrix(path, m):
    """A matrix file tpl reads: one row per line, shortest round-trip decimals."""
    with open(path, "w") as f:
        for row in m:
            f.write(",".join(repr(float(v)) for v in row) + "\n")


def read_matrix(path):
    return np.loadtxt(path, delimiter=",", comments="#", ndmin=2)


def loss_numpy(p, alpha, block=20):
    """Exact L(alpha) = max over ordered pairs (q, d) of rows and subsets S of cells of
    log((1 + x q_S) / (1 + x d_S)), x = e^alpha - 1, for every pair the best S being a
    prefix of the cells with q_i > d_i sorted by q_i/d_i decreasing. Vectorised over all d
    and `block` rows q at a time."""
    n = p.shape[0]
    x = np.expm1(alpha)
    best_value = 0.0
    for start in range(0, n, block):
        q = p[start:start + block, None, :]  # (b, 1, n)
        d = p[None, :, :]  # (1, n, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q > d, q / d, -np.inf)  # (b, n, n); d = 0 < q gives inf
        order = np.argsort(-ratio, axis=2, kind="stable")
        gain = np.take_along_axis(np.broadcast_to(q - d, ratio.shape), order, axis=2)
        base = np.take_along_axis(np.broadcast_to(d, ratio.shape), order, axis=2)
        kept = np.take_along_axis(ratio, order, axis=2) > -np.inf
        delta = np.cumsum(np.where(kept, gain, 0.0), axis=2)
        d_s = np.cumsum(np.where(kept, base, 0.0), axis=2)
        values = np.where(kept, np.log1p(x * delta / (1.0 + x * d_s)), 0.0)
        best_value = max(best_value, float(values.max()))
    return best_value


def propagate_numpy(m, steps):
    """The prior moved through the matrix at every step: p <- p @ P, T times."""
    p = np.full(m.shape[0], 1.0 / m.shape[0])
    for _ in range(steps):
        p = p @ m
    return p


def row(name, figures, peer, note=""):
    """One line of the table; `figures` is what paired() returned, or a tpl time alone."""
    if isinstance(figures, tuple):
        tpl_s, peer_s, ratio, _ = figures
        peer_ms, ratio = f"{peer_s * 1e3:.1f}", f"{ratio:.3g}"
    else:
        tpl_s, peer_ms, ratio = figures, "—", "—"
    print(f"| {name} | {tpl_s * 1e3:.1f} | {peer} | {peer_ms} | {ratio} | {note} |", flush=True)


def version(package):
    """The installed version of a Python package, or '?'."""
    try:
        from importlib.metadata import version as installed

        return installed(package)
    except Exception:
        return "?"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tpl", default=os.path.join(root, "target", "release", "tpl"),
                        help="the tpl binary (default: target/release/tpl of this repository)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each figure (default 5)")
    args = parser.parse_args()
    tpl = os.path.abspath(args.tpl)
    if not os.access(tpl, os.X_OK):
        sys.exit(f"no tpl binary at {tpl}: build it with cargo build --release, or give --tpl")
    work = tempfile.mkdtemp(prefix="tpl-peers-")
    try:
        run_all(tpl, args.runs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(tpl, runs, work):
    cpu = "?"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    tpl_version = subprocess.run([tpl, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"machine: {cpu}, {os.cpu_count()} cores; numpy {np.__version__}; {tpl_version} ({tpl})")
    print(f"each figure: the median of {runs} runs, tpl and the peer in turn; tpl/peer: the median of the "
          "paired ratios\n")
    print("| workload | tpl, whole process, ms | peer | peer, computation alone, ms | tpl/peer | note |")
    print("| --- | ---: | --- | ---: | ---: | --- |")

    # 1. Cold L(alpha), dense n = 200.
    path200 = os.path.join(work, "dense200.csv")
    write_matrix(path200, dense_matrix(200, 1))
    m200 = read_matrix(path200)  # the values tpl reads
    out = subprocess.run([tpl, "loss", "--matrix", path200, "--alpha", str(ALPHA), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    tpl_value = float(out.split('"loss":[')[1].split("]")[0])
    figures = paired(tpl, ["loss", "--matrix", path200, "--alpha", str(ALPHA)], runs,
                     lambda: loss_numpy(m200, ALPHA))
    value = figures[3]
    agree = abs(value - tpl_value) <= 1e-12 * max(1.0, abs(tpl_value))
    row("cold L(α), dense n = 200, α = 0.1 (`tpl loss`)", figures, "numpy, exact, vectorised",
        f"same value: {'yes' if agree else 'NO'} ({tpl_value!r} / {value!r})")

    # 2. MAP post-processing, n = 1000 cells, T = 2000 steps, Laplacian-smoothed estimated matrix.
    sim = os.path.join(work, "sim")
    quiet = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run([tpl, "simulate", "--cells", "1000", "--smoothing", "0.0001", "--users", "5000",
                    "--horizon", "2000", "--seed", "1", "--out", sim], **quiet)
    releases = os.path.join(work, "releases.csv")
    with open(releases, "w") as f:
        subprocess.run([tpl, "release", "--counts", os.path.join(sim, "counts.csv"), "--scheme", "laplace",
                        "--epsilon", "1", "--window", "1", "--seed", "1", "--format", "csv"],
                       check=True, stdout=f, stderr=subprocess.DEVNULL)
    # Two matrices `tpl estimate --smoothing 0.01` gives: from the first move of every user
    # (5000 moves, about 5 a row: the smoothing floor plus sparse excesses, the structure the
    # filter propagates in O(n + nnz)), and from all 10^7 moves (excesses nearly everywhere:
    # the dense product).
    try:
        import warnings

        import temporal_privacy as tp

        warnings.filterwarnings("ignore", category=UserWarning)  # the estimator's notes on stderr in tpl
        noisy = np.ascontiguousarray(np.loadtxt(releases, delimiter=",", comments="#", skiprows=2)[:, 4:])
    except ImportError:
        tp = None
        print("| … `temporal_privacy.postprocess` | — | not installed (pip install ./tpl-py) | — | — | "
              "not measured |")
    for label, extra in [("sparse excesses: estimated from steps ..2", ["--steps", "..2"]),
                         ("dense: estimated from every step", [])]:
        est = os.path.join(work, "est-" + ("sparse" if extra else "dense"))
        subprocess.run([tpl, "estimate", "--stream", os.path.join(sim, "stream.csv"), "--cells", "1000",
                        "--smoothing", "0.01", "--out", est, *extra], **quiet)
        forward = os.path.join(est, "transition_forward.csv")
        m1000 = read_matrix(forward)
        # numpy's BLAS may run the products on every core or on one: the faster, which on a
        # busy machine is often one (threads that wait by spinning lose their cores).
        threads, propagate = fastest_blas(lambda: propagate_numpy(m1000, 2000))
        figures = paired(tpl, ["postprocess", "--releases", releases, "--total", "5000", "--forward", forward,
                               "--format", "csv"], runs, propagate)
        row(f"MAP post-processing (`tpl postprocess`), n = 1000, T = 2000, Laplacian-smoothed matrix, {label}",
            figures, f"numpy, the dense prior propagation p ← p·P alone (BLAS on {threads})",
            "the peer does only the products")
        if tp is not None:
            # The same estimate through the Python package: arrays in memory, as the peer.
            figures = paired(tpl, lambda: tp.postprocess(noisy, total=5000, epsilon=1.0, forward=m1000), runs,
                             propagate)
            row(f"… the same through `temporal_privacy.postprocess`, arrays in memory ({label})", figures,
                f"numpy, the same loop (BLAS on {threads})", "no files on either side")

    # 3. Laplace noise on 10^6 counts.
    counts = np.random.default_rng(2).integers(0, 1000, size=(10_000, 100))
    counts_path = os.path.join(work, "counts.csv")
    with open(counts_path, "w") as f:
        f.write("timestamp_bucket," + ",".join(f"c{i}" for i in range(100)) + "\n")
        for t, step in enumerate(counts):
            f.write(f"{t}," + ",".join(map(str, step)) + "\n")
    release = ["release", "--counts", counts_path, "--scheme", "laplace", "--epsilon", "0.1", "--window", "1",
               "--format", "csv"]
    flat = counts.ravel()
    rng = np.random.default_rng()
    figures = paired(tpl, release, runs, lambda: flat + rng.laplace(0.0, SCALE, flat.size))
    row("exact discrete Laplace, 10⁶ counts, b = 20 (`tpl release --scheme laplace`, 10⁴ steps × 100 cells)",
        figures, "numpy float Laplace (not release-grade)", "the insecure floor")
    try:
        import opendp.prelude as dp
    except ImportError:
        tpl_s = figures[0]
        row("… the same", tpl_s, "OpenDP: not installed (pip install opendp failed or was skipped)", "not measured")
        return
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=SCALE)
    values = flat.tolist()
    figures = paired(tpl, release, min(runs, 3), lambda: meas(values))
    row("… the same", figures, f"OpenDP {version('opendp')} `make_laplace`, integer vector",
        "exact, release-grade")


if __name__ == "__main__":
    main()
