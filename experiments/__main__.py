"""``python -m experiments`` is the ``efce`` command (``python -m efce`` is the preferred name)."""

import sys

from efce.experiments.cli import main

sys.exit(main())
