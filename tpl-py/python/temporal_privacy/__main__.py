"""``python -m temporal_privacy --version``: the package's version and where it is installed
(what a bug report needs); ``python -m temporal_privacy`` alone says what the package is."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__, _native


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m temporal_privacy",
        description="temporal_privacy: differential privacy under temporal correlations, on numpy arrays "
        "(the Python package of tpl). Import it: `import temporal_privacy as tp`.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and where the package is installed")
    args = parser.parse_args(argv)
    if args.version:
        print(f"temporal_privacy {__version__}")
        print(f"native module: {Path(_native.__file__).name}")
        print(f"installed at: {Path(__file__).resolve().parent}")
        print(f"python: {sys.version.split()[0]}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
