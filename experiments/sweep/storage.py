"""Results on disk: one JSON record per run under ``DIR/runs/``, written atomically."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable

from efce.games.formats.jsonfile import read_json
from efce.games.resources.atomic import atomic_open
from efce.solvers.result import finite_json


def runs_folder(out_dir: str) -> str:
    return os.path.join(out_dir, "runs")


def write_record(out_dir: str, record: dict) -> str:
    """Write ``runs/<key>.json`` atomically (a temporary file renamed into place)."""
    folder = runs_folder(out_dir)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, record["key"] + ".json")
    with atomic_open(path, "w") as fh:
        json.dump(finite_json(record), fh, allow_nan=False)
    return path


def load_records(
    out_dir: str, keys: Iterable[str] | None = None, set_aside: list[str] | None = None
) -> list[dict]:
    """The run records of a sweep folder (``runs/*.json``), optionally only those of ``keys``
    (in that order).

    A damaged record (a crash while it was copied, a hand edit) is set aside as
    ``<key>.json.damaged``, so that its run counts as not done (``--resume`` redoes it), and one
    line saying so is appended to ``set_aside`` (the caller tells the user; no warning is
    raised: under ``PYTHONWARNINGS=error`` a warning would end the sweep)."""
    folder = runs_folder(out_dir)
    if keys is not None:
        paths = [os.path.join(folder, k + ".json") for k in keys]
    else:
        paths = (
            sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json"))
            if os.path.isdir(folder)
            else []
        )
    records = []
    for path in paths:
        if not os.path.isfile(path):
            continue
        try:
            record = read_json(path, f"run record {path}")
            if not isinstance(record, dict) or "key" not in record:
                raise ValueError("not a run record")
        except ValueError as exc:  # the guarded reader's refusals are GameErrors, ValueErrors too
            # A damaged record (a crash while it was copied, a hand edit) must neither block the
            # sweep nor count as done: set it aside under a name that is no record, so its run
            # is redone on --resume.
            aside = path + ".damaged"
            with contextlib.suppress(OSError):
                os.replace(path, aside)
            if set_aside is not None:
                set_aside.append(
                    f"damaged run record {path} ({str(exc).splitlines()[0][:80]}); moved to "
                    f"{aside}, its run is redone"
                )
            continue
        records.append(record)
    return records


def finished(record: dict) -> bool:
    """A record of a run that needs no rerun: the child ended on its own (whatever its status,
    including the method's own errors), not lost or interrupted."""
    return record.get("outcome") == "finished"
