"""The shipped presets, already parsed: ``presets/<kind>/catalogue.json`` (issue #18, CLI start-up).

Every command reads every shipped preset file (58 YAML files: the catalogues, and the ids a scenario names),
and parsing them took longer than the rest of an estimate, plus PyYAML's import. A kind's catalogue holds, for
each shipped file of that kind, the file's text and the mapping that text parses to. A preset is still read from
its file (``calculator.inputs.readers.read_file_text``, the same bounds and directory check) and validated by its
model as before; only the YAML parse is skipped, and only when the file's text is exactly the recorded one. A file
edited since the catalogue was written, a file the catalogue does not list, a team's file (``$RLPLAN_PRESETS_DIR``)
and a catalogue that cannot be read are parsed from YAML as before: a stale catalogue makes loading slower, never
different. (The text is compared, not a hash of it: equal texts parse equal, and no hash library is imported.)

It is checked into the repository (never written at run time): ``python -m tools.preset_catalogue --write``
writes it after a preset file changed, and ``tests/inputs/test_catalogue.py`` fails until it equals what the
YAML files parse to. A file whose YAML value JSON cannot carry exactly (a date, a non-string key) is left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calculator.errors import InputError
from calculator.inputs.limits import MAX_PRESET_FILES
from calculator.inputs.readers import read_file_text, read_json_text, read_yaml_text, yaml_files

CATALOGUE_NAME = "catalogue.json"
KINDS = ("gpus", "models", "scenarios")
_FORMAT = 1
_NOTE = "Generated from the YAML files beside it: edit those, then run python -m tools.preset_catalogue --write."


def load_catalogue(presets_dir: Path, kind: str) -> dict[str, dict[str, Any]]:
    """file name -> ``{"text": ..., "data": {...}}`` of one kind; empty when the catalogue is missing,
    unreadable or of another format (the presets are then parsed from YAML). Fresh objects on every call."""
    what = f"presets/{kind}/{CATALOGUE_NAME}"
    try:
        catalogue = read_json_text(
            read_file_text(presets_dir / kind / CATALOGUE_NAME, what, within=[presets_dir]), what
        )
    except InputError:
        return {}
    if not isinstance(catalogue, dict) or catalogue.get("format") != _FORMAT:
        return {}
    files = catalogue.get("files")
    return files if isinstance(files, dict) else {}


def cached_mapping(entry: Any, text: str) -> dict[str, Any] | None:
    """The recorded mapping of a file whose text is ``text``, or None when the entry is absent or the text
    changed (the file is then parsed)."""
    if not isinstance(entry, dict) or entry.get("text") != text:
        return None
    data = entry.get("data")
    return data if isinstance(data, dict) else None


def _json_exact(value: Any) -> bool:
    """Whether JSON gives ``value`` back with the same types (bool stays bool, int int, str keys only)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_exact(v) for v in value)
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    return value is None or isinstance(value, (bool, int, str))


def build_catalogue(presets_dir: Path, kind: str) -> dict[str, Any]:
    """The catalogue of the YAML files now in ``presets_dir / kind`` (parsed with the bounded YAML reader). Files
    that do not parse to a mapping JSON can carry exactly are left out (read from YAML at run time)."""
    files: dict[str, Any] = {}
    for f in yaml_files(presets_dir / kind, MAX_PRESET_FILES)[0]:
        text = read_file_text(f, f"{kind} preset {f.name}", within=[presets_dir])
        data = read_yaml_text(text, f"{kind} preset {f.name}")
        if isinstance(data, dict) and _json_exact(data):
            files[f.name] = {"text": text, "data": data}
    return {"format": _FORMAT, "note": _NOTE, "files": files}


def catalogue_text(presets_dir: Path, kind: str) -> str:
    """``build_catalogue`` as the file holds it (keys in file order, UTF-8, one trailing newline)."""
    return json.dumps(build_catalogue(presets_dir, kind), indent=1, ensure_ascii=False) + "\n"
