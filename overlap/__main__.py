"""``python -m overlap``: the same as the ``overlap`` command."""

import sys

from .cli import main

sys.exit(main())
