"""The ``mps-preflight`` console command: the Rust binary's command line, in-process."""

from __future__ import annotations

import errno
import os
import signal
import sys


def _open_standard_fds() -> None:
    """Points each closed standard descriptor (0, 1, 2) at ``/dev/null``, as Rust's runtime does
    for the binary before ``main``.

    Python leaves a descriptor closed at start-up closed (``sys.stdout`` is then ``None``). The
    first file the command opens would take its number: the evidence printed "on stdout" would
    land in the manifest's temporary file or a query's pipe. With ``/dev/null`` there, the
    command behaves like the binary: it writes its files, its output is discarded, and its exit
    status is the binary's.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError as error:
            if error.errno != errno.EBADF:
                continue
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:
                # The lower numbers are open (checked first), so `opened` is above `fd`.
                os.dup2(opened, fd)
                os.close(opened)
            else:
                os.set_inheritable(fd, True)


def _flush(stream: object) -> None:
    """Flushes a Python stream before Rust writes to the same descriptor; a stream that is
    missing (its descriptor was closed at start-up) or cannot be flushed is left alone."""
    flush = getattr(stream, "flush", None)
    if flush is None:
        return
    try:
        flush()
    except (OSError, ValueError):
        pass


def main() -> int:
    """Runs ``mps_preflight::run`` on ``sys.argv`` and returns its exit status."""
    _open_standard_fds()
    from mps_preflight import _native

    # As for the binary, Ctrl-C ends the command at once (Python would otherwise wait for the
    # call to return, then raise KeyboardInterrupt).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Rust writes to the process's stdout and stderr directly: nothing of Python's may be
    # left in a buffer before it, or the two would interleave.
    _flush(sys.stdout)
    _flush(sys.stderr)
    status: int = _native.run_cli(["mps-preflight", *sys.argv[1:]])
    return status


if __name__ == "__main__":
    sys.exit(main())
