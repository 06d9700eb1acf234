"""``python -m pasarela.sandbox``: the same as ``pasarela sandbox``."""

import sys

from .server import main

sys.exit(main(prog="python -m pasarela.sandbox"))
