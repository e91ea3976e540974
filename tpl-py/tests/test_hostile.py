"""Hostile inputs through the package: every bad input of the command line's tables of bad
inputs — ``tpl-cli/tests/formats.rs`` (``bad_files``: matrix and budget files),
``inputs.rs``, ``npy.rs``, ``typed_values.rs``, ``sparse.rs``, the
``bad_inputs_exit_2_with_one_line`` tables of ``allocate.rs``, ``compare.rs``, ``release.rs``
and ``postprocess.rs``, and ``stream.rs``'s files that are not streams — passed to every
function of ``temporal_privacy`` that takes the same thing.

Each case must raise a ``TplError`` (or a subclass) — never pyo3's ``PanicException``, a
``TypeError`` or a ``SystemError`` — with a one-line message that names the argument at
fault and holds the key words of the command line's message for the same input: the binary
(``TPL_BIN``) is run on the same file, on the same array saved as ``.npy`` (or written as the
file the CLI table used), or with the same value typed, and both messages are checked for
the case's words. And nothing may be written: the working folder (empty) and the folder of
the inputs, every file's bytes included, are the same before and after each call.

Where the package and the command line differ by design — Python has types the command line
has not (``True``, ``"0.1"``, ``None``), Python reads ``1e400`` as ``inf`` before the package
sees it, arrays of booleans are refused (docs/python.md §2) where a ``.npy`` of ``b1`` is read
as 0/1 — the case says so in its ``note`` and checks the package's own words instead.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import warnings
from pathlib import Path
from typing import Any, Callable, get_args

import numpy as np
import pytest

import temporal_privacy as tp

P2 = [[0.8, 0.2], [0.2, 0.8]]
COUNTS = [[3, 4], [4, 3], [5, 2]]
STREAM_HEADER = "timestamp_bucket,user_id,location_cell\n"


# ---------------------------------------------------------------------------------------
# The harness: refusals, the CLI's messages, and folders that must not change.


def stream_init(db, scheme, epsilon, window, *rest) -> list:
    """The arguments of `tpl stream init`: the file, the scheme, ε and w, then `rest`."""
    return ["stream", "init", "--db", db, "--scheme", scheme, "--epsilon", epsilon, "--window", window, *rest]


def snapshot(folder: Path) -> dict:
    """Every file and folder under ``folder``, with each file's bytes (as a digest)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder)] = "<dir>"
        for f in files:
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(autouse=True)
def empty_working_folder(tmp_path, monkeypatch):
    """Every test runs in an empty working folder, which must still be empty at its end."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    assert sorted(os.listdir(cwd)) == [], "nothing may be written in the working folder"


def refused(call: Callable[[], Any], *folders: Path, error: type = tp.TplError) -> str:
    """The message of the ``error`` (a TplError) that ``call()`` raises, checking that it is
    one line and that neither ``folders`` nor the working folder changed."""
    watched = [Path.cwd(), *folders]
    before = [snapshot(f) for f in watched]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except tp.TplError as e:
            caught = e
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # pyo3's PanicException derives from BaseException
            pytest.fail(f"{type(e).__module__}.{type(e).__qualname__} instead of a TplError: {e}")
        else:
            pytest.fail("the input was accepted")
    assert isinstance(caught, error), f"{type(caught).__name__} instead of {error.__name__}: {caught}"
    for folder, was in zip(watched, before):
        assert snapshot(folder) == was, f"{folder} changed: nothing may be written"
    message = str(caught)
    assert message and "\n" not in message, repr(message)
    return message


def has(text: str, key: str) -> bool:
    """Whether ``text`` holds ``key``: a number (or NaN, inf) as a whole token, so that "0"
    is not found in "0.5"; anything else as a substring."""
    if re.fullmatch(r"[-+]?(\d[\d.]*(e[-+]?\d+)?|NaN|inf)", key):
        tokens = re.split(r"[^0-9A-Za-z.+\-]", text)
        return any(t == key or t.rstrip(".") == key for t in tokens)
    return key in text


def check_words(message: str, words, who: str) -> None:
    for w in words:
        assert has(message, w), f"the {who} message should hold {w!r}: {message}"


@pytest.fixture(scope="module")
def cli(tpl_bin, tmp_path_factory):
    """cli(*args) runs `tpl ARGS` (in a folder of its own, standard input empty), checks
    that it refuses them with exit 2 and nothing on standard output, and returns the first
    line of its message without `tpl: error: `."""
    folder = tmp_path_factory.mktemp("cli-cwd")

    def run(*args: Any) -> str:
        out = subprocess.run(
            [str(tpl_bin), *map(str, args)],
            cwd=folder,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        assert out.returncode == 2, f"tpl {' '.join(map(str, args))}: exit {out.returncode}\n{out.stderr}"
        assert out.stdout == "", out.stdout
        line = out.stderr.strip().splitlines()[0]
        assert line.startswith("tpl: error: "), out.stderr
        return line[len("tpl: error: ") :]

    return run


def npy_bytes(a: np.ndarray) -> bytes:
    """The bytes numpy.save writes for ``a`` (objects pickled)."""
    import io

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()


def write(folder: Path, name: str, content) -> Path:
    path = folder / name
    if isinstance(content, np.ndarray):
        path.write_bytes(npy_bytes(content))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


# ---------------------------------------------------------------------------------------
# Matrix files (formats.rs bad_matrix_*, EMPTY_MATRICES, tolerance and --normalize;
# inputs.rs, typed_values.rs, sparse.rs, formats.md §12 for .npy): every function that reads
# a matrix file reads it through the CLI's reader (tpl-io), so the CLI's whole message —
# file, line, column, value, reason — is in the package's, after the argument's name.

F8 = np.array([[0.8, 0.2], [0.2, 0.8]])
_F8_BYTES = npy_bytes(F8)

MATRIX_FILES = [
    # formats.rs EMPTY_MATRICES
    ("empty.csv", ""),
    ("comments.csv", "# nothing but comments\n\n   # and blanks\n\n"),
    ("empty.json", "[]"),
    ("blank.json", ""),
    # formats.rs bad_matrix_shape
    ("nonsquare.csv", "0.5,0.5\n0.5,0.5\n0.5,0.5\n"),
    ("wide.csv", "0.2 0.3 0.5\n0.2 0.3 0.5\n"),
    ("ragged.csv", "# ragged\n0.5,0.5\n\n1\n"),
    ("ragged.json", "[[0.5,0.5],[1]]"),
    ("nonsquare.json", "[[0.5,0.5]]"),
    ("empty_rows.json", "[[],[]]"),
    # formats.rs bad_matrix_entries
    ("nan.csv", "# header\n0.5,0.5\n\nNaN,0.5\n"),
    ("inf.csv", "0.5 0.5\ninf 0\n"),
    ("big.csv", "1e400 0\n0.5 0.5\n"),
    ("neg.csv", "0.5,0.5\n1.5,-0.5\n"),
    ("sum.csv", "0.5,0.5\n\n0.5,0.4\n"),
    ("token.csv", "0.5,0.5\n0.5,abc\n"),
    ("empty_field.csv", "0.5,0.5\n0.5,,0.5\n"),
    ("trailing.csv", "0.5,0.5,\n0.5,0.5\n"),
    ("neg.json", "[[0.5,0.5],[1.5,-0.5]]"),
    ("sum.json", "[[0.5,0.5],[0.5,0.4]]"),
    ("semicolon.csv", "0.5;0.5\n0.5;0.5\n"),
    ("latin1.csv", b"0.5,0.5\n0.5,0.5 \xe9\n"),
    # formats.rs bad_matrix_malformed_json
    ("unclosed.json", "[[0.5,0.5],[0.5,0.5]"),
    ("string.json", '[[0.5,0.5],[0.5,"x"]]'),
    ("null.json", "null"),
    ("object.json", '{"rows":[[1]]}'),
    ("flat.json", "[0.5,0.5]"),
    ("trailing.json", "[[1]] extra"),
    ("nan.json", "[[NaN,1],[0.5,0.5]]"),
    ("csv_in_json.json", "0.5,0.5\n0.5,0.5\n"),
    ("multi.json", "[\n  [0.5, 0.5],\n  [0.5, oops]\n]\n"),
    # formats.rs matrix_row_sum_tolerance_is_1e_9, matrix_normalize_rescales_rows (no --normalize)
    ("tolerance.csv", "0.500000002 0.5\n0.5 0.5\n"),
    ("counts.csv", "# transition counts\n1, 2, 7\n0.3 0.3 0.4\n\n2 1.2 0.8\n"),
    ("counts.json", "[[1,2,7],[0.3,0.3,0.4],[2,1.2,0.8]]"),
    # inputs.rs numbers_beyond_a_double_are_refused_as_typed; typed_values.rs truncated JSON
    ("big2.csv", "0.9,0.1\n1e400,0.8\n"),
    ("truncated.json", "[[0.9,0.1],\n"),
    # sparse.rs a_bad_sparse_file_names_its_line, and two more a sparse reader must refuse
    ("sparse_twice.csv", "from,to,p\n0,0,1\n1,1,1\n1,1,0.5\n"),
    ("sparse_gap.csv", "from,to,p\n0,0,1\n2,2,1\n"),
    ("sparse_negative.csv", "from,to,p\n0,0,1.5\n0,1,-0.5\n1,1,1\n"),
    ("sparse_word.csv", "from,to,p\n0,0,1\n1,x,1\n"),
    # .npy (formats.md §12; npy.rs): not .npy, truncated, bad headers, refused types, shapes
    ("magic.npy", b"not numpy at all"),
    ("empty_file.npy", b""),
    ("truncated_data.npy", _F8_BYTES[:-5]),
    ("truncated_header.npy", _F8_BYTES[:20]),
    ("version9.npy", _F8_BYTES[:6] + b"\x09\x00" + _F8_BYTES[8:]),
    ("unknown_key.npy", _F8_BYTES.replace(b"'descr'", b"'dxxxx'")),
    ("complex.npy", F8.astype(complex)),
    ("object.npy", F8.astype(object)),
    ("strings.npy", np.array([["a", "b"], ["c", "d"]])),
    ("dates.npy", np.zeros((2, 2), dtype="datetime64[s]")),
    ("float16.npy", F8.astype(np.float16)),
    ("threed.npy", np.ones((2, 2, 2)) / 2),
    ("empty_shape.npy", np.empty((2, 0))),
    ("oned.npy", np.array([0.5, 0.5])),
    ("inexact_int.npy", np.array([[2**53 + 1, 0], [0, 1]], dtype=np.int64)),
    ("uint64_max.npy", np.array([[2**64 - 1, 0], [0, 1]], dtype=np.uint64)),
    ("nan.npy", np.array([[np.nan, 1.0], [0.5, 0.5]])),
    ("neg.npy", np.array([[1.5, -0.5], [0.5, 0.5]])),
    ("sum.npy", np.array([[0.5, 0.4], [0.5, 0.5]])),
    ("nonsquare.npy", np.ones((2, 3)) / 3),
    # formats.rs bad_matrix_missing_unreadable_and_empty_files
    ("does-not-exist.csv", None),
    ("a-folder", "<dir>"),
]


@pytest.fixture(scope="module")
def matrix_files(tmp_path_factory, cli):
    """The matrix files, written once, with the CLI's message for each (`tpl loss --matrix
    FILE --alpha 1`)."""
    folder = tmp_path_factory.mktemp("matrix-files")
    paths, messages = {}, {}
    for name, content in MATRIX_FILES:
        path = folder / name
        if isinstance(content, str) and content == "<dir>":
            path.mkdir()
        elif content is not None:
            write(folder, name, content)
        paths[name] = path
        messages[name] = cli("loss", "--matrix", path, "--alpha", "1")
    return folder, paths, messages


# (id, call with the matrix argument m, the argument the message must start with)
MATRIX_READERS = [
    ("loss", lambda m: tp.loss(m, 1.0), "P"),
    ("supremum", lambda m: tp.supremum(m, 0.1), "P"),
    ("leakage-backward", lambda m: tp.leakage(backward=m, epsilon=0.1, horizon=3), "backward"),
    ("leakage-forward", lambda m: tp.leakage(forward=m, epsilon=0.1, horizon=3), "forward"),
    ("allocate", lambda m: tp.allocate("upper-bound", backward=m, alpha=1.0, horizon=3), "backward"),
    ("release-pba", lambda m: tp.release([[1, 2], [3, 4]], "pba", 1.0, 2, backward=m, seed=1), "backward"),
    ("postprocess", lambda m: tp.postprocess([[1.0, 2.0], [2.0, 1.0]], 3, epsilon=1.0, forward=m), "forward"),
    ("compare", lambda m: tp.compare([[1, 2], [3, 4]], forward=m, epsilon=1, window=1, runs=1), "forward"),
    # A stream in the working folder, which must stay empty: a failed create writes nothing.
    ("stream-create", lambda m: tp.Stream.create("s.db", "pba", 1.0, 2, backward=m), "backward"),
    ("MatrixFile", lambda m: tp.loss(tp.MatrixFile(m, smoothing=0.01), 1.0), "P"),
]


@pytest.mark.parametrize("reader", MATRIX_READERS, ids=[r[0] for r in MATRIX_READERS])
@pytest.mark.parametrize("name", [f[0] for f in MATRIX_FILES])
def test_a_bad_matrix_file_gets_the_cli_message_from_every_reader(matrix_files, name, reader):
    folder, paths, messages = matrix_files
    _, call, argument = reader
    message = refused(lambda: call(str(paths[name])), folder)
    assert message.startswith(f"{argument}: "), message
    # The same reader: the CLI's message (file, line, column, value, reason) whole.
    assert messages[name] in message, f"CLI: {messages[name]}\npackage: {message}"


def test_reading_options_of_a_matrix_file_are_refused_as_the_flags_are(tmp_path, cli):
    # formats.rs: a row of zeros cannot be normalised; --smoothing -1 is refused.
    zero = write(tmp_path, "zero.csv", "1 1\n0 0\n")
    want = cli("loss", "--matrix", zero, "--alpha", "1", "--normalize")
    got = refused(lambda: tp.loss(tp.MatrixFile(zero, normalize=True), 1.0), tmp_path)
    assert got.startswith("P: ") and want in got, (want, got)
    good = write(tmp_path, "good.csv", "0.8 0.2\n0.2 0.8\n")
    want = cli("loss", "--matrix", good, "--alpha", "1", "--smoothing", "-1")  # --smoothing: smoothing parameter …
    got = refused(lambda: tp.loss(tp.MatrixFile(good, smoothing=-1), 1.0), tmp_path)
    reason = want.split(": ", 1)[1]
    assert got.startswith("P smoothing: ") and reason in got, (want, got)
    # Options of the wrong type: the command line has no types; named by the argument.
    check_words(refused(lambda: tp.MatrixFile(good, normalize=1)), ["normalize", "True or False"], "package")
    check_words(refused(lambda: tp.MatrixFile(good, smoothing="0.1")), ["smoothing", "a number is needed"], "package")
    check_words(refused(lambda: tp.MatrixFile(3)), ["path", "str or os.PathLike"], "package")


# ---------------------------------------------------------------------------------------
# Matrices as arrays (the same faults as above, and the dtypes and shapes only arrays have):
# the CLI reads the same array saved as .npy (or the file of its CLI table), and both
# messages hold the case's words.

MATRIX_ARRAYS = [
    # (id, array, what the CLI reads (None: the array as .npy), words in both, words in the
    #  package's only, note)
    ("nan", lambda: [[np.nan, 1.0], [0.5, 0.5]], None, ["row 1, column 1 is NaN", "finite and non-negative"], [], ""),
    ("inf", lambda: [[np.inf, 0.0], [0.5, 0.5]], None, ["row 1, column 1 is inf"], [], ""),
    ("negative", lambda: [[0.5, 0.5], [1.5, -0.5]], None, ["row 2, column 2 is -0.5", "non-negative"], [], ""),
    ("row-sum", lambda: [[0.5, 0.5], [0.5, 0.4]], None, ["row 2 sums to 0.9, not 1", "tolerance 1e-9"], [], ""),
    ("huge-entries", lambda: [[1e308, 0.0], [0.0, 1.0]], None, ["row 1 sums to 1e308"], [], ""),
    ("tolerance", lambda: [[0.500000002, 0.5], [0.5, 0.5]], None, ["row 1 sums to 1.0000000020000002"], [], ""),
    ("non-square", lambda: np.ones((2, 3)) / 3, None, ["square"], ["(2, 3)"], ""),
    ("one-dimensional", lambda: [0.5, 0.5], None, ["shape"], ["2-D"], "the .npy reader says two-dimensional"),
    (
        "three-dimensional",
        lambda: np.ones((2, 2, 2)) / 2,
        None,
        [],
        ["2-D", "(2, 2, 2)"],
        "the .npy reader names the dimensions (3 dimensions), the package the shape",
    ),
    ("empty", lambda: np.empty((0, 0)), None, ["empty"], ["(0, 0)"], ""),
    ("empty-rows", lambda: np.empty((2, 0)), None, ["empty"], ["(2, 0)"], ""),
    ("ragged", lambda: [[0.5, 0.5], [1.0]], ("ragged.json", "[[0.5,0.5],[1]]"), ["ragged rows"], [], ""),
    (
        "int64-beyond-2^53",
        lambda: np.array([[2**53 + 1, 0], [0, 1]], dtype=np.int64),
        None,
        ["9007199254740993"],
        ["no exact double"],
        "",
    ),
    ("uint64-max", lambda: np.array([[2**64 - 1, 0], [0, 1]], dtype=np.uint64), None, ["18446744073709551615"], [], ""),
    (
        "python-int-beyond-64-bits",
        lambda: [[2**70, 0], [0, 1]],
        ("big.json", f"[[{2**70},0],[0,1]]"),
        [],
        ["beyond 64 bits", "1.18e21"],
        "JSON reads 2^70 as a double (then the row sum is refused); Python has the integer, too large for any dtype",
    ),
    (
        "complex",
        lambda: np.array(P2, dtype=complex),
        None,
        [],
        ["dtype complex128"],
        "the .npy reader names the type code <c16, the package numpy's name",
    ),
    ("strings", lambda: [["a", "b"], ["c", "d"]], None, ["<U1"], ["dtype"], ""),
    (
        "dates",
        lambda: np.zeros((2, 2), dtype="datetime64[s]"),
        None,
        [],
        ["dtype datetime64[s]"],
        "the .npy reader names the type code <M8[s]",
    ),
    (
        "objects-of-small-ints",
        lambda: np.array([[1, 0], [0, 1]], dtype=object),
        None,
        [],
        ["dtype object"],
        ".npy of objects is refused by type code |O; regression: the package blamed 'an integer beyond 64 bits'",
    ),
    ("objects-with-none", lambda: np.array([[0.5, 0.5], [0.5, None]], dtype=object), None, [], ["dtype object"], ""),
    (
        "booleans",
        lambda: np.eye(2, dtype=bool),
        "accepted",
        [],
        ["dtype bool"],
        "the .npy reader takes b1 as 0/1; arrays of booleans are refused (docs/python.md §2)",
    ),
    (
        "float32-row-sum",
        lambda: np.array([[0.5, 0.4], [0.5, 0.5]], dtype=np.float32),
        None,
        ["row 1 sums to"],
        ["precision of float32"],
        "a float32 array is held to its own precision, a .npy file to 1e-9",
    ),
    (
        "float16-nan",
        lambda: np.array([[np.nan, 1.0], [0.5, 0.5]], dtype=np.float16),
        ("nan16.npy", np.array([[np.nan, 1.0], [0.5, 0.5]])),
        ["row 1, column 1 is NaN"],
        [],
        "the CLI reads no f2: the same values as f8; regression: the package blamed the row sum",
    ),
    (
        "float32-negative",
        lambda: np.array([[1.5, -0.5], [0.5, 0.5]], dtype=np.float32),
        None,
        ["row 1, column 2 is -0.5"],
        [],
        "regression: the package blamed the row sum",
    ),
    (
        "masked",
        lambda: np.ma.masked_array(P2, mask=[[True, False], [False, False]]),
        "no-cli",
        [],
        ["masked"],
        "the command line has no masked values",
    ),
    ("scalar", lambda: 1.0, "no-cli", [], ["2-D", "shape ()"], "a number on the command line is a path"),
    ("bytes", lambda: b"p.csv", "no-cli", [], ["got a bytes"], "a path is a str or os.PathLike"),
]

ARRAY_READERS = [
    ("loss", lambda m: tp.loss(m, 1.0), "P"),
    ("leakage-forward", lambda m: tp.leakage(forward=m, budgets=[0.1, 0.2]), "forward"),
    ("smooth", lambda m: tp.smooth(m, 0.1), "P"),
]


@pytest.mark.parametrize("reader", ARRAY_READERS, ids=[r[0] for r in ARRAY_READERS])
@pytest.mark.parametrize("case", MATRIX_ARRAYS, ids=[c[0] for c in MATRIX_ARRAYS])
def test_a_bad_matrix_array_is_refused_with_the_cli_words(tmp_path, cli, case, reader):
    name, make, cli_input, both, own, note = case
    _, call, argument = reader
    message = refused(lambda: call(make()))
    assert message.startswith(f"{argument}: "), message
    check_words(message, both + own, "package")
    if cli_input in ("accepted", "no-cli"):
        return
    if cli_input is None:
        path = write(tmp_path, f"{name}.npy", np.asarray(make()))
    else:
        path = write(tmp_path, *cli_input)
    check_words(cli("loss", "--matrix", path, "--alpha", "1"), both, "CLI")
    if name == "objects-of-small-ints":
        assert "64 bits" not in message, message


# ---------------------------------------------------------------------------------------
# "-" as a path: the command line reads standard input for a matrix or stream file and
# refuses it for a stream (`--db -`); a Python call never reads the process's standard input
# (it would wait on a terminal, and the second call would fail with "already read for another
# file") and never writes a stream named "-" in the working folder.

DASH_CALLS = [
    ("loss", lambda: tp.loss("-", 1.0), "P"),
    ("leakage", lambda: tp.leakage(backward="-", epsilon=0.1, horizon=3), "backward"),
    ("MatrixFile", lambda: tp.loss(tp.MatrixFile("-"), 1.0), "P"),
    ("estimate", lambda: tp.estimate("-"), "stream"),
    ("read_stream", lambda: tp.read_stream("-"), "stream"),
    ("stream-create", lambda: tp.Stream.create("-", "bd", 1.0, 2), "path"),
    ("stream-open", lambda: tp.Stream.open("-"), "path"),
    ("stream-rekey", lambda: tp.Stream.rekey("-"), "path"),
    ("stream-key-file", lambda: tp.Stream.create("s.db", "bd", 1.0, 2, key_file="-"), "key_file"),
]


@pytest.mark.parametrize("call", DASH_CALLS, ids=[c[0] for c in DASH_CALLS])
def test_a_dash_is_never_standard_input_nor_a_file_in_the_working_folder(cli, call):
    _, f, argument = call
    message = refused(f)
    check_words(message, [f"{argument}: ", "standard input", "./-"], "package")
    if argument == "path":
        # The CLI's refusal of `--db -` says the same.
        check_words(
            cli("stream", "init", "--db", "-", "--scheme", "bd", "--epsilon", "1", "--window", "2"),
            ["standard input"],
            "CLI",
        )


# ---------------------------------------------------------------------------------------
# Budgets (formats.rs bad_budget_files, typed_values.rs, inputs.rs): the package takes arrays,
# the CLI files; the CLI reads the file of its table, the package the same values.

BUDGETS = [
    # (id, budgets, the CLI's file (name, content), value named by both, words in the
    #  leakage messages of both, note)
    (
        "negative",
        [0.1, -0.2],
        ("negative.txt", "0.1\n\n-0.2\n"),
        "-0.2",
        ["budget -0.2 must be a finite number ≥ 0"],
        "",
    ),
    ("negative-json", [0.1, -1.0], ("neg.json", "[0.1, -1]"), "-1", ["budget -1 must be a finite number ≥ 0"], ""),
    (
        "negative-huge",
        [0.5, -1e300],
        ("big.txt", "0.5\n-1e300\n"),
        "-1e300",
        ["budget -1e300 must be a finite number ≥ 0"],
        "typed_values.rs: printed short",
    ),
    ("inf", [0.1, np.inf], ("inf.txt", "0.1\ninf\n"), "inf", ["finite number"], ""),
    ("nan", [0.1, 0.1, np.nan], ("nan.txt", "0.1\n0.1\nNaN\n"), "NaN", [], "the CLI: NaN is not a number"),
    (
        "beyond-a-double",
        [0.1, 10**400],
        ("eps.txt", "0.1\n1e400\n"),
        "1e400",
        ["beyond"],
        "Python reads the literal 1e400 as inf (the inf case); the integer 10**400 is what a caller can pass",
    ),
    ("empty", [], ("empty.txt", ""), None, ["empty"], ""),
    ("empty-json", np.empty(0), ("empty.json", "[]"), None, ["empty"], ""),
    ("nested", [[0.1]], ("nested.json", "[[0.1]]"), None, [], "the CLI: entry 1 is not a number; the package: 1-D"),
    (
        "null",
        [0.1, None],
        ("null.json", "[0.1, null]"),
        None,
        [],
        "the CLI: null is not a number; the package: dtype object",
    ),
    (
        "word",
        ["0.1", "foo"],
        ("bad_line.txt", "0.1\n# comment\n\nfoo\n0.2\n"),
        None,
        [],
        'the CLI: "foo" is not a number; the package: an array of strings',
    ),
    (
        "two-on-a-line",
        [[0.1], [0.2, 0.3]],
        ("two.txt", "0.1\n0.2 0.3\n"),
        None,
        [],
        "the CLI: 2 values on one line; the package: ragged rows",
    ),
    ("booleans", [True, False], None, None, [], "no CLI file holds booleans"),
    ("a-path", "budgets.txt", None, None, [], "the package takes budgets as numbers, never a file"),
]

# (id, call with budgets b, the argument the message starts with, the CLI's command with the
# budget file F and its folder D)
BUDGET_TAKERS = [
    ("leakage", lambda b: tp.leakage(budgets=b), "budgets", lambda f, d: ["leakage", "--budgets", f]),
    ("effective_budgets", lambda b: tp.effective_budgets(b, 2), "budgets", lambda f, d: ["leakage", "--budgets", f]),
    (
        "release-planned",
        lambda b: tp.release([[3, 4], [4, 3], [5, 2]], "planned", 1.0, 3, budgets=b, seed=1),
        "budgets",
        lambda f, d: [
            "release",
            "--counts",
            write(d, "c.csv", "3,4\n4,3\n5,2\n"),
            "--scheme",
            "planned",
            "--epsilon",
            "1",
            "--window",
            "3",
            "--budgets",
            f,
        ],
    ),
    (
        "postprocess",
        lambda b: tp.postprocess([[3.0, 4.0], [4.0, 3.0], [5.0, 2.0]], 7, budgets=b, estimator="mle"),
        "budgets",
        lambda f, d: [
            "postprocess",
            "--releases",
            write(d, "r.csv", "3,4\n4,3\n5,2\n"),
            "--total",
            "7",
            "--budgets",
            f,
            "--estimator",
            "mle",
        ],
    ),
    (
        "stream-create-planned",
        lambda b: tp.Stream.create("s.db", "planned", 1.0, 3, budgets=b),
        "budgets",
        lambda f, d: stream_init(d / "s.db", "planned", "1", "3", "--budgets", f),
    ),
]


@pytest.mark.parametrize("taker", BUDGET_TAKERS, ids=[t[0] for t in BUDGET_TAKERS])
@pytest.mark.parametrize("case", BUDGETS, ids=[c[0] for c in BUDGETS])
def test_bad_budgets_are_refused_naming_the_value(tmp_path, cli, case, taker):
    name, budgets, cli_file, value, words, note = case
    taker_id, call, argument, command = taker
    if taker_id == "postprocess" and name in ("negative-huge", "inf", "nan", "negative", "negative-json"):
        budgets = list(budgets) + [0.1] * (3 - len(budgets))  # one budget per release
    message = refused(lambda: call(budgets), tmp_path)
    assert message.startswith(f"{argument}"), message
    if value is not None:
        check_words(message, [value], "package")
    if taker_id == "leakage":
        check_words(message, words, "package")
    if cli_file is None:
        return
    f = write(tmp_path, *cli_file)
    cli_message = cli(*command(f, tmp_path))
    check_words(cli_message, [cli_file[0]] + ([value] if value else []), "CLI")
    if taker_id == "leakage":
        check_words(cli_message, words, "CLI")
    assert not (tmp_path / "s.db").exists()


def test_budgets_whose_loss_overflows_blame_the_sensitivity(tmp_path, cli):
    # Regression: 1 at Δ = 1e-320 became the effective budget inf, and the audit blamed
    # "budget at step 1 is inf" (the CLI too) where the file said 1.
    words = ["the loss 2·ε/Δ of budget 1 at sensitivity 1e-320 overflows a double"]
    one = write(tmp_path, "one.txt", "1\n")
    check_words(
        cli("leakage", "--budgets", one, "--sensitivity", "1e-320"), words + ["--sensitivity", "one.txt"], "CLI"
    )
    check_words(cli("leakage", "--epsilon", "1", "--horizon", "2", "--sensitivity", "1e-320"), words, "CLI")
    for call in [
        lambda: tp.leakage(budgets=[1.0], sensitivity=1e-320),
        lambda: tp.leakage(P2, P2, epsilon=1.0, horizon=2, sensitivity=1e-320),
        lambda: tp.effective_budgets([1.0], 1e-320),
    ]:
        message = refused(call)
        assert message.startswith("sensitivity: ") and "inf" not in message, message
        check_words(message, words, "package")
    check_words(refused(lambda: tp.effective_budgets([0.0, 1.0], 1e-320)), ["sensitivity: step 2"], "package")
    # The same in a stream's audit (its first step could never be released) and in a
    # comparison's (the strategy's row says why it has no scores).
    message = refused(lambda: tp.Stream.create("s.db", "uniform", 1.0, 2, sensitivity=1e-320, forward=P2))
    check_words(message, ["step 1 could never be released", "the loss 2·ε/Δ of budget"], "package")
    assert not has(message, "inf"), message
    rows = tp.compare(COUNTS, forward=P2, epsilon=1.0, window=2, sensitivity=1e-320, runs=1, schemes=["uniform"]).rows
    assert "the loss 2·ε/Δ of budget" in rows[0]["error"] and not has(rows[0]["error"], "inf"), rows[0]


# ---------------------------------------------------------------------------------------
# Counts and releases as arrays (release.rs, compare.rs, npy.rs, typed_values.rs,
# inputs.rs, stream.rs): the CLI reads the same array as .npy, or the CSV of its table.
# Cells: the package names cell j of counts[:, j] (0-based, the column c{j} of a counts
# file, docs/formats.md §1); the .npy reader counts cells from 1, so a cell number is not
# one of the words compared.

COUNTS_CASES = [
    # (id, counts, the CLI's input (None: the array as .npy), words in both, words in the
    #  package's only, the takers it applies to, note)
    ("negative", [[1, 2], [3, -4]], None, ["step 2", "count -4 is negative"], ["cell 1"], "rcp", ""),
    (
        "fraction",
        [[1, 2.5]],
        None,
        ["count 2.5 is not an integer: the exact integer sampler needs integer counts"],
        ["step 1, cell 1"],
        "rcp",
        "regression: the package said so twice, without the cell",
    ),
    (
        "nan",
        [[1, np.nan]],
        None,
        ["step 1", "count NaN is not a finite number"],
        ["cell 1"],
        "rcp",
        "regression: the package called NaN 'not an integer' (and 'step 1: step 1' with the float sampler)",
    ),
    ("inf", [[1, np.inf]], None, ["step 1", "count inf is not a finite number"], ["cell 1"], "rcp", ""),
    (
        "beyond-2^52",
        [[1, 1e308]],
        None,
        ["1e308 is beyond ±2^52 = 4503599627370496, the largest the exact integer release supports"],
        ["cell 1"],
        "rcp",
        "",
    ),
    (
        "int-beyond-2^52",
        np.array([[1, 2**52 + 1]], dtype=np.int64),
        None,
        ["4503599627370497 is beyond ±2^52"],
        [],
        "rcp",
        "",
    ),
    (
        "int-beyond-2^53",
        np.array([[2**53 + 1, 4]], dtype=np.int64),
        None,
        ["9007199254740993"],
        ["no exact double"],
        "rcpo",
        "typed_values.rs counts_in_errors_are_echoed_as_typed",
    ),
    ("uint64-max", np.array([[1, 2**64 - 1]], dtype=np.uint64), None, ["18446744073709551615"], [], "rcpo", ""),
    (
        "releases-nan",
        [[3.0, 4.0], [6.0, np.nan]],
        None,
        ["step 2", "NaN"],
        [],
        "o",
        "postprocess.rs nan.csv; the estimator's words: release value in cell 2 is NaN",
    ),
    ("releases-inf", [[3.0, 4.0], [6.0, -np.inf]], None, ["step 2", "-inf"], [], "o", ""),
    ("empty", np.zeros((0, 2)), None, ["empty"], ["(0, 2)"], "rcpo", ""),
    (
        "ragged",
        [[1, 2], [3]],
        ("ragged.csv", "1,2\n3\n"),
        [],
        ["ragged rows"],
        "rco",
        "the CLI: ragged.csv:2: 1 fields, but the first row has 2",
    ),
    (
        "word",
        [["1", "2"], ["3", "x"]],
        ("word.csv", "1,2\n3,x\n"),
        [],
        ["dtype <U1"],
        "rcpo",
        'the CLI: "x" is not a number; the package: an array of strings',
    ),
    (
        "objects",
        np.array([[1, 2]], dtype=object),
        "no-cli",
        [],
        ["dtype object"],
        "rcpo",
        "regression: the package blamed 'an integer beyond 64 bits'",
    ),
    ("python-int-beyond-64-bits", [[1, 2**70]], "no-cli", [], ["beyond 64 bits", "1.18e21"], "rcpo", ""),
    (
        "booleans",
        np.array([[True, False]]),
        "accepted",
        [],
        ["dtype bool"],
        "rcpo",
        "the .npy reader takes b1 as 0/1; arrays of booleans are refused (docs/python.md §2)",
    ),
    (
        "one-dimensional",
        [1, 2],
        "accepted",
        [],
        ["2-D", "reshape"],
        "rco",
        "a .npy of d values is one step; the package asks for T × n and says how",
    ),
    ("masked", np.ma.masked_array([[1, 2]], mask=[[False, True]]), "no-cli", [], ["masked"], "rcpo", ""),
    ("a-path", "counts.csv", "no-cli", [], ["got a str"], "rcpo", "the package takes counts as numbers, never a file"),
]

TAKERS = {
    "r": (
        "release",
        lambda c: tp.release(c, "bd", 1.0, 3),
        "counts",
        lambda f: ["release", "--counts", f, "--scheme", "bd", "--epsilon", "1", "--window", "3"],
    ),
    "c": (
        "compare",
        lambda c: tp.compare(c, epsilon=1.0, window=1, runs=1),
        "counts",
        lambda f: ["compare", "--counts", f, "--epsilon", "1", "--window", "1", "--runs", "1"],
    ),
    "o": (
        "postprocess",
        lambda c: tp.postprocess(c, 7, epsilon=1.0, estimator="mle"),
        "releases",
        lambda f: ["postprocess", "--releases", f, "--total", "7", "--epsilon", "1", "--estimator", "mle"],
    ),
    "p": ("push", None, "counts", None),
}


def _counts_params():
    out = []
    for case in COUNTS_CASES:
        for key in case[5]:
            out.append(pytest.param(case, key, id=f"{case[0]}-{TAKERS[key][0]}"))
    return out


def _last_row(name: str, counts: Any) -> Any:
    """The one step a push takes of a case's counts."""
    if isinstance(counts, str):
        return counts
    if name == "empty":
        return np.zeros(0)
    if isinstance(counts, np.ma.MaskedArray) or isinstance(counts, np.ndarray):
        return counts[-1]
    return counts[-1]


@pytest.mark.parametrize("case,taker", _counts_params())
def test_bad_counts_are_refused_with_the_cli_words(tmp_path, cli, case, taker):
    name, counts, cli_input, both, own, _, note = case
    taker_id, call, argument, command = TAKERS[taker]
    if taker == "p":
        # A stream with one step, pushed a bad second one: refused before the file is
        # touched, nothing recorded.
        folder = tmp_path / "stream"
        folder.mkdir()
        with tp.Stream.create(folder / "s.db", "uniform", 1.0, 2) as s:
            s.push([3, 4], key=0)
            row = _last_row(name, counts)
            message = refused(lambda: s.push(row, key=1), folder)
            assert s.status()["steps"] == 1, "nothing recorded"
        own = [w for w in own if not w.startswith("step") and w != "(0, 2)"]
        both_words = [w for w in both if not w.startswith("step")]
    else:
        message = refused(lambda: call(counts), tmp_path)
        both_words = both
    assert message.startswith(f"{argument}: "), message
    check_words(message, both_words + own, "package")
    if cli_input in ("accepted", "no-cli") or command is None:
        return
    path = write(tmp_path, f"{name}.npy", np.asarray(counts)) if cli_input is None else write(tmp_path, *cli_input)
    check_words(cli(*command(path)), [path.name] + both, "CLI")


def test_a_push_names_the_counts_as_the_cli_names_its_row(tmp_path, cli, tpl_bin):
    # stream.rs push_names_an_out_of_range_count_as_typed_and_by_column, push_refuses_counts_of_
    # another_width_than_the_matrices, round trip (a stored key with other counts), key order.
    folder = tmp_path / "s"
    folder.mkdir()
    with tp.Stream.create(folder / "s.db", "uniform", 1.0, 2) as s:
        s.push([1, 2], key=5)
        cases = [
            (lambda: s.push([1, 2, 3], key=6), ["counts: step 2 has 3 cells, but the stream started with 2"]),
            (lambda: s.push([1, 3], key=5), ["key 5 is already stored", "different counts"]),
            (lambda: s.push([1, 2], key=4), ["key 4 is not after the last stored key 5"]),
            (lambda: s.push([9007199254740993, 1], key=6), ["9007199254740993"]),
        ]
        for call, words in cases:
            # The stream's own checks run in a transaction that is rolled back: the steps and
            # the files stand as they were (SQLite's companions may be touched).
            names = sorted(os.listdir(folder))
            message = refused(call)
            check_words(message, words, "package")
            assert "step 2: step 2" not in message, message
            assert sorted(os.listdir(folder)) == names
        assert s.status()["steps"] == 1
    pb = write(tmp_path, "pb.csv", "0.9,0.1\n0.2,0.8\n")
    with tp.Stream.create(folder / "w.db", "pba", 1.0, 3, backward=pb, alpha=5) as s:
        message = refused(lambda: s.push([1, 2, 3], key=1))
        check_words(message, ["counts: step 1: 3 cells, but the stream's matrices have 2 states"], "package")
        assert s.status()["steps"] == 0
    # The CLI's words for the same rows.
    db = tmp_path / "cli.db"
    subprocess.run(
        [str(tpl_bin), *stream_init(db, "pba", "1", "3", "--backward", pb, "--alpha", "5")],
        check=True,
        capture_output=True,
    )
    c = write(tmp_path, "c.csv", "timestamp_bucket,c0,c1,c2\n1,1,2,3\n")
    check_words(cli("stream", "push", "--db", db, "--counts", c), ["3 cells", "2 states"], "CLI")


def test_matrices_that_do_not_fit_the_counts_are_named_with_both_sizes(tmp_path, cli):
    # typed_values.rs pba_refuses_matrices_that_do_not_fit_the_counts; compare.rs p3.csv.
    counts = write(tmp_path, "c2.csv", "timestamp_bucket,c0,c1\n100,3,4\n200,5,6\n")
    m3 = write(tmp_path, "example4.csv", "0.1,0.2,0.7\n0.3,0.3,0.4\n0.5,0.3,0.2\n")
    check_words(
        cli(
            "release",
            "--counts",
            counts,
            "--scheme",
            "pba",
            "--epsilon",
            "1",
            "--window",
            "2",
            "--backward",
            m3,
            "--forward",
            m3,
        ),
        ["3×3", "2 cells"],
        "CLI",
    )
    calls = [
        (lambda: tp.release([[3, 4], [5, 6]], "pba", 1.0, 2, backward=m3, forward=m3), "backward"),
        (lambda: tp.compare([[3, 4], [5, 6]], forward=np.eye(3), epsilon=1.0, window=2), "forward"),
        (lambda: tp.postprocess([[3.0, 4.0], [5.0, 6.0]], 9, epsilon=1.0, forward=np.eye(3)), "forward"),
    ]
    for call, argument in calls:
        message = refused(call, tmp_path)
        assert message.startswith(f"{argument}: "), message
        check_words(message, ["3×3", "2 cells"], "package")
    # inputs.rs leakage_refuses_matrices_of_different_sizes_naming_both
    b = write(tmp_path, "b2.csv", "0.9,0.1\n0.2,0.8\n")
    f = write(tmp_path, "f3.csv", "0.5,0.3,0.2\n0.1,0.8,0.1\n0.3,0.3,0.4\n")
    check_words(
        cli("leakage", "--backward", b, "--forward", f, "--epsilon", "0.1", "--horizon", "3"), ["2×2", "3×3"], "CLI"
    )
    check_words(refused(lambda: tp.leakage(b, f, epsilon=0.1, horizon=3), tmp_path), ["2×2", "3×3"], "package")


# ---------------------------------------------------------------------------------------
# Numbers (allocate.rs, compare.rs, release.rs, postprocess.rs bad_inputs_exit_2_with_one_line;
# inputs.rs numbers_beyond_a_double; typed_values.rs underflow and overflowing scales;
# stream.rs init): each value through each function that takes it, the CLI given the same
# value as typed. Values the command line cannot type (True, "0.1", None, [1.0], 1j) have
# no CLI run: the command line has no types, a flag's text is parsed as its type.

M = "m.csv"  # in the test's folder: 0.8 0.2 / 0.2 0.8
C = "c.csv"  # in the test's folder: 3 steps of 2 cells
R3 = "r.csv"  # 2 releases of 3 cells

NAN, INF = float("nan"), float("inf")
HUGE_INT = 10**400

# value as Python passes it → (the text typed on the command line, words in both messages)
NUMBER_VALUES = {
    "nan": (NAN, "NaN", ["NaN"]),
    "inf": (INF, "inf", ["inf", "finite"]),
    "-inf": (-INF, "-inf", ["-inf", "finite"]),
    "negative": (-1.0, "-1", ["-1", "must be finite and greater than 0"]),
    "zero": (0.0, "0", ["0", "must be finite and greater than 0"]),
    "beyond-a-double": (HUGE_INT, "1e400", ["1e400 is beyond the largest double (±1.8e308)"]),
    # Python reads 1e-400 as 0.0 before the package sees it: the zero case, as the CLI's
    # `1e-400 rounds to 0` would be if it were not refused as typed.
    "rounds-to-zero": (1e-400, "0", ["0", "must be finite and greater than 0"]),
}
UNTYPED_VALUES = {"true": True, "text": "0.1", "none": None, "list": [1.0], "complex": 1j}

# (parameter id, call taking the value v, the argument named, CLI args taking the value as
#  the last element, values refused (None: all of NUMBER_VALUES and UNTYPED_VALUES))
POSITIVE = ["nan", "inf", "-inf", "negative", "zero", "beyond-a-double", "rounds-to-zero"]
POSITIVE_UNTYPED = ["true", "text", "none", "list", "complex"]
NUMBER_PARAMETERS = [
    (
        "supremum-epsilon",
        lambda v: tp.supremum(M, v),
        "epsilon",
        ["supremum", "--matrix", M, "--epsilon"],
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "leakage-epsilon",
        lambda v: tp.leakage(backward=M, epsilon=v, horizon=3),
        "epsilon",
        ["leakage", "--backward", M, "--horizon", "3", "--epsilon"],
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "release-epsilon",
        lambda v: tp.release(COUNTS, "bd", v, 2),
        "epsilon",
        ["release", "--counts", C, "--scheme", "bd", "--window", "2", "--epsilon"],
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "compare-epsilon",
        lambda v: tp.compare(COUNTS, epsilon=v, window=2, runs=1),
        "epsilon",
        ["compare", "--counts", C, "--window", "2", "--runs", "1", "--epsilon"],
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "postprocess-epsilon",
        lambda v: tp.postprocess([[3.0, 4, 5], [6, 2, 4]], 12, epsilon=v, forward=np.eye(3)),
        "epsilon",
        ["postprocess", "--releases", R3, "--total", "12", "--forward", "p3.csv", "--epsilon"],
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "stream-epsilon",
        lambda v: tp.Stream.create("s.db", "bd", v, 2),
        "epsilon",
        ["stream", "init", "--db", "cli.db", "--scheme", "bd", "--window", "2", "--epsilon"],
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "allocate-alpha",
        lambda v: tp.allocate("upper-bound", backward=M, alpha=v, horizon=3),
        "alpha",
        ["allocate", "--strategy", "upper-bound", "--backward", M, "--horizon", "3", "--alpha"],
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "compare-alpha",
        lambda v: tp.compare(COUNTS, epsilon=1.0, window=2, runs=1, alpha=v),
        "alpha",
        ["compare", "--counts", C, "--epsilon", "1", "--window", "2", "--runs", "1", "--alpha"],
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "stream-alpha",
        lambda v: tp.Stream.create("s.db", "laplace", 1.0, 5, backward=M, alpha=v),
        "alpha",
        stream_init("cli.db", "laplace", "1", "5", "--backward", M, "--alpha"),
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "loss-alpha",
        lambda v: tp.loss(M, v),
        "alpha",
        ["loss", "--matrix", M, "--alpha"],
        ["nan", "inf", "-inf", "negative", "beyond-a-double"],
        ["true", "text", "complex"],
    ),
    (
        "release-sensitivity",
        lambda v: tp.release(COUNTS, "bd", 1.0, 2, sensitivity=v),
        "sensitivity",
        ["release", "--counts", C, "--scheme", "bd", "--epsilon", "1", "--window", "2", "--sensitivity"],
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "compare-sensitivity",
        lambda v: tp.compare(COUNTS, epsilon=1.0, window=2, runs=1, sensitivity=v),
        "sensitivity",
        ["compare", "--counts", C, "--epsilon", "1", "--window", "2", "--runs", "1", "--sensitivity"],
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "postprocess-sensitivity",
        lambda v: tp.postprocess([[3.0, 4, 5], [6, 2, 4]], 12, epsilon=1.0, forward=np.eye(3), sensitivity=v),
        "sensitivity",
        ["postprocess", "--releases", R3, "--total", "12", "--epsilon", "1", "--forward", "p3.csv", "--sensitivity"],
        POSITIVE,
        ["true", "text", "list", "complex"],
    ),
    (
        "leakage-sensitivity",
        lambda v: tp.leakage(budgets=[0.1, 0.2], sensitivity=v),
        "sensitivity",
        ["leakage", "--budgets", "b.txt", "--sensitivity"],
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "stream-sensitivity",
        lambda v: tp.Stream.create("s.db", "bd", 1.0, 2, sensitivity=v),
        "sensitivity",
        stream_init("cli.db", "bd", "1", "2", "--sensitivity"),
        POSITIVE,
        POSITIVE_UNTYPED,
    ),
    (
        "smooth-s",
        lambda v: tp.smooth(P2, v),
        "s",
        ["loss", "--matrix", M, "--alpha", "1", "--smoothing"],
        ["nan", "inf", "-inf", "negative", "beyond-a-double"],
        POSITIVE_UNTYPED,
    ),
    (
        "MatrixFile-smoothing",
        lambda v: tp.loss(tp.MatrixFile(M, smoothing=v), 1.0),
        "(P )?smoothing",
        ["loss", "--matrix", M, "--alpha", "1", "--smoothing"],
        ["nan", "inf", "-inf", "negative", "beyond-a-double"],
        ["true", "text", "list", "complex"],
    ),
    (
        "estimate-smoothing",
        lambda v: tp.estimate("s.csv", smoothing=v),
        "smoothing",
        ["estimate", "--stream", "s.csv", "--out", "est", "--smoothing"],
        ["nan", "inf", "-inf", "negative", "beyond-a-double"],
        ["true", "text", "list", "complex"],
    ),
    (
        "transitions-smoothing",
        lambda v: tp.matrices_from_transitions([[1, 0], [0, 1]], smoothing=v),
        "smoothing",
        ["estimate", "--stream", "s.csv", "--out", "est", "--smoothing"],
        ["nan", "inf", "-inf", "negative", "beyond-a-double"],
        ["true", "text", "list", "complex"],
    ),
]

# Words of the refusal of a negative or non-finite smoothing, and of values the CLI parses
# as typed where the package gets the number: per parameter, words that replace the
# value's in NUMBER_VALUES.
SMOOTHING_WORDS = {"negative": ["-1", "must be finite and non-negative"]}
ALPHA_OF_LOSS_WORDS = {"negative": ["-1", "finite", "≥ 0"]}


def _number_params():
    out = []
    for pid, call, argument, command, typed, untyped in NUMBER_PARAMETERS:
        for v in typed:
            out.append(pytest.param(pid, call, argument, command, v, id=f"{pid}-{v}"))
        for v in untyped:
            out.append(pytest.param(pid, call, argument, None, v, id=f"{pid}-{v}"))
    return out


@pytest.fixture
def number_inputs(tmp_path, monkeypatch):
    """The files the number cases read (in the working folder for the package and in the
    CLI's), the working folder watched as the test's."""
    files = {
        M: "0.8 0.2\n0.2 0.8\n",
        C: "3,4\n4,3\n5,2\n",
        R3: "3,4,5\n6,2,4\n",
        "p3.csv": "1 0 0\n0 1 0\n0 0 1\n",
        "b.txt": "0.1\n0.2\n",
        "s.csv": STREAM_HEADER + "0,1,0\n0,2,1\n1,1,1\n1,2,1\n",
    }
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for name, text in files.items():
        write(inputs, name, text)
    monkeypatch.chdir(inputs)
    return inputs


@pytest.mark.parametrize("pid,call,argument,command,value", _number_params())
def test_a_bad_number_is_refused_naming_the_argument_and_value(number_inputs, cli, pid, call, argument, command, value):
    if command is None:
        v = UNTYPED_VALUES[value]
        message = refused(lambda: call(v), number_inputs)
        assert re.match(rf"(compare: )?{argument}\b", message), message
        check_words(message, ["needed"], "package")
        return
    v, typed, words = NUMBER_VALUES[value]
    if "smooth" in pid or "smoothing" in pid:
        words = SMOOTHING_WORDS.get(value, words)
    if pid == "loss-alpha":
        words = ALPHA_OF_LOSS_WORDS.get(value, words)
    message = refused(lambda: call(v), number_inputs)
    # compare names its own checks "compare: epsilon 0: …"; every other message starts with
    # the argument.
    assert re.match(rf"(compare: )?{argument}\b", message), message
    args = [number_inputs / a if isinstance(a, str) and (number_inputs / a).exists() else a for a in command]
    cli_message = cli(*args[:-1], f"{args[-1]}={typed}")  # --flag=-inf: a value, not a flag
    # The CLI parses NaN and ±inf as typed ("NaN is not a number", "inf is not a finite
    # number") where the package's library check says "must be finite": the value is named.
    if value in ("nan", "inf", "-inf"):
        words = [typed]
    check_words(message, words, "package")
    check_words(cli_message, words, "CLI")
    assert not (number_inputs / "s.db").exists()


# Whole numbers (window, horizon, runs, total, replicates, seed, key, cells) and values that
# are refused only together (an overflowing noise scale, a step that could never be released).

WHOLE_CASES = [
    # (id, call, words in the package's message, CLI args (None: no CLI run) and its words)
    (
        "release-window-0",
        lambda: tp.release(COUNTS, "bd", 1.0, 0),
        ["window", "0"],
        ["release", "--counts", C, "--scheme", "bd", "--epsilon", "1", "--window", "0"],
        ["--window", "0"],
    ),
    ("release-window-negative", lambda: tp.release(COUNTS, "bd", 1.0, -1), ["window", "-1"], None, []),
    (
        "release-window-fraction",
        lambda: tp.release(COUNTS, "bd", 1.0, 2.5),
        ["window", "a whole number is needed", "2.5"],
        None,
        [],
    ),
    (
        "release-window-true",
        lambda: tp.release(COUNTS, "bd", 1.0, True),
        ["window", "a whole number is needed"],
        None,
        [],
    ),
    (
        "release-window-beyond-u64",
        lambda: tp.release(COUNTS, "bd", 1.0, 2**64),
        ["window", "18446744073709551616"],
        None,
        [],
    ),
    (
        "release-window-huge",
        lambda: tp.release(COUNTS, "bd", 1.0, 2**64 - 1),
        ["epsilon 1 (with window 18446744073709551615 and sensitivity 2)", "exceeds 7.0368744177664e13"],
        ["release", "--counts", C, "--scheme", "bd", "--epsilon", "1", "--window", "18446744073709551615"],
        ["--window 18446744073709551615", "exceeds 7.0368744177664e13"],
    ),
    (
        "allocate-window-missing",
        lambda: tp.allocate("window", backward=M, alpha=1.0, horizon=5),
        ["window"],
        ["allocate", "--strategy", "window", "--backward", M, "--alpha", "1", "--horizon", "5"],
        ["--window"],
    ),
    (
        "allocate-window-beyond-horizon",
        lambda: tp.allocate("window", backward=M, alpha=1.0, horizon=5, window=6),
        ["window 6 must be between 1 and the horizon 5"],
        ["allocate", "--strategy", "window", "--backward", M, "--alpha", "1", "--horizon", "5", "--window", "6"],
        ["--window", "6"],
    ),
    (
        "allocate-window-0",
        lambda: tp.allocate("window", backward=M, alpha=1.0, horizon=5, window=0),
        ["window", "0"],
        ["allocate", "--strategy", "window", "--backward", M, "--alpha", "1", "--horizon", "5", "--window", "0"],
        ["--window", "0"],
    ),
    (
        "allocate-horizon-0",
        lambda: tp.allocate("upper-bound", backward=M, alpha=1.0, horizon=0),
        ["horizon", "0"],
        ["allocate", "--strategy", "upper-bound", "--backward", M, "--alpha", "1", "--horizon", "0"],
        ["--horizon"],
    ),
    (
        "allocate-horizon-beyond-limit",
        lambda: tp.allocate("upper-bound", backward=M, alpha=1.0, horizon=10**8 + 1),
        ["horizon", "100000000"],
        ["allocate", "--strategy", "upper-bound", "--backward", M, "--alpha", "1", "--horizon", "100000001"],
        ["100000000"],
    ),
    (
        "allocate-horizon-fraction",
        lambda: tp.allocate("upper-bound", backward=M, alpha=1.0, horizon=2.5),
        ["horizon", "a whole number is needed"],
        None,
        [],
    ),
    (
        "allocate-strategy-unknown",
        lambda: tp.allocate("greedy", backward=M, alpha=1.0, horizon=5),
        ["strategy", "greedy", "upper-bound, quantified, window"],
        None,
        [],
    ),
    ("allocate-strategy-none", lambda: tp.allocate(None, backward=M, alpha=1.0, horizon=5), ["strategy"], None, []),
    (
        # Quantified keeps its guarantee up to the largest double; the audit of a window of
        # the budgets 1.7e308 calls for overflows, and α is what asked for them.
        "allocate-quantified-window-overflow",
        lambda: tp.allocate("quantified", backward=M, forward=M, alpha=1.7e308, horizon=5, window=2),
        ["alpha", "largest"],
        ["allocate", "--strategy", "quantified", "--backward", M, "--forward", M, "--alpha", "1.7e308",
         "--horizon", "5", "--window", "2"],
        ["--alpha", "largest double"],
    ),
    (
        "leakage-horizon-0",
        lambda: tp.leakage(backward=M, epsilon=0.1, horizon=0),
        ["horizon"],
        ["leakage", "--backward", M, "--epsilon", "0.1", "--horizon", "0"],
        ["horizon"],
    ),
    (
        "leakage-horizon-beyond-limit",
        lambda: tp.leakage(epsilon=0.1, horizon=10**9),
        ["at most 100000000"],
        ["leakage", "--epsilon", "0.1", "--horizon", "1000000000"],
        ["100000000"],
    ),
    (
        "leakage-horizon-text",
        lambda: tp.leakage(epsilon=0.1, horizon="3"),
        ["horizon", "a whole number is needed"],
        None,
        [],
    ),
    (
        "leakage-epsilon-without-horizon",
        lambda: tp.leakage(epsilon=0.1),
        ["epsilon 0.1", "horizon"],
        ["leakage", "--epsilon", "0.1"],
        ["--epsilon 0.1 needs --horizon"],
    ),
    (
        "leakage-horizon-without-epsilon",
        lambda: tp.leakage(horizon=3),
        ["horizon 3", "epsilon"],
        ["leakage", "--horizon", "3"],
        ["--horizon 3 needs --epsilon"],
    ),
    (
        "leakage-nothing",
        lambda: tp.leakage(),
        ["budgets=", "epsilon=", "horizon="],
        ["leakage"],
        ["give --budgets FILE, or --epsilon E with --horizon T"],
    ),
    (
        "leakage-window-beyond-horizon",
        lambda: tp.leakage(budgets=[0.1, 0.2, 0.3], window=4),
        ["window"],
        ["leakage", "--budgets", "b.txt", "--window", "4"],
        ["--window", "4"],
    ),
    (
        "leakage-huge-budgets-window",
        lambda: tp.leakage(budgets=[1e308, 1e308], window=2),
        ["the leakage at step 1 exceeds the largest representable number"],
        ["leakage", "--budgets", "huge.json", "--window", "2"],
        ["the leakage at step 1 exceeds the largest representable number"],
    ),
    (
        "compare-window-beyond-steps",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=9),
        ["window 9", "number of steps 3"],
        ["compare", "--counts", C, "--epsilon", "1", "--window", "9"],
        ["--window 9", "number of steps 3"],
    ),
    (
        "compare-runs-0",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=2, runs=0),
        ["runs 0", "between 1 and 10000"],
        ["compare", "--counts", C, "--epsilon", "1", "--window", "2", "--runs", "0"],
        ["--runs 0", "between 1 and 10000"],
    ),
    (
        "compare-runs-too-many",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=2, runs=10**6),
        ["runs 1000000", "10000"],
        ["compare", "--counts", C, "--epsilon", "1", "--window", "2", "--runs", "1000000"],
        ["--runs 1000000", "10000"],
    ),
    (
        "compare-runs-true",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=2, runs=True),
        ["runs", "a whole number is needed"],
        None,
        [],
    ),
    (
        "compare-scheme-unknown",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=2, schemes="bd,magic"),
        ["schemes", "magic"],
        None,
        [],
    ),
    ("compare-schemes-empty", lambda: tp.compare(COUNTS, epsilon=1.0, window=2, schemes=[]), ["schemes"], None, []),
    (
        "compare-postprocess-unknown",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=2, postprocess="magic"),
        ["postprocess", "magic"],
        None,
        [],
    ),
    (
        "compare-baseline-int",
        lambda: tp.compare(COUNTS, epsilon=1.0, window=2, baseline=1),
        ["baseline", "True or False"],
        None,
        [],
    ),
    ("compare-seed-negative", lambda: tp.compare(COUNTS, epsilon=1.0, window=2, seed=-1), ["seed", "-1"], None, []),
    ("compare-epsilon-missing", lambda: tp.compare(COUNTS, window=2), ["epsilon"], None, []),
    *(
        (
            f"release-scale-overflow{suffix}",
            lambda kw=kw: tp.release(COUNTS, "laplace", 1e-320, 2, sensitivity=1e308, **kw),
            [package, "sensitivity/budget = 1e308/1e-320 overflows"],
            ["release", "--counts", C, "--scheme", "laplace", "--epsilon", "1e-320", "--window", "2"]
            + ["--sensitivity", "1e308", *flags],
            ["sensitivity/budget = 1e308/1e-320 overflows"],
        )
        for suffix, kw, flags, package in [
            ("", {}, [], "epsilon 1e-320 (with window 2 and sensitivity 1e308)"),
            ("-float", {"sampler": "float"}, ["--sampler", "float"], "epsilon 1e-320"),
        ]
    ),
    (
        "release-window-sum-overflow",
        lambda: tp.release(COUNTS, "laplace", 1e308, 3),
        ["epsilon 1e308", "add up beyond the largest double"],
        ["release", "--counts", C, "--scheme", "laplace", "--epsilon", "1e308", "--window", "3"],
        ["add up beyond the largest double"],
    ),
    ("release-scheme-unknown", lambda: tp.release(COUNTS, "magic", 1.0, 2), ["scheme", "magic"], None, []),
    ("release-scheme-not-text", lambda: tp.release(COUNTS, 1, 1.0, 2), ["scheme", "a name is needed"], None, []),
    (
        "release-pba-without-matrices",
        lambda: tp.release(COUNTS, "pba", 1.0, 3),
        ["pba", "backward="],
        ["release", "--counts", C, "--scheme", "pba", "--epsilon", "1", "--window", "3"],
        ["pba", "--backward"],
    ),
    (
        "release-planned-without-budgets",
        lambda: tp.release(COUNTS, "planned", 1.0, 2),
        ["planned", "budgets="],
        None,
        [],
    ),
    (
        "release-planned-short",
        lambda: tp.release(COUNTS, "planned", 1.0, 3, budgets=[0.1]),
        ["counts: step 2 is past the plan's horizon of 1 steps"],
        ["release", "--counts", C, "--scheme", "planned", "--epsilon", "1", "--window", "3", "--budgets", "one.txt"],
        ["step 2 is past the plan's horizon of 1 steps"],
    ),
    (
        "release-planned-over-epsilon",
        lambda: tp.release(COUNTS, "planned", 1.0, 2, budgets=[0.6, 0.6, 0.1]),
        ["budgets: budget plan, step 2", "spends 1.2, more than epsilon = 1"],
        ["release", "--counts", C, "--scheme", "planned", "--epsilon", "1", "--window", "2", "--budgets", "plan.txt"],
        ["budget plan, step 2", "spends 1.2, more than epsilon = 1"],
    ),
    (
        "release-sampler-unknown",
        lambda: tp.release(COUNTS, "bd", 1.0, 2, sampler="x"),
        ["sampler", "discrete, float"],
        None,
        [],
    ),
    ("release-sampler-none", lambda: tp.release(COUNTS, "bd", 1.0, 2, sampler=None), ["sampler"], None, []),
    (
        "release-seed-beyond-u64",
        lambda: tp.release(COUNTS, "bd", 1.0, 2, seed=2**64),
        ["seed", "18446744073709551616"],
        None,
        [],
    ),
    (
        "release-interval-1",
        lambda: tp.release(COUNTS, "bd", 1.0, 2, interval=1),
        ["interval", "strictly between 0 and 1"],
        ["release", "--counts", C, "--scheme", "bd", "--epsilon", "1", "--window", "2", "--interval", "1"],
        ["not a level strictly between 0 and 1"],
    ),
    (
        "release-interval-nan",
        lambda: tp.release(COUNTS, "bd", 1.0, 2, interval=NAN),
        ["interval", "strictly between 0 and 1"],
        ["release", "--counts", C, "--scheme", "bd", "--epsilon", "1", "--window", "2", "--interval", "NaN"],
        ["NaN"],
    ),
    (
        "postprocess-total-negative",
        lambda: tp.postprocess([[3.0, 4, 5]], -3, epsilon=1.0),
        ["total", "-3"],
        ["postprocess", "--releases", R3, "--total", "-3", "--epsilon", "1"],
        ["-3"],
    ),
    (
        "postprocess-total-fraction",
        lambda: tp.postprocess([[3.0, 4, 5]], 2.5, epsilon=1.0),
        ["total", "a whole number is needed", "2.5"],
        ["postprocess", "--releases", R3, "--total", "2.5", "--epsilon", "1"],
        ["2.5"],
    ),
    (
        "postprocess-total-beyond-2^53",
        lambda: tp.postprocess([[3.0, 4, 5]], 2**53 + 1, epsilon=1.0, estimator="mle"),
        ["total", "9007199254740993", "exceeds 2^53"],
        ["postprocess", "--releases", R3, "--total", "9007199254740993", "--epsilon", "1", "--estimator", "mle"],
        ["9007199254740993", "exceeds 2^53"],
    ),
    (
        "postprocess-no-budgets",
        lambda: tp.postprocess([[3.0, 4, 5]], 12),
        ["budgets", "epsilon="],
        ["postprocess", "--releases", R3, "--total", "12"],
        ["--epsilon", "--budgets"],
    ),
    (
        "postprocess-budgets-and-epsilon",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, budgets=[1.0], epsilon=1.0),
        ["budgets", "not both"],
        None,
        [],
    ),
    (
        "postprocess-short-budgets",
        lambda: tp.postprocess([[3.0, 4, 5], [6, 2, 4]], 12, budgets=[0.5], forward=np.eye(3)),
        ["budgets: 1 budgets, but there are 2 releases"],
        ["postprocess", "--releases", R3, "--total", "12", "--budgets", "short.txt", "--forward", "p3.csv"],
        ["1 budgets", "2 releases"],
    ),
    (
        "postprocess-no-forward",
        lambda: tp.postprocess([[3.0, 4, 5], [6, 2, 4]], 12, epsilon=1.0),
        ["forward", "estimator smooth needs a forward transition matrix"],
        ["postprocess", "--releases", R3, "--total", "12", "--epsilon", "1"],
        ["--forward", "smooth"],
    ),
    (
        "postprocess-causal-no-forward",
        lambda: tp.postprocess([[3.0, 4, 5], [6, 2, 4]], 12, epsilon=1.0, causal=True),
        ["forward", "estimator map needs a forward transition matrix"],
        ["postprocess", "--releases", R3, "--total", "12", "--epsilon", "1", "--causal"],
        ["--forward", "map"],
    ),
    (
        "postprocess-causal-smooth",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, estimator="smooth", causal=True),
        ["causal", "smooth"],
        ["postprocess", "--releases", R3, "--total", "12", "--epsilon", "1", "--estimator", "smooth", "--causal"],
        ["--causal", "smooth"],
    ),
    (
        "postprocess-prior-length",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, prior=[0.5, 0.5]),
        ["prior", "2 entries, expected 3"],
        ["postprocess", "--releases", "r1.csv", "--total", "12", "--epsilon", "1", "--prior", "plen.csv"],
        ["2", "3"],
    ),
    (
        "postprocess-prior-sum",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, prior=[0.5, 0.5, 0.5]),
        ["prior", "sum to 1.5"],
        ["postprocess", "--releases", "r1.csv", "--total", "12", "--epsilon", "1", "--prior", "psum.csv"],
        ["1.5"],
    ),
    (
        "postprocess-prior-negative",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, prior=[-0.5, 1, 0.5]),
        ["prior", "-0.5"],
        ["postprocess", "--releases", "r1.csv", "--total", "12", "--epsilon", "1", "--prior", "pneg.csv"],
        ["-0.5"],
    ),
    (
        "postprocess-prior-rows",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, prior=[[0.5, 0.5, 0], [0.5, 0.5, 0]]),
        ["prior", "1-D"],
        ["postprocess", "--releases", "r1.csv", "--total", "12", "--epsilon", "1", "--prior", "prows.csv"],
        ["prows.csv:2"],
    ),
    (
        "postprocess-prior-unknown",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, prior="magic"),
        ["prior", "magic"],
        None,
        [],
    ),
    (
        "postprocess-estimator-unknown",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, estimator="magic"),
        ["estimator", "magic"],
        None,
        [],
    ),
    (
        "postprocess-estimator-not-text",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, estimator=1),
        ["estimator"],
        None,
        [],
    ),
    (
        "postprocess-sampler-not-text",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, interval=0.9, sampler=1),
        ["sampler", "discrete or float"],
        None,
        [],
    ),
    (
        "postprocess-replicates-1",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, interval=0.9, replicates=1),
        ["replicates", "1"],
        None,
        [],
    ),
    (
        "postprocess-replicates-too-many",
        lambda: tp.postprocess(
            [[3.0, 4, 5]], 12, epsilon=1.0, interval=0.9, replicates=10**12, interval_method="bootstrap"
        ),
        ["replicates 1000000000000", "1 GiB"],
        None,
        [],
    ),
    (
        "postprocess-interval-method-unknown",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, interval=0.9, interval_method="exact"),
        ["interval_method", "model or bootstrap", "'exact'"],
        None,
        [],
    ),
    (
        "postprocess-seed-with-model-intervals",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, interval=0.9, seed=1),
        ["seed", "interval_method"],
        None,
        [],
    ),
    (
        "postprocess-seed-without-interval",
        lambda: tp.postprocess([[3.0, 4, 5]], 12, epsilon=1.0, seed=1),
        ["seed", "interval="],
        None,
        [],
    ),
    (
        "stream-window-beyond-file",
        lambda: tp.Stream.create("s.db", "uniform", 1.0, 2**64 - 1),
        ["window 18446744073709551615", "beyond 2^63 − 1"],
        stream_init("cli.db", "uniform", "1", "18446744073709551615"),
        ["--window", "18446744073709551615"],
    ),
    (
        "stream-step-one-never-released",
        lambda: tp.Stream.create("s.db", "bd", 1e-300, 2),
        ["epsilon 1e-300", "step 1 could never be released"],
        stream_init("cli.db", "bd", "1e-300", "2"),
        ["--epsilon", "step 1 could never be released"],
    ),
    (
        "stream-alpha-below-step-one",
        lambda: tp.Stream.create("s.db", "laplace", 1.0, 5, backward=M, alpha=0.5),
        ["alpha 0.5", "step 1 could never be released"],
        stream_init("cli.db", "laplace", "1", "5", "--backward", M, "--alpha", "0.5"),
        ["--alpha", "0.5", "step 1 could never be released"],
    ),
    (
        "stream-alpha-without-matrices",
        lambda: tp.Stream.create("s.db", "laplace", 1.0, 5, alpha=1.0),
        ["alpha needs backward and/or forward"],
        None,
        [],
    ),
    (
        "stream-planned-over-epsilon",
        lambda: tp.Stream.create("s.db", "planned", 1.0, 2, budgets=[0.6, 0.6]),
        ["budgets: budget plan, step 2"],
        stream_init("cli.db", "planned", "1", "2", "--budgets", "plan2.txt"),
        ["plan2.txt: budget plan, step 2"],
    ),
    ("stream-scheme-unknown", lambda: tp.Stream.create("s.db", "magic", 1.0, 2), ["scheme", "magic"], None, []),
    ("stream-sampler-unknown", lambda: tp.Stream.create("s.db", "bd", 1.0, 2, sampler="x"), ["sampler", "x"], None, []),
    (
        "stream-estimator-without-total",
        lambda: tp.Stream.create("s.db", "bd", 1.0, 2, estimator="map"),
        ["estimator", "total"],
        None,
        [],
    ),
    (
        "stream-map-without-forward",
        lambda: tp.Stream.create("s.db", "bd", 1.0, 2, total=5),
        ["estimator", "forward"],
        None,
        [],
    ),
    ("stream-total-0", lambda: tp.Stream.create("s.db", "bd", 1.0, 2, total=0), ["total", "0"], None, []),
    ("stream-path-not-a-path", lambda: tp.Stream.create(3, "bd", 1.0, 2), ["path", "a file path is needed"], None, []),
    (
        "stream-path-with-nul",
        lambda: tp.Stream.create("a\0b.db", "bd", 1.0, 2),
        ["not a usable file name", "NUL"],
        None,
        [],
    ),
    *(
        (
            f"estimate-steps-{name}",
            lambda steps=steps: tp.estimate("s.csv", steps=steps),
            ["steps", package],
            ["estimate", "--stream", "s.csv", "--out", "est", "--steps", steps],
            [command],
        )
        for name, steps, package, command in [
            ("reversed", "3..1", "3..1 is empty", "step range 3..1 is empty"),
            ("not-a-range", "x", "is not a step range", "is not a step range"),
            ("from-0", "0..2", "numbered from 1", "numbered from 1"),
            ("outside", "5..9", "outside the data", "steps 5..9 are outside the data"),
        ]
    ),
    ("estimate-steps-pair", lambda: tp.estimate("s.csv", steps=(1, 2, 3)), ["steps", "a pair"], None, []),
    ("estimate-cells-0", lambda: tp.estimate("s.csv", cells=0), ["cells", "0"], None, []),
    (
        "estimate-cells-too-many",
        lambda: tp.estimate("s.csv", cells=10**8),
        ["cells 100000000", "4096"],
        ["estimate", "--stream", "s.csv", "--out", "est", "--cells", "100000000"],
        ["--cells", "4096"],
    ),
    ("estimate-cells-true", lambda: tp.estimate("s.csv", cells=True), ["cells", "a whole number is needed"], None, []),
]

WHOLE_FILES = {
    "one.txt": "0.1\n",
    "plan.txt": "0.6\n0.6\n0.1\n",
    "plan2.txt": "0.6\n0.6\n",
    "short.txt": "0.5\n",
    "huge.json": "[1e308, 1e308]",
    "b.txt": "0.1\n0.2\n0.3\n",
    "r1.csv": "3,4,5\n",
    "plen.csv": "0.5,0.5\n",
    "psum.csv": "0.5,0.5,0.5\n",
    "pneg.csv": "-0.5,1,0.5\n",
    "prows.csv": "0.5,0.5,0\n0.5,0.5,0\n",
}


@pytest.mark.parametrize("case", WHOLE_CASES, ids=[c[0] for c in WHOLE_CASES])
def test_bad_arguments_are_refused_as_the_cli_refuses_them(number_inputs, cli, case):
    _, call, words, command, cli_words = case
    for name, text in WHOLE_FILES.items():
        write(number_inputs, name, text)
    message = refused(call, number_inputs)
    check_words(message, words, "package")
    assert "step 2: step 2" not in message and "step 1: step 1" not in message, message
    if command is not None:
        args = [number_inputs / a if isinstance(a, str) and (number_inputs / a).exists() else a for a in command]
        check_words(cli(*args), cli_words, "CLI")
    assert not (number_inputs / "s.db").exists()


# ---------------------------------------------------------------------------------------
# Files that are not streams (stream.rs files_that_are_not_streams_are_refused_and_left_alone,
# stream_errors_name_the_file_and_what_is_wrong, init_keeps_the_key_apart…): the same library
# opens them, so the CLI's message for `stream status --db F` is in the package's, whatever
# the call, and the file's bytes are unchanged.


@pytest.fixture(scope="module")
def not_streams(tmp_path_factory):
    folder = tmp_path_factory.mktemp("not-streams")
    noise = bytes(((i * 2654435761) >> 13) & 0xFF for i in range(4096))
    (folder / "random.db").write_bytes(noise)
    with sqlite3.connect(folder / "other.db") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    (folder / "empty.db").write_bytes(b"")
    (folder / "a-folder").mkdir()
    source = tmp_path_factory.mktemp("source")
    with tp.Stream.create(source / "s.db", "uniform", 1.0, 6) as s:
        for t in range(400):
            s.push([(t * 31 + j * 17) % 97 + (0 if t % 10 < 5 else 300) for j in range(20)], key=t)
    data = (source / "s.db").read_bytes()
    (folder / "cut.db").write_bytes(data[: len(data) // 2])
    (folder / "newer.db").write_bytes(data)
    with sqlite3.connect(folder / "newer.db") as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    return folder


NOT_STREAMS = [
    # (file, the class raised, words in both messages)
    ("random.db", tp.StreamDamagedError, ["not a tpl stream"]),
    ("other.db", tp.StreamDamagedError, ["not a tpl stream", "another program"]),
    ("empty.db", tp.StreamDamagedError, ["not a tpl stream"]),
    ("cut.db", tp.StreamDamagedError, ["damaged stream", "truncated"]),
    ("newer.db", tp.TplError, ["version 99"]),
    ("a-folder", tp.StreamDamagedError, ["directory"]),
    ("missing.db", tp.TplError, ["no such stream"]),
]

STREAM_OPS = [
    ("open", lambda p: tp.Stream.open(p), ["status"]),
    ("status", lambda p: tp.Stream.open(p).status(), ["status"]),
    ("steps", lambda p: tp.Stream.open(p).steps(), ["export"]),
    ("push", lambda p: tp.Stream.open(p).push([1, 2], key=1), ["push", "--counts", "<counts>", "--append"]),
    ("rekey", lambda p: tp.Stream.rekey(p), ["rekey"]),
]


@pytest.mark.parametrize("op", STREAM_OPS, ids=[o[0] for o in STREAM_OPS])
@pytest.mark.parametrize("case", NOT_STREAMS, ids=[c[0] for c in NOT_STREAMS])
def test_a_file_that_is_not_a_stream_is_refused_and_left_alone(not_streams, tmp_path, cli, case, op):
    name, error, words = case
    _, call, command = op
    path = not_streams / name
    message = refused(lambda: call(path), not_streams, error=error)
    check_words(message, [name] + words, "package")
    counts = write(tmp_path, "c.csv", "timestamp_bucket,c0,c1\n0,1,2\n")
    args = ["stream", command[0], "--db", path, *[counts if a == "<counts>" else a for a in command[1:]]]
    cli_message = cli(*args)
    check_words(cli_message, [name] + words, "CLI")
    # The same library refuses the file: the CLI's words whole (push adds what it recorded).
    assert cli_message.split(" (no step of this push")[0] in message, (cli_message, message)
    assert not (not_streams / "missing.db").exists() and not (not_streams / "missing.db.key").exists()


def test_streams_are_never_created_where_the_cli_would_not_create_them(tmp_path, cli):
    folder = tmp_path / "f"
    folder.mkdir()
    existing = write(folder, "exists.db", "x")
    cases = [
        # stream.rs stream_errors_name_the_file_and_what_is_wrong
        (
            lambda: tp.Stream.create(folder / "no-such-folder" / "s.db", "bd", 1.0, 2),
            stream_init(folder / "no-such-folder" / "s.db", "bd", "1", "2"),
            ["no-such-folder", "does not exist"],
        ),
        (
            lambda: tp.Stream.create(existing, "bd", 1.0, 2),
            stream_init(existing, "bd", "1", "2"),
            ["exists.db", "already exists"],
        ),
        (
            lambda: tp.Stream.create(folder, "bd", 1.0, 2),
            stream_init(folder, "bd", "1", "2"),
            ["already exists"],
        ),
        # The key: in a folder that does not exist, or over a file (a key is never written over).
        (
            lambda: tp.Stream.create(folder / "k.db", "bd", 1.0, 2, key_file=folder / "nope" / "k.key"),
            stream_init(folder / "k.db", "bd", "1", "2", "--key", folder / "nope" / "k.key"),
            ["k.key"],
        ),
        (
            lambda: tp.Stream.create(folder / "k.db", "bd", 1.0, 2, key_file=existing),
            stream_init(folder / "k.db", "bd", "1", "2", "--key", existing),
            ["exists.db", "a key file already exists"],
        ),
    ]
    for call, command, words in cases:
        check_words(refused(call, folder), words, "package")
        check_words(cli(*command), words, "CLI")
        assert sorted(os.listdir(folder)) == ["exists.db"], os.listdir(folder)


def test_a_push_without_its_key_names_the_key_file(tmp_path, cli):
    # stream.rs init_keeps_the_key_apart_rekey_rotates_it_and_a_failed_init_creates_nothing
    folder = tmp_path / "f"
    folder.mkdir()
    tp.Stream.create(folder / "s.db", "bd", 1.0, 3).close()
    (folder / "s.db.key").rename(tmp_path / "moved.key")
    keydir = tmp_path / "keydir"
    keydir.mkdir()
    for key_file, words in [(None, ["s.db.key", "stream key", "missing"]), (keydir, ["keydir", "stream key"])]:
        with tp.Stream.open(folder / "s.db", key_file=key_file) as s:
            check_words(refused(lambda: s.push([1, 2], key=0)), words, "package")
            assert s.status()["steps"] == 0
        assert not (folder / "s.db.key").exists()
    c = write(tmp_path, "c.csv", "timestamp_bucket,c0,c1\n0,1,2\n")
    check_words(
        cli("stream", "push", "--db", folder / "s.db", "--counts", c), ["s.db.key", "stream key", "missing"], "CLI"
    )


def test_a_closed_stream_refuses_every_call(tmp_path):
    s = tp.Stream.create(tmp_path / "s.db", "bd", 1.0, 3)
    s.close()
    for call in [
        lambda: s.push([1, 2], key=0),
        s.status,
        s.steps,
        s.estimates,
        s.update_estimates,
        lambda: s.intervals(0.9),
        lambda: s.smoothed(total=3),
    ]:
        check_words(refused(call, tmp_path), ["closed", "Stream.open"], "package")


def test_bad_push_arguments_are_named(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    with tp.Stream.create(folder / "s.db", "uniform", 1.0, 2) as s:
        cases = [
            (lambda: s.push([1, 2]), ["key: a key is required", 'key="next"']),
            (lambda: s.push([1, 2], key=-1), ["key", "-1"]),
            (lambda: s.push([1, 2], key=2**63), ["key", "9223372036854775808"]),
            (lambda: s.push([1, 2], key=True), ["key", "a whole number is needed"]),
            (lambda: s.push([1, 2], key="1"), ["key", "a whole number is needed"]),
            (lambda: s.push([1, 2], key=1.0), ["key", "a whole number is needed"]),
            (lambda: s.push([[1, 2]], key=1), ["counts", "1-D"]),
            (lambda: s.push([1, -2], key=1), ["counts: cell 1: count -2 is negative"]),
            (lambda: s.push([], key=1), ["counts", "empty"]),
            (lambda: s.intervals(2), ["level", "strictly between 0 and 1"]),
            (lambda: s.smoothed(), ["total", "give its population"]),
            (lambda: s.smoothed("magic", total=3), ["estimator", "magic"]),
        ]
        for call, words in cases:
            check_words(refused(call, folder), words, "package")
        assert s.status()["steps"] == 0


# ---------------------------------------------------------------------------------------
# User stream files and records (inputs.rs, compare.rs gap.csv, typed_values.rs, sparse.rs):
# estimate(path) and read_stream(path) read through the CLI's reader, so `tpl estimate
# --stream F`'s message is in theirs; estimate(records) checks the same records with the
# same library, so the words after the file's name are in its message.

