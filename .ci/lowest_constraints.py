"""Print a pip constraints file that pins every direct dependency to the lower bound of its range.

CI installs the project with it (``pip install -c FILE -e ".[test]"``) to check that the lower
ends of the ranges in pyproject.toml are honest; a range without a lower bound is an error here.
"""

import re
import sys
import tomllib

with open(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml", "rb") as fh:
    project = tomllib.load(fh)["project"]
requirements = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
for requirement in requirements:
    match = re.fullmatch(
        r"\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:,.*)?", requirement
    )
    if not match:
        sys.exit(f"no lower bound in the requirement {requirement!r}")
    print(f"{match[1]}=={match[2]}")
