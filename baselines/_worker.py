"""The loop of :class:`baselines.backends.IsolatedWorker`'s process (``python -m efce.baselines._worker``)."""


def serve() -> None:
    """The worker's loop: read ``(fn, args)``, write ``(ok, result or exception)``."""
    import os
    import pickle
    import sys

    stdin = sys.stdin.buffer
    # The replies go through a private copy of the pipe; file descriptor 1 itself, where C
    # libraries print (HiGHS's banner), and Python's sys.stdout are sent to stderr.
    import signal

    # The caller decides when a call ends (it kills this process on a stop request): Ctrl-C or
    # SIGTERM sent to the whole process group must neither end it with a traceback nor turn the
    # caller's "interrupted" into "the worker died"; on Linux the worker dies with its caller
    # instead of computing for nobody.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # started with both blocked (IsolatedWorker): now safe
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        pass
    replies = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with os.fdopen(replies, "wb") as stdout:  # closed at the end (no ResourceWarning)
        while True:
            try:
                fn, args = pickle.load(stdin)
            except EOFError:
                return
            try:
                reply = (True, fn(*args))
            except Exception as exc:  # sent back and re-raised by the caller
                reply = (False, exc)
            pickle.dump(reply, stdout, protocol=pickle.HIGHEST_PROTOCOL)
            stdout.flush()


if __name__ == "__main__":
    serve()
