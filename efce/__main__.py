"""``python -m efce`` is the ``efce`` command."""

import sys

from efce.experiments.cli import main

sys.exit(main())