USER_STREAMS = [
    # (file, content, the records (None: no array form), words of the CLI's message that the
    #  records' message holds)
    (
        "gap.csv",
        STREAM_HEADER + "600,1,0\n900,1,0\n1500,1,0\n",
        [[600, 1, 0], [900, 1, 0], [1500, 1, 0]],
        ["buckets have a gap: bucket 1200 never appears (buckets are steps of 300 from 600)"],
    ),
    (
        "missing.csv",
        STREAM_HEADER + "0,4,0\n0,9,0\n1,4,0\n",
        [[0, 4, 0], [0, 9, 0], [1, 4, 0]],
        ["user 9 never appears in bucket 1: a stream lists every user at every bucket"],
    ),
    (
        "gap2.csv",
        STREAM_HEADER + "0,0,1\n0,2,0\n1,0,1\n",
        [[0, 0, 1], [0, 2, 0], [1, 0, 1]],
        ["user 2 never appears in bucket 1"],
    ),
    ("twice.csv", STREAM_HEADER + "0,0,1\n0,0,1\n", [[0, 0, 1], [0, 0, 1]], ["user 0 appears twice in bucket 0"]),
    ("empty.csv", "", None, []),
    ("header-only.csv", STREAM_HEADER, np.zeros((0, 3), dtype=np.uint64), []),
    ("bad-header.csv", "a,b,c\n0,0,1\n", None, []),
    ("word.csv", STREAM_HEADER + "0,0,x\n", None, []),
    ("negative.csv", STREAM_HEADER + "0,-1,1\n", [[0, -1, 1]], ["-1"]),
    ("fraction.csv", STREAM_HEADER + "0,1,1.5\n", [[0, 1, 1.5]], ["1.5"]),
    ("beyond-u64.csv", STREAM_HEADER + "18446744073709551616,1,1\n", [[2**64, 1, 1]], ["18446744073709551616"]),
    ("short-row.csv", STREAM_HEADER + "0,1\n", [[0, 1]], []),
    (
        "many-cells.csv",
        STREAM_HEADER + "".join(f"0,{u},{u * 1000}\n" for u in range(5000)),
        [[0, u, u * 1000] for u in range(5000)],
        ["5000 distinct cells"],
    ),
    ("latin1.csv", STREAM_HEADER.encode() + b"0,1,\xff\n", None, []),
    ("a-folder", "<dir>", None, []),
    ("does-not-exist.csv", None, None, []),
]


