"""Stream files read through tpl-io, the reader of the command line: read_stream, estimate of
a path (against the CLI's JSON and the array form), the errors, and the memory bound of the
counting reader."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import temporal_privacy as tp
from conftest import AIS, same_bits

HEADER = "timestamp_bucket,user_id,location_cell\n"


@pytest.fixture(scope="module")
def ais_stream(repo_data):
    return np.loadtxt(AIS / "stream.csv", delimiter=",", skiprows=1, dtype=np.uint64)


@pytest.mark.parametrize("smoothing,steps,cells", [(None, None, None), (0.01, "..972", None), (None, "973..", 64)])
def test_estimate_of_a_path_is_the_cli_and_the_array_form(repo_data, cli, tmp_path, ais_stream, smoothing, steps, cells):
    path = AIS / "stream.csv"
    extra = [] if smoothing is None else ["--smoothing", str(smoothing)]
    extra += [] if steps is None else ["--steps", steps]
    extra += [] if cells is None else ["--cells", str(cells)]
    expected, _ = cli("estimate", "--stream", path, "--out", tmp_path, *extra)
    got = tp.estimate(path, smoothing, steps=steps, cells=cells)
    array = tp.estimate(ais_stream, smoothing, steps=steps, cells=cells)
    assert got.histogram is None and "histogram" not in got.to_dict()
    for key in ["cells", "users", "horizon", "transitions", "smoothing", "forward_identity_rows"]:
        assert got[key] == expected[key] == array[key], key
    assert list(got.steps) == expected["steps"] and got.cell_ids.tolist() == expected["cell_ids"]
    for key in ["forward", "backward", "counts"]:
        assert same_bits(got[key], array[key]), key
    # A str path and a records file in another order give the same estimate.
    shuffled = tmp_path / "shuffled.csv"
    rows = ais_stream[np.random.default_rng(3).permutation(len(ais_stream))]
    np.savetxt(shuffled, rows, fmt="%d", delimiter=",", header=HEADER.strip(), comments="")
    again = tp.estimate(str(shuffled), smoothing, steps=steps, cells=cells)
    assert all(same_bits(again[k], got[k]) for k in ["forward", "backward", "counts"])


def test_read_stream_gives_the_states_of_the_array_form(repo_data, tmp_path, ais_stream):
    s = tp.read_stream(AIS / "stream.csv")
    e = tp.estimate(ais_stream)
    assert s.states.shape == (e.horizon, e.users) and s.states.dtype == np.int64
    assert s.cell_ids.tolist() == e.cell_ids.tolist() and s.cell_ids.dtype == np.uint64
    # The states count the histogram of the stream.
    histogram = np.stack([np.bincount(row, minlength=len(s.cell_ids)) for row in s.states])
    assert np.array_equal(histogram, e.histogram)
    assert (s.users, s.horizon) == (e.users, e.horizon)
    path = tmp_path / "s.csv"
    path.write_text(HEADER + "10,7,30\n10,8,5\n15,7,30\n15,8,30\n")
    t = tp.read_stream(path)
    assert t.states.tolist() == [[1, 0], [1, 1]] and t.cell_ids.tolist() == [5, 30]
    assert (t.first_bucket, t.bucket_spacing, t.users, t.horizon) == (10, 5, 2, 2)


@pytest.mark.parametrize(
    "text,message",
    [
        ("0,0,1\n0,0,1\n1,0,0\n", r"^stream: .*s\.csv:3: user 0 appears twice in bucket 0$"),
        ("0,0,1\n1,0,1\n3,0,1\n", r"^stream: .*s\.csv: buckets have a gap: bucket 2 never appears"),
        ("0,0,1\n0,2,1\n1,0,1\n", r"^stream: .*s\.csv: user 2 never appears in bucket 1"),
        ("0,0,-1\n", r"^stream: .*s\.csv:2: column 3 \(location_cell\): \"-1\" is not a whole number"),
        ("", r"^stream: .*s\.csv: no data rows \(empty stream\)$"),
    ],
)
def test_both_readers_name_the_file_line_and_value_as_the_cli(tmp_path, text, message):
    path = tmp_path / "s.csv"
    path.write_text(HEADER + text)
    for read in [tp.read_stream, tp.estimate]:
        with pytest.raises(tp.TplError, match=message):
            read(path)


def test_a_path_that_is_not_a_file_or_takes_columns_is_refused(tmp_path):
    with pytest.raises(tp.TplError, match=r"^stream: .*missing\.csv: cannot read"):
        tp.estimate(tmp_path / "missing.csv")
    with pytest.raises(tp.TplError, match="no user= or cell="):
        tp.estimate(str(tmp_path / "s.csv"), user=[0], cell=[0])
    with pytest.raises(tp.TplError, match="a file path"):
        tp.read_stream(3)


# How much a call raises the peak resident memory of a fresh interpreter that has already
# imported the package: the peak (VmHWM) is reset to the current size first (Linux's
# /proc/self/clear_refs), so what the imports touched before cannot hide the call's use.
_PEAK = textwrap.dedent(
    """
    import sys
    import temporal_privacy as tp
    def status(key):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status("VmRSS")
    result = getattr(tp, sys.argv[1])(sys.argv[2])
    print(status("VmHWM") - before, result.users, result.horizon)
    """
)


def _peak_growth(function: str, path) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", _PEAK, function, str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    kib, users, horizon = map(int, out.stdout.split())
    return kib * 1024, users, horizon


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the peak memory is read from Linux's /proc")
def test_estimate_of_a_path_reads_a_large_stream_in_bounded_memory(tmp_path):
    # 20 000 people over 300 buckets in 8 cells: 6·10⁶ rows, about 70 MB of text.
    users, buckets = 20_000, 300
    rng = np.random.default_rng(7)
    path = tmp_path / "large.csv"
    ids = [str(u) for u in range(users)]
    with open(path, "w") as f:
        f.write(HEADER)
        cells = rng.integers(0, 8, users)
        for t in range(buckets):
            moved = rng.random(users) < 0.1
            cells[moved] = rng.integers(0, 8, int(moved.sum()))
            f.write("".join(f"{t},{u},{c}\n" for u, c in zip(ids, cells.tolist())))
    size = path.stat().st_size
    assert size > 60e6
    grown, got_users, horizon = _peak_growth("estimate", path)
    assert (got_users, horizon) == (users, buckets)
    # The counting reader holds a few numbers per person and per bucket: far below the file.
    assert grown < size / 8, f"estimate(path) grew the peak memory by {grown / 1e6:.1f} MB for a {size / 1e6:.0f} MB file"
    # The control: reading the same file whole grows it by more than the file's size, so
    # the measure above would catch a reader that loads the file.
    whole, _, _ = _peak_growth("read_stream", path)
    assert whole > size, f"read_stream grew the peak memory by {whole / 1e6:.1f} MB only"
    print(f"file {size / 1e6:.1f} MB: estimate(path) +{grown / 1e6:.1f} MB, read_stream +{whole / 1e6:.1f} MB")
