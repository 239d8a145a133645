"""The loop of :class:`baselines.backends.IsolatedWorker`'s process (``python -m baselines._worker``)."""


def serve() -> None:
    """The worker's loop: read ``(fn, args)``, write ``(ok, result or exception)``."""
    import pickle
    import sys
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything the backend prints must not corrupt the pipe
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
