"""The Dockerfile as (INSTRUCTION, arguments) pairs, for the deploy and image tests."""

from __future__ import annotations


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile instruction: continuation lines joined, comments dropped
    (Docker drops comment lines inside a continued instruction too)."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
            continue
        current += line
        word, _, rest = current.partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out
