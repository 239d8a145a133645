"""``python -m efce`` is the ``efce`` command."""

import sys

from experiments.cli import main

sys.exit(main())
