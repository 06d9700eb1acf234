"""The argument parser of the sandbox's commands (``pasarela sandbox``, ``tail``, ``conformance``)."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["OneLineParser"]


class OneLineParser(argparse.ArgumentParser):
    """A bad option is one line on stderr, naming it and what to give (the usage is 30 lines: ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
