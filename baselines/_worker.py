"""The loop of :class:`baselines.backends.IsolatedWorker`'s process (``python -m efce.baselines._worker``)."""


def serve() -> None:
    """The worker's loop: read ``(fn, args)``, write ``(ok, result or exception)``."""
    import os
    import pickle
    import sys
    stdin = sys.stdin.buffer
    # The replies go through a private copy of the pipe; file descriptor 1 itself, where C
    # libraries print (HiGHS's banner), and Python's sys.stdout are sent to stderr.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
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