@pytest.fixture(scope="module")
def user_streams(tmp_path_factory, cli):
    folder = tmp_path_factory.mktemp("user-streams")
    out = tmp_path_factory.mktemp("estimate-out") / "o"
    messages = {}
    for name, content, _, _ in USER_STREAMS:
        path = folder / name
        if isinstance(content, str) and content == "<dir>":
            path.mkdir()
        elif content is not None:
            write(folder, name, content)
        messages[name] = cli("estimate", "--stream", path, "--out", out)
    return folder, messages


STREAM_READERS = [
    ("estimate", lambda p: tp.estimate(p)),
    ("estimate-smoothed", lambda p: tp.estimate(p, smoothing=0.1, steps="1..")),
    ("read_stream", lambda p: tp.read_stream(p)),
]


@pytest.mark.parametrize("reader", STREAM_READERS, ids=[r[0] for r in STREAM_READERS])
@pytest.mark.parametrize("case", USER_STREAMS, ids=[c[0] for c in USER_STREAMS])
def test_a_bad_stream_file_gets_the_cli_message(user_streams, case, reader):
    folder, messages = user_streams
    name = case[0]
    message = refused(lambda: reader[1](folder / name), folder)
    assert message.startswith("stream: "), message
    cli_message = messages[name]
    # The CLI adds its own flag to one advice: "dense matrices stop at 4096; --sparse …".
    expected = cli_message.split(": dense matrices stop at")[0]
    assert expected in message, (cli_message, message)


