"""``python -m experiments`` is the ``efce`` command."""

import sys

from experiments.cli import main

sys.exit(main())
