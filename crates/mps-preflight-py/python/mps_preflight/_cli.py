"""The ``mps-preflight`` console command: the Rust binary's command line, in-process."""

from __future__ import annotations

import signal
import sys


def main() -> int:
    """Runs ``mps_preflight::run`` on ``sys.argv`` and returns its exit status."""
    from mps_preflight import _native

    # As for the binary, Ctrl-C ends the command at once (Python would otherwise wait for the
    # call to return, then raise KeyboardInterrupt).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Rust writes to the process's stdout and stderr directly: nothing of Python's may be
    # left in a buffer before it, or the two would interleave.
    sys.stdout.flush()
    sys.stderr.flush()
    status: int = _native.run_cli(["mps-preflight", *sys.argv[1:]])
    return status


if __name__ == "__main__":
    sys.exit(main())
