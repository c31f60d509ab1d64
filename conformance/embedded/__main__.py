"""``python -m conformance.embedded [serve options]`` is ``memspec serve [serve options]``."""

from __future__ import annotations

import sys

from conformance.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
