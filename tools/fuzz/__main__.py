"""Entry point of ``python -m tools.fuzz``."""

import sys

from .cli import main

sys.exit(main())