@pytest.mark.parametrize("case", [c for c in USER_STREAMS if c[2] is not None], ids=lambda c: c[0])
def test_bad_stream_records_get_the_words_of_the_cli(case):
    name, _, records, words = case
    array = np.asarray(records, dtype=object) if name == "beyond-u64.csv" else np.asarray(records)
    message = refused(lambda: tp.estimate(array))
    assert message.startswith("stream: "), message
    check_words(message, words, "package")


def test_cells_and_columns_of_records_are_checked(tmp_path, cli):
    # inputs.rs: --cells 4 with an id beyond it, named.
    big = "18446744073709551614"
    path = write(tmp_path, "sparse.csv", STREAM_HEADER + f"600,7,{big}\n900,7,5\n")
    check_words(cli("estimate", "--stream", path, "--cells", "4", "--out", tmp_path / "o"), ["--cells 4", big], "CLI")
    for call in [
        lambda: tp.estimate(path, cells=4),
        lambda: tp.estimate(np.array([[600, 7, int(big)], [900, 7, 5]], dtype=np.uint64), cells=4),
    ]:
        message = refused(call, tmp_path)
        check_words(message, ["cells", "cells=4", big], "package")
    for call, words in [
        (lambda: tp.estimate([0, 1], user=[1], cell=[1, 2]), ["different lengths"]),
        (lambda: tp.estimate([0, 1], user=[1, 2]), ["user=", "cell="]),
        (lambda: tp.estimate(path, user=[1]), ["a path to a stream file takes no user= or cell="]),
        (lambda: tp.estimate(np.array([[0, 1, np.nan]])), ["row 1, column 3", "nan", "not a whole number"]),
        (lambda: tp.read_stream(3), ["path", "int"]),
        (lambda: tp.estimate(b"s.csv"), ["stream", "bytes"]),
    ]:
        check_words(refused(call, tmp_path), words, "package")


