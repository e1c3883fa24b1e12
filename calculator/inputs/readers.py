"""Bounded readers: every file and every YAML / JSON text rlplan reads goes through here.

* :func:`read_file_text`: a regular file only (a FIFO, a device, a directory or a socket is refused before a
  byte is read, so ``/dev/zero``, ``/dev/urandom`` and a named pipe cannot hang or exhaust a process), at most
  ``MAX_INPUT_BYTES`` read, UTF-8; with ``within``, a symbolic link that leads outside those directories is
  refused (a team's preset directory cannot point the server at ``/etc``).
* :func:`read_yaml_text`: no tags that build Python objects, bounded size and nesting, aliases bounded by the
  number of values they expand to (a "billion laughs" document is refused before anything walks it), integers
  bounded in digits.
* :func:`read_json_text`: the same bounds for JSON (the C decoder; surrogate-pair escapes are valid JSON).
* :func:`dump_yaml`: the writing side: PyYAML's safe emitter, with strings that hold U+0085, U+2028 or U+2029
  double-quoted (the plain emitter writes them raw inside single quotes, and they read back as spaces).

The YAML side lives in :mod:`calculator.inputs.yaml_text`, loaded on the first YAML text read or written: a
command that reads none (``presets``, ``estimate PRESET``, from the preset catalogue) never imports PyYAML.

Each refusal is an :class:`InputError` with one line naming the input; :class:`RefusedInput` (a subclass)
marks the ones refused for their shape or content rather than for a syntax error, so that a caller that tries
several formats (the verl importer) can tell "not YAML" from "YAML we will not read".
"""

from __future__ import annotations

import importlib
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calculator.errors import InputError
from calculator.inputs.limits import MAX_INPUT_BYTES, MAX_INT_DIGITS, MAX_NESTING

MAX_YAML_BYTES = MAX_INPUT_BYTES  # kept for callers of the earlier name


class RefusedInput(InputError):
    """Input refused for its shape or content (over a bound, a tag that builds objects), not for bad syntax."""


def _int_too_long(text: str) -> bool:
    digits = sum(ch.isdigit() for ch in text[: MAX_INT_DIGITS + 64])
    return digits > MAX_INT_DIGITS


def _too_long_message() -> str:
    return f"an integer with more than {MAX_INT_DIGITS:,} digits"


# ----------------------------------------------------------------------------- YAML


def _too_large(text: str, max_bytes: int) -> bool:
    return len(text) > max_bytes or (4 * len(text) > max_bytes and len(text.encode("utf-8", "replace")) > max_bytes)


def size_text(max_bytes: int) -> str:
    """``2 MiB`` / ``64 KiB``: a byte cap as it appears in refusals."""
    return f"{max_bytes // 2**20} MiB" if max_bytes % 2**20 == 0 else f"{max_bytes // 1024} KiB"


_size_text = size_text  # earlier private name


def _yaml() -> Any:
    """:mod:`calculator.inputs.yaml_text`, imported on first use (PyYAML is not loaded until a YAML text is)."""
    return importlib.import_module("calculator.inputs.yaml_text")


