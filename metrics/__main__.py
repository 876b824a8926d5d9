"""``python -m metrics``: see ``metrics.cli``."""

import sys

from .cli import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
