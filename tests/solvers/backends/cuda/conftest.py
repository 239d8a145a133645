"""Sets ``NUMBA_ENABLE_CUDASIM=1`` before any test module of this folder imports ``numba.cuda``
(see :mod:`.simulator`)."""

from . import simulator  # noqa: F401
