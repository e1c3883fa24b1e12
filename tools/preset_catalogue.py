"""``presets/<kind>/catalogue.json``: the shipped preset YAML files, parsed (``calculator.inputs.catalogue``, #18).

``python -m tools.preset_catalogue`` checks that each kind's catalogue equals what its YAML files parse to (exit 1
and the files that differ); ``--write`` rewrites them. Run ``--write`` after adding or editing a file under
``presets/{gpus,models,scenarios}/``: until then that file is parsed from YAML at every start (same result,
slower) and ``tests/inputs/test_catalogue.py`` fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from calculator.inputs.catalogue import CATALOGUE_NAME, KINDS, catalogue_text
from calculator.inputs.presets import PRESETS_DIR


def _text(value: object) -> str:
    """Compared as JSON text: 1 and 1.0, 1 and true differ."""
    return json.dumps(value, sort_keys=True)


def stale_files(presets_dir: Path = PRESETS_DIR) -> list[str]:
    """``kind/file`` of each entry that differs between the catalogues on disk and the YAML files (empty: current)."""
    out: list[str] = []
    for kind in KINDS:
        path = presets_dir / kind / CATALOGUE_NAME
        want = json.loads(catalogue_text(presets_dir, kind))
        have = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        out += [f"{kind}/{CATALOGUE_NAME}: {key}" for key in want if key != "files" and have.get(key) != want[key]]
        old = have.get("files") if isinstance(have.get("files"), dict) else {}
        new = want["files"]
        out += [
            f"{kind}/{name}" for name in sorted(set(new) | set(old)) if _text(new.get(name)) != _text(old.get(name))
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite presets/<kind>/catalogue.json")
    args = ap.parse_args(argv)
    if args.write:
        for kind in KINDS:
            path = PRESETS_DIR / kind / CATALOGUE_NAME
            path.write_text(catalogue_text(PRESETS_DIR, kind), encoding="utf-8")
            print(f"wrote {path}")
        return 0
    stale = stale_files()
    for name in stale:
        print(f"stale: {name}")
    if stale:
        print("run: python -m tools.preset_catalogue --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
