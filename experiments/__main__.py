"""``python -m efce.experiments`` is the ``efce`` command (``python -m efce`` is the preferred name)."""

import sys

from efce.experiments.cli import main

# Guarded so that importing the module (the docs build imports every module) does not run the command.
if __name__ == "__main__":
    sys.exit(main())
