"""Heavy calls release the GIL: a Python thread keeps running while one is under way."""

from __future__ import annotations

import threading
import time

import numpy as np

import temporal_privacy as tp


def _progress_during(call) -> tuple[int, float]:
    """How many times a Python thread looped while `call()` ran, and how long it ran."""
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
    return after - before, elapsed


def test_a_long_loss_computation_lets_another_thread_run():
    rng = np.random.default_rng(1)
    P = rng.random((260, 260))
    P /= P.sum(axis=1, keepdims=True)
    P = tp.normalize(P)
    loops, elapsed = _progress_during(lambda: tp.loss(P, [0.5, 1.0]))
    # Holding the GIL, the thread would not loop at all during the call (the interpreter
    # only switches threads between bytecodes); detached, it loops millions of times a second.
    assert elapsed > 0.05, "the call was too short to tell"
    assert loops > 10_000, (loops, elapsed)


def test_a_long_leakage_series_lets_another_thread_run():
    P = tp.smooth(np.eye(50), 0.01)
    loops, elapsed = _progress_during(lambda: tp.leakage(backward=P, forward=P, epsilon=0.1, horizon=3_000_000))
    assert elapsed > 0.05, "the call was too short to tell"
    assert loops > 10_000, (loops, elapsed)
