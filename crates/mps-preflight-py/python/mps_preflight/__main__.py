"""``python -m mps_preflight``: the ``mps-preflight`` command line."""

import sys

from mps_preflight._cli import main

sys.exit(main())
