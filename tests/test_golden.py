"""The contracts of DESIGN.md 6 (JSON report, CLI text, export, advise, plan, Python API) are byte-for-byte
what tests/golden/outputs.json recorded, on every scenario preset. Regenerate only for an intended change
(``python -m tests.golden.capture --write``) and review the diff."""

from __future__ import annotations

import json

import pytest

from tests.golden.capture import COMMANDS, GOLDEN, VARIANTS, capture_preset, capture_variant

EXPECTED = json.loads(GOLDEN.read_text(encoding="utf-8"))
PRESETS = sorted(k for k in EXPECTED if k != "variants")


@pytest.mark.parametrize("preset", PRESETS)
def test_outputs_unchanged(preset: str) -> None:
    got = capture_preset(preset)
    want = EXPECTED[preset]
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key], f"{preset}: {key} changed"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_report_unchanged(variant: str) -> None:
    base, overrides = VARIANTS[variant]
    assert capture_variant(base, overrides) == EXPECTED["variants"][variant]


def test_golden_covers_every_command() -> None:
    for name in PRESETS:
        outputs = EXPECTED[name]
        assert {" ".join(c) for c in COMMANDS} <= set(outputs)
