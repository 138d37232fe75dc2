"""``python -m mqcore``: see :mod:`mqcore.cli`."""

import sys

from mqcore.cli import main

sys.exit(main())
