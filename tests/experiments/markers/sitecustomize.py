"""Start-up hook of the processes of the signal tests: Python imports ``sitecustomize`` when it
starts, and :func:`tests.experiments.signals.marker_environment` puts this folder first on the
``PYTHONPATH`` of the ``efce`` process a test starts (inherited by its children: ``compare``'s
runs, an LP's worker).  With ``EFCE_TEST_MARKERS`` naming a file, each process appends a line
``PID EVENT DETAIL`` to it when it reaches a point a test waits for before sending a signal:

* ``handlers``: the signal contract is in force (:func:`efce.interrupts.stop_on_signals`);
* ``honouring``: an iteration loop honours a stop at its next boundary (its iteration 2 on,
  :func:`efce.interrupts.honouring`);
* ``phase WHAT``: a build reached its first stop check of the phase ``WHAT``
  (:func:`efce.interrupts.check_stop`), e.g. ``phase decomposing battleship:...``.

``honouring`` and ``phase`` are not noted inside a method's warm-up
(:func:`efce.solvers.warm_up.warm_up_run`, which runs the method on a tiny game before the real
run): a signal sent there would stop the warm-up, not the run the test is about.

The hooks wrap those functions of :mod:`efce.interrupts` before any module of the toolkit imports
them; the toolkit itself knows nothing of the markers."""

import os


def _install(path: str) -> None:
    import contextlib

    from efce import interrupts

    def in_warm_up() -> bool:
        import sys

        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "warm_up_run" and frame.f_code.co_filename.endswith("warm_up.py"):
                return True
            frame = frame.f_back
        return False

    def note(event: str, detail: str = "") -> None:
        line = f"{os.getpid()} {event} {detail}".rstrip() + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)

    stop_on_signals, honouring, check_stop = (
        interrupts.stop_on_signals,
        interrupts.honouring,
        interrupts.check_stop,
    )

    @contextlib.contextmanager
    def noted_stop_on_signals(*args, **kwargs):
        with stop_on_signals(*args, **kwargs):
            note("handlers")
            yield

    @contextlib.contextmanager
    def noted_honouring():
        with honouring():
            if not in_warm_up():
                note("honouring")
            yield

    phases = set()

    def noted_check_stop(what: str = "") -> None:
        if what not in phases and not in_warm_up():
            phases.add(what)
            note("phase", what)
        check_stop(what)

    interrupts.stop_on_signals = noted_stop_on_signals
    interrupts.honouring = noted_honouring
    interrupts.check_stop = noted_check_stop


if os.environ.get("EFCE_TEST_MARKERS"):
    _install(os.environ["EFCE_TEST_MARKERS"])
