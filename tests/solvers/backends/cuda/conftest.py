"""Sets ``NUMBA_ENABLE_CUDASIM=1`` before any test module of this folder imports ``numba.cuda``
(see :mod:`.simulator`), and a short switch interval around each of its tests."""

import sys

import pytest

from . import simulator


@pytest.fixture(autouse=True)
def short_switch_interval():
    """:data:`.simulator.SWITCH_INTERVAL` during the test, the interpreter's own after it."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(simulator.SWITCH_INTERVAL)
    yield
    sys.setswitchinterval(before)
