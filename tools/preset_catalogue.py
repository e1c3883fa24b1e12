"""``presets/catalogue.json``: the shipped preset YAML files, parsed (``calculator.inputs.catalogue``, issue #18).

``python -m tools.preset_catalogue`` checks that the catalogue equals what the YAML files parse to (exit 1 and
the files that differ); ``--write`` rewrites it. Run ``--write`` after adding or editing a file under
``presets/{gpus,models,scenarios}/``: until then that file is parsed from YAML at every start (same result,
slower) and ``tests/inputs/test_catalogue.py`` fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from calculator.inputs.catalogue import CATALOGUE_NAME, catalogue_text
from calculator.inputs.presets import PRESETS_DIR


def _text(value: object) -> str:
    """Compared as JSON text: 1 and 1.0, 1 and true differ."""
    return json.dumps(value, sort_keys=True)


def stale_files(presets_dir: Path = PRESETS_DIR) -> list[str]:
    """``kind/file`` of each entry that differs between the catalogue on disk and the YAML files (empty: current)."""
    path = presets_dir / CATALOGUE_NAME
    want = json.loads(catalogue_text(presets_dir))
    have = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    out = [key for key in want if not isinstance(want[key], dict) and _text(have.get(key)) != _text(want[key])]
    for kind, entries in want.items():
        if isinstance(entries, dict):
            old = have.get(kind) if isinstance(have.get(kind), dict) else {}
            out += [
                f"{kind}/{name}"
                for name in sorted(set(entries) | set(old))
                if _text(entries.get(name)) != _text(old.get(name))
            ]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite presets/catalogue.json")
    args = ap.parse_args(argv)
    if args.write:
        (PRESETS_DIR / CATALOGUE_NAME).write_text(catalogue_text(PRESETS_DIR), encoding="utf-8")
        print(f"wrote {PRESETS_DIR / CATALOGUE_NAME}")
        return 0
    stale = stale_files()
    for name in stale:
        print(f"stale: {name}")
    if stale:
        print("run: python -m tools.preset_catalogue --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
