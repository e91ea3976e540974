"""Heavy calls release the GIL: other Python threads keep running while one is under way.

The measure is an order of events, not a speed: while a worker thread runs the call, the
main thread and a partner thread play ROUNDS of ping-pong through ``threading.Event``s,
each round needing the GIL in both threads. If the call releases the GIL, the rounds end
while it still runs; if it holds the GIL, no round can be played until it returns. The
switch interval is raised for the measure, so that the interpreter never takes the GIL from
a thread by the clock: a thread gives it up only by blocking or in a call that releases it,
and the order observed does not depend on the machine's speed."""

from __future__ import annotations

import re
import sys
import threading

import numpy as np

import temporal_privacy as tp

ROUNDS = 50


def _rounds_end_during(call, times: int = 1) -> bool:
    """Whether ROUNDS ping-pongs between two other threads end while `call()` (run `times`
    times in a row by a worker thread) is still under way."""
    entered, returned = threading.Event(), threading.Event()
    ping, pong = threading.Event(), threading.Event()

    def work():
        entered.set()
        for _ in range(times):
            call()
        returned.set()

    def partner():
        for _ in range(ROUNDS):
            ping.wait()
            ping.clear()
            pong.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        p = threading.Thread(target=partner)
        w = threading.Thread(target=work)
        p.start()
        w.start()
        entered.wait()
        for _ in range(ROUNDS):
            ping.set()
            pong.wait()
            pong.clear()
        during = not returned.is_set()
        w.join()
        p.join()
    finally:
        sys.setswitchinterval(interval)
    return during


def test_the_measure_tells_a_call_that_holds_the_gil():
    # The regular-expression engine keeps the GIL while it backtracks: no round is played
    # until it returns.
    assert not _rounds_end_during(lambda: re.match(r"(a+)+$", "a" * 22 + "b"))


def test_a_long_loss_computation_lets_other_threads_run():
    P = tp.normalize(np.random.default_rng(1).random((260, 260)))
    assert _rounds_end_during(lambda: tp.loss(P, [0.5, 1.0]), times=5)


def test_a_long_leakage_series_lets_other_threads_run():
    P = tp.smooth(np.eye(50), 0.01)
    assert _rounds_end_during(lambda: tp.leakage(backward=P, forward=P, epsilon=0.1, horizon=3_000_000))


def test_a_comparison_lets_other_threads_run():
    P = tp.smooth(np.eye(20), 0.05)
    counts = np.full((1000, 20), 50)
    assert _rounds_end_during(
        lambda: tp.compare(
            counts, backward=P, forward=P, epsilon=1, window=10, runs=6, schemes=["bd", "window"], postprocess="map"
        )
    )
