"""The YAML side of :mod:`calculator.inputs.readers`: PyYAML's safe loader, bounded, and its safe dumper.

Imported on the first YAML text read or written (``readers.read_yaml_text`` / ``readers.dump_yaml`` load this
module by name), not when the calculator starts: with the shipped presets read from their checked JSON
catalogue (``calculator.inputs.catalogue``), ``python -m calculator presets`` and ``estimate PRESET`` never
import PyYAML (issue #18, CLI start-up is import time).

* :func:`read_yaml_text`: no tags that build Python objects, bounded size and nesting, aliases bounded by the
  number of values they expand to (a "billion laughs" document is refused before anything walks it), integers
  bounded in digits.
* :func:`dump_yaml`: PyYAML's safe emitter, with strings that hold U+0085, U+2028 or U+2029 double-quoted (the
  plain emitter writes them raw inside single quotes, and they read back as spaces).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from calculator.inputs.limits import MAX_INPUT_BYTES, MAX_NESTING, MAX_YAML_VALUES
from calculator.inputs.readers import InputError, RefusedInput, _int_too_long, _too_large, _too_long_message, size_text


class _Refused(yaml.YAMLError):
    """A YAML document refused for its shape (too deep, too many values after alias expansion)."""


def _yaml_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expanded(root: yaml.Node) -> None:
    """Refuse a composed document whose alias expansion is too large, too deep or recursive.

    An alias is a reference to an anchored node, so a few hundred bytes can stand for 10**9 values
    ("billion laughs"); PyYAML builds them as shared references, and the blow-up happens later in
    whatever walks the result (validation, repr, json.dumps). Sizes and heights are memoised per
    node, so this costs one visit per node written in the document, and the recursion is at most
    ``MAX_NESTING`` deep (a path is refused as soon as it gets deeper).
    """
    memo: dict[int, tuple[int, int]] = {}  # id(node) -> (values after expansion, height)
    active: set[int] = set()

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in memo:
            count, height = memo[key]
        else:
            if key in active:
                raise _Refused("a YAML alias refers to a node that contains it (recursive alias)")
            if depth > MAX_NESTING:
                raise _Refused(f"nested deeper than {MAX_NESTING} levels once YAML aliases are expanded")
            active.add(key)
            count, height = 1, 1
            for child in _yaml_children(node):
                c, h = visit(child, depth + 1)
                count += c
                height = max(height, h + 1)
                if count > MAX_YAML_VALUES:
                    raise _Refused(
                        f"more than {MAX_YAML_VALUES:,} values once YAML aliases are expanded (an alias bomb?)"
                    )
            active.discard(key)
            memo[key] = (count, height)
        if depth + height - 1 > MAX_NESTING:
            raise _Refused(f"nested deeper than {MAX_NESTING} levels once YAML aliases are expanded")
        return count, height

    visit(root, 1)


class _PyEventParser(Reader, Scanner, Parser):
    """PyYAML's pure-Python event parser (used when libyaml is not installed)."""

    def __init__(self, stream: Any) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


try:  # libyaml's event parser (~10x faster); composing stays in Python so that it can be bounded
    from yaml.cyaml import CParser as _EventParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _EventParser = _PyEventParser  # type: ignore[misc,assignment]


class _IntTooLongYaml(yaml.YAMLError):
    pass


def _construct_bounded_int(loader: SafeConstructor, node: yaml.ScalarNode) -> int:
    """YAML's int constructor, refusing more than ``MAX_INT_DIGITS`` digits before Python converts them."""
    if _int_too_long(str(node.value)):
        raise _IntTooLongYaml(_too_long_message())
    return loader.construct_yaml_int(node)


def _bounded_loader(event_parser: type) -> type:
    """A safe YAML loader class (``SafeConstructor``: no tags that build Python objects) on ``event_parser``,
    whose composer refuses, before anything is constructed, documents nested deeper than ``MAX_NESTING`` or
    holding more than ``MAX_YAML_VALUES`` values, counting each alias as the values it expands to."""

    class Loader(Composer, event_parser, SafeConstructor, Resolver):  # type: ignore[misc,valid-type]
        def __init__(self, stream: Any) -> None:
            event_parser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._depth = 0
            self._composed = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            self._composed += 1
            try:
                if self._depth > MAX_NESTING:
                    raise _Refused(f"nested deeper than {MAX_NESTING} levels")
                if self._composed > MAX_YAML_VALUES:  # written-out values count too: stop before composing all
                    raise _Refused(f"more than {MAX_YAML_VALUES:,} values")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def compose_document(self) -> Any:
            node = super().compose_document()
            if node is not None:
                _check_expanded(node)
            return node

    Loader.add_constructor("tag:yaml.org,2002:int", _construct_bounded_int)
    return Loader


BoundedSafeLoader = _bounded_loader(_EventParser)


def _first_line(exc: BaseException, fallback: str) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else fallback


def read_yaml_text(text: str, what: str, *, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Parse YAML safely: no tags that build objects, bounded size and nesting, alias bombs refused.
    Raises :class:`InputError` naming ``what`` (:class:`RefusedInput` when refused rather than malformed)."""
    if _too_large(text, max_bytes):
        raise RefusedInput(f"{what}: larger than {size_text(max_bytes)}")
    try:
        loader = BoundedSafeLoader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except _Refused as exc:
        raise RefusedInput(f"{what}: refused: {exc}") from None
    except _IntTooLongYaml as exc:
        raise RefusedInput(f"{what}: not valid YAML ({exc})") from None
    except ConstructorError as exc:  # a tag SafeConstructor does not build (!!python/object, ...)
        raise RefusedInput(
            f"{what}: not valid YAML (refused: {_first_line(exc, 'a tag that builds objects')})"
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"{what}: not valid YAML ({_first_line(exc, 'malformed YAML')})") from None
    except RecursionError:  # not reached with MAX_NESTING far below Python's limit; kept as a backstop
        raise RefusedInput(f"{what}: nested too deeply") from None
    except ValueError:  # a conversion PyYAML does not guard (kept without Python's own advice text)
        raise InputError(f"{what}: not valid YAML (a value that cannot be converted)") from None


class _SafeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper; a string holding U+0085, U+2028 or U+2029 is written double-quoted, where they
    become the escapes ``\\N``, ``\\L``, ``\\P``. Then the text breaks lines at ``\\n`` only and reads back
    unchanged (raw in a single-quoted scalar, YAML folds them into spaces)."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if any(ch in data for ch in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_SafeDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump`` (block style, Unicode kept) that every string survives: ``safe_load`` gives ``data``
    back. ``options`` go to the emitter (``sort_keys``, ``width``...)."""
    options = {"default_flow_style": False, "allow_unicode": True, **options}
    return yaml.dump(data, Dumper=_SafeDumper, **options)