# matrices_from_transitions: no CLI command reads a table of transition counts (tpl estimate
# writes one), so the package's own words are checked: the argument and the value.

TRANSITION_COUNTS = [
    ("non-square", [[1, 2]], ["counts", "square", "(1, 2)"]),
    ("negative", [[1, -2], [0, 1]], ["counts: row 1, column 2", "-2", "transition counts"]),
    ("fraction", [[1, 2.5], [0, 1]], ["counts: row 1, column 2", "2.5", "transition counts"]),
    ("nan", [[1, np.nan], [0, 1]], ["counts: row 1, column 2", "nan"]),
    ("objects", np.array([[1, 0], [0, 1]], dtype=object), ["counts", "dtype object"]),
    ("too-many-cells", np.ones((4097, 4097), dtype=np.uint8), ["4097 cells", "4096"]),
    ("empty", np.empty((0, 0)), ["counts", "empty"]),
    ("one-dimensional", [1, 2], ["counts", "2-D"]),
    ("booleans", np.eye(2, dtype=bool), ["counts", "dtype bool"]),
    ("smoothing-negative", "smoothing", ["smoothing", "-1", "non-negative"]),
]


@pytest.mark.parametrize("case", TRANSITION_COUNTS, ids=[c[0] for c in TRANSITION_COUNTS])
def test_bad_transition_counts_are_named(case):
    name, counts, words = case
    if isinstance(counts, str):
        message = refused(lambda: tp.matrices_from_transitions([[1, 0], [0, 1]], smoothing=-1))
    else:
        message = refused(lambda: tp.matrices_from_transitions(counts))
    check_words(message, words, "package")
    # Regression: counts were called "ids and buckets".
    assert "ids and buckets" not in message, message


# ---------------------------------------------------------------------------------------
# Documentation: every public function and method says what it raises.


def _public_callables():
    out = []
    for name in tp.__all__:
        obj = getattr(tp, name)
        if callable(obj) and not isinstance(obj, type):
            out.append((name, obj))
    for name in [
        "create",
        "open",
        "rekey",
        "push",
        "update_estimates",
        "estimates",
        "intervals",
        "smoothed",
        "status",
        "steps",
    ]:
        out.append((f"Stream.{name}", getattr(tp.Stream, name)))
    out.append(("MatrixFile", tp.MatrixFile))
    return out


@pytest.mark.parametrize("name,obj", _public_callables(), ids=[n for n, _ in _public_callables()])
def test_every_public_function_says_what_it_raises(name, obj):
    doc = obj.__doc__ or ""
    assert "Raises:" in doc and "TplError" in doc.split("Raises:", 1)[1], f"{name}: no 'Raises: … TplError' section"


def test_the_module_docstring_says_every_function_raises_tplerror():
    doc = tp.__doc__ or ""
    assert "TplError" in doc and "StreamDamagedError" in doc, "the module's docstring says what the functions raise"
    assert "kalman" in get_args(tp.Estimator), "postprocess takes kalman"
