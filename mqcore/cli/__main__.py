"""``python -m mqcore.cli``: the same as ``python -m mqcore``."""

import sys

from mqcore.cli import main

sys.exit(main())
