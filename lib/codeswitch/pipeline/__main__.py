"""``python -m codeswitch.pipeline``: the CLI behind ``./reproduce.sh`` (:mod:`codeswitch.pipeline.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