def read_yaml_text(text: str, what: str, *, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Parse YAML safely: no tags that build objects, bounded size and nesting, alias bombs refused.
    Raises :class:`InputError` naming ``what`` (:class:`RefusedInput` when refused rather than malformed).
    (``calculator.inputs.yaml_text``, loaded on the first call.)"""
    return _yaml().read_yaml_text(text, what, max_bytes=max_bytes)


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump`` (block style, Unicode kept) that every string survives: ``safe_load`` gives ``data``
    back. ``options`` go to the emitter (``sort_keys``, ``width``...). (``calculator.inputs.yaml_text``.)"""
    return _yaml().dump_yaml(data, **options)


# ----------------------------------------------------------------------------- JSON


def _check_nesting(data: Any, what: str) -> None:
    """Refuse parsed JSON nested deeper than ``MAX_NESTING`` (iterative: safe at any depth)."""
    stack = [(data, 1)]
    while stack:
        obj, depth = stack.pop()
        if isinstance(obj, dict):
            children: Any = obj.values()
        elif isinstance(obj, list):
            children = obj
        else:
            continue
        if depth > MAX_NESTING:
            raise RefusedInput(f"{what}: nested deeper than {MAX_NESTING} levels")
        stack.extend((child, depth + 1) for child in children)


class _IntTooLong(ValueError):
    pass


def _json_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise _IntTooLong(text)
    return int(text)


def read_json_text(text: str, what: str, *, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Parse JSON with the same bounds as :func:`read_yaml_text` (size, nesting, integer digits). Raises
    :class:`InputError` naming ``what`` and, for a syntax error, the line and column."""
    if _too_large(text, max_bytes):
        raise RefusedInput(f"{what}: larger than {size_text(max_bytes)}")
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from None
    except _IntTooLong:
        raise RefusedInput(f"{what}: not valid JSON ({_too_long_message()})") from None
    except RecursionError:  # the C decoder stops at Python's recursion limit (~1000 levels)
        raise RefusedInput(f"{what}: nested deeper than {MAX_NESTING} levels") from None
    except ValueError:  # no other conversion is expected; never echo Python's own advice text
        raise InputError(f"{what}: not valid JSON (a value that cannot be converted)") from None
    _check_nesting(data, what)
    return data


# ----------------------------------------------------------------------------- files

_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _resolve_within(path: Path, what: str, within: Sequence[Path]) -> Path:
    """The real path of ``path``, which must lie inside one of ``within`` (symbolic links followed)."""
    roots = [Path(os.path.realpath(r)) for r in within]
    real = Path(os.path.realpath(path))
    if not _inside(real, roots):
        raise RefusedInput(f"{what}: cannot read (a link to a file outside the preset directories)")
    return real


def _read_fd(fd: int, what: str, max_bytes: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # checked on the open file: no race with a swapped path
        raise RefusedInput(f"{what}: cannot read ({_kind(info.st_mode)}, not a regular file)")
    if info.st_size > max_bytes:
        raise RefusedInput(f"{what}: larger than {size_text(max_bytes)}")
    chunks: list[bytes] = []
    left = max_bytes + 1  # one more than allowed: a file that grew while read is still caught
    while left > 0:
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise RefusedInput(f"{what}: larger than {size_text(max_bytes)}")
    return data


def read_file_text(
    path: str | Path, what: str | None = None, *, within: Sequence[Path] | None = None, max_bytes: int = MAX_INPUT_BYTES
) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes``. The file is opened non-blocking (a FIFO
    cannot hold the thread) and checked on the open descriptor before anything is read. With ``within``,
    the file's real path must lie inside one of those directories. Raises :class:`InputError` naming ``what``."""
    p = Path(path)
    what = what or str(p)
    try:
        target = _resolve_within(p, what, within) if within is not None else p
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            data = _read_fd(fd, what, max_bytes)
        finally:
            os.close(fd)
        return data.decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{what}: file not found") from None
    except UnicodeDecodeError:
        raise InputError(f"{what}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read ({exc.__class__.__name__})") from None


def read_mapping_file(
    path: str | Path, what: str | None = None, *, within: Sequence[Path] | None = None
) -> dict[str, Any]:
    """Read a YAML or JSON file (by suffix: ``.json`` is read as JSON) that must hold a mapping; at most
    ``MAX_INPUT_BYTES`` are ever read, and only from a regular file."""
    p = Path(path)
    what = what or str(p)
    return mapping_from_text(read_file_text(p, what, within=within), what, is_json=p.suffix.lower() == ".json")


def mapping_from_text(text: str, what: str, *, is_json: bool = False) -> dict[str, Any]:
    """A file's text parsed as YAML (or JSON) that must hold a mapping (:func:`read_mapping_file`'s parse)."""
    if not text.strip():
        data = None  # an empty file: "must be a mapping" below, in either format
    elif is_json:
        data = read_json_text(text, what)
    else:
        data = read_yaml_text(text, what)
    if not isinstance(data, dict):
        raise InputError(f"{what}: must be a mapping of fields, got {type(data).__name__}")
    return data


# ----------------------------------------------------------------------------- writing

_SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def write_new_text_file(
    directory: str | Path, name: str, text: str, what: str = "file", *, replace: bool = False
) -> Path:
    """Create ``directory/name`` holding ``text`` (UTF-8) and return its path. ``name`` is a plain file name
    (letters, digits, ``.``, ``_``, ``-``; no path separator, not starting with ``.``), the file must not exist
    (``O_EXCL``: an existing file or a planted symbolic link is never overwritten or followed), the directory is
    created if missing, and the text is at most ``MAX_INPUT_BYTES``. ``replace=True`` (a confirmed overwrite) first
    removes an existing regular file of that name (never a symbolic link, never a directory)."""
    if not name or name.startswith(".") or len(name) > 200 or not set(name) <= _SAFE_NAME_CHARS:
        raise InputError(f"{what}: {name!r} is not a plain file name")
    data = text.encode("utf-8")
    if len(data) > MAX_INPUT_BYTES:
        raise RefusedInput(f"{what}: larger than {size_text(MAX_INPUT_BYTES)}")
    d = Path(directory)
    try:
        old = d / name
        if replace and old.is_file() and not old.is_symlink():
            old.unlink()
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise InputError(f"{what}: {name} already exists") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot write ({exc.__class__.__name__})") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return d / name


def yaml_files(d: Path, limit: int) -> tuple[list[Path], int]:
    """The ``*.yaml`` / ``*.yml`` files directly in ``d`` (sorted, at most ``limit``) and how many more there
    were; none when ``d`` is not a directory. Listing only: each file is read with :func:`read_mapping_file`."""
    if not d.is_dir():
        return [], 0
    files = sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml"))
    return files[:limit], max(0, len(files) - limit)


def regular_file_exists(path: Path) -> bool:
    """Whether ``path`` is a regular file that is not a symbolic link (nothing is read)."""
    return path.is_file() and not path.is_symlink()
