"""Command line (DESIGN.md 6.1, 6.5): ``estimate``, ``export``, ``plan``, ``advise``, ``tradeoffs``, ``presets``,
``calibrate``, ``explain-oom``; exit 2
with one line per input problem.

Each command lives in its own module, imported only when that command runs (``COMMANDS``): ``presets`` does
not import the memory model, ``estimate`` not the planner (issue #18: start-up time is import time).
"""

from __future__ import annotations

import importlib
import os
import sys

from calculator.cli.parsers import build_parser
from calculator.cli.terminal import err
from calculator.errors import InputError

# command -> module with ``run(args) -> exit code``
COMMANDS = {
    "estimate": "calculator.cli.estimate",
    "export": "calculator.cli.export",
    "plan": "calculator.cli.plan",
    "advise": "calculator.cli.plan",
    "tradeoffs": "calculator.cli.plan",
    "presets": "calculator.cli.presets",
    "calibrate": "calculator.cli.calibrate",
    "explain-oom": "calculator.cli.calibrate",
}


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured by a test)
        pass


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return importlib.import_module(COMMANDS[args.command]).run(args)
    except InputError as error:
        for problem in error.problems:
            err(f"error: {problem}")
        return 2
    except RecursionError:
        err("error: input nested too deeply")
        return 2
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as other CLI tools do
        _silence_stdout()
        return 1
