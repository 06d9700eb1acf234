"""The argument parser of the sandbox's commands (``pasarela sandbox``, ``tail``, ``conformance``)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

__all__ = ["OneLineParser", "warn_secret_on_command_line"]


class OneLineParser(argparse.ArgumentParser):
    """A bad option is one line on stderr, naming it and what to give (the usage is 30 lines: ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def warn_secret_on_command_line(prog: str, option: str, variable: str) -> None:
    """A secret given as ``option`` is visible to every user of the machine (ps, /proc): say so on stderr, with
    the environment variable to use instead."""
    print(f"{prog}: warning: {option} on the command line is visible to other users of this machine "
          f"(ps, /proc); set ${variable} instead", file=sys.stderr)
