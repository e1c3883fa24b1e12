"""The README's "real output" blocks, generated from the program so that they cannot drift.

A block is a fenced code block between two markers; the opening marker names the command::

    <!-- example: python -m calculator estimate qwen2.5-7b-grpo-8xh100 -->
    ```
    $ python -m calculator estimate qwen2.5-7b-grpo-8xh100
    ...what the command prints...
    ```
    <!-- /example -->

``python -m tools.readme_examples`` checks every block (exit 1 and the commands whose output changed);
``--write`` reruns each command and rewrites its block. ``tests/test_readme.py`` runs the same check. Commands are
``python -m calculator ...`` only (run with this interpreter from the repository root, without the team preset
directory), split like a shell would (``shlex``), never through a shell.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"<!-- example: (?P<cmd>[^\n]+?) -->\n```\n(?P<body>.*?)```\n<!-- /example -->", re.S)
PREFIX = "python -m calculator "


@dataclass(frozen=True)
class Example:
    command: str
    shown: str  # the block's text as the README has it


def examples(text: str) -> list[Example]:
    return [Example(m["cmd"], m["body"]) for m in BLOCK.finditer(text)]


def run(command: str) -> str:
    """The block text for ``command``: the prompt line, then what the command prints (stdout, then stderr)."""
    if not command.startswith(PREFIX):
        raise ValueError(f"README example {command!r}: only '{PREFIX}...' commands are run")
    env = {k: v for k, v in os.environ.items() if k != "RLPLAN_PRESETS_DIR"} | {"PYTHONIOENCODING": "utf-8"}
    argv = [sys.executable, "-m", "calculator", *shlex.split(command[len(PREFIX) :])]
    res = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return f"$ {command}\n{res.stdout}{res.stderr}"


def rewrite(text: str) -> str:
    return BLOCK.sub(lambda m: f"<!-- example: {m['cmd']} -->\n```\n{run(m['cmd'])}```\n<!-- /example -->", text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite README.md's example blocks")
    args = ap.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    if args.write:
        new = rewrite(text)
        README.write_text(new, encoding="utf-8")
        print(f"{len(examples(new))} README examples written")
        return 0
    stale = [e.command for e in examples(text) if run(e.command) != e.shown]
    for command in stale:
        print(f"stale README example: {command} (python -m tools.readme_examples --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
