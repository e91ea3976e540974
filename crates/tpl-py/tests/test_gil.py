"""Heavy calls release the GIL: a Python thread keeps running at full speed while one is
under way. The measure: how fast a spinning thread loops during the call, against how fast
it loops while the main thread sleeps (the GIL released for certain)."""

from __future__ import annotations

import re
import threading
import time

import numpy as np

import temporal_privacy as tp


def _rate_during(call) -> tuple[float, float]:
    """Loops per second of a spinning Python thread while `call()` runs, and its duration."""
    count = 0
    stop = threading.Event()
    started = threading.Event()

    def spin():
        nonlocal count
        started.set()
        while not stop.is_set():
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    started.wait()
    time.sleep(0.01)
    before = count
    t0 = time.perf_counter()
    call()
    elapsed = time.perf_counter() - t0
    after = count
    stop.set()
    t.join()
    return (after - before) / elapsed, elapsed


def _repeated(call, seconds: float):
    """`call` run again and again until `seconds` have passed (at least once), so that a fast
    machine still measures long enough to tell."""

    def run():
        t0 = time.perf_counter()
        call()
        while time.perf_counter() - t0 < seconds:
            call()

    return run


def _share_of_free_rate(call) -> float:
    """The thread's speed during `call()` as a share of its speed while the main thread sleeps."""
    free, _ = _rate_during(lambda: time.sleep(0.3))
    rate, elapsed = _rate_during(_repeated(call, 0.3))
    assert elapsed >= 0.3
    return rate / free


def test_the_measure_tells_a_call_that_holds_the_gil():
    # The regular-expression engine keeps the GIL while it backtracks: the thread crawls.
    assert _share_of_free_rate(lambda: re.match(r"(a+)+$", "a" * 22 + "b")) < 0.25


def test_a_long_loss_computation_lets_another_thread_run():
    P = tp.normalize(np.random.default_rng(1).random((260, 260)))
    assert _share_of_free_rate(lambda: tp.loss(P, [0.5, 1.0])) > 0.25


def test_a_long_leakage_series_lets_another_thread_run():
    P = tp.smooth(np.eye(50), 0.01)
    share = _share_of_free_rate(lambda: tp.leakage(backward=P, forward=P, epsilon=0.1, horizon=3_000_000))
    assert share > 0.25


def test_a_comparison_lets_another_thread_run():
    P = tp.smooth(np.eye(20), 0.05)
    counts = np.full((4000, 20), 50)
    share = _share_of_free_rate(
        lambda: tp.compare(
            counts, backward=P, forward=P, epsilon=1, window=10, runs=6, schemes=["bd", "window"], postprocess="map"
        )
    )
    # The runs go in parallel on every core, so the thread shares them: a lower bar, still
    # far above a call that holds the GIL.
    assert share > 0.1
