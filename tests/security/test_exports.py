"""Exports are emitted from data and read back unchanged, whatever the text in them (issue 12, item 4).

A U+2028 inside an imported ``# rlplan: name=`` line became a line break in ``export --format yaml`` and
injected a top-level ``custom_reward_function`` key (verl imports that path as Python). Every YAML and JSON
export here is parsed again: its keys are exactly the settings', its values the scenario's, and importing
the export gives the scenario back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from calculator import load_scenario
from calculator.cli.terminal import one_line, terminal_text
from calculator.inputs.presets import scenario_presets
from calculator.verl import export_overrides, export_yaml, format_overrides, import_verl_text
from calculator.verl.export import comment_json
from tests.security.hostile import PRESET, cli, small_config
from ui.summary import scenario_yaml

VERL_ROOTS = {"data", "algorithm", "actor_rollout_ref", "critic", "reward", "reward_model", "trainer", "model_engine"}
LINE_BREAKS = ["\u2028", "\u2029", "\x85", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
INJECTION = "custom_reward_function: {path: /tmp/evil.py, name: compute}"
HOSTILE_TEXTS = [
    *(f"x{br}{INJECTION}{br}#" for br in LINE_BREAKS),
    f'"}}\n{INJECTION}\n# "',
    "'; rm -rf / #",
    "${oc.env:HOME}",
    "\x1b]0;title\x07",
    "\ufeffbom",
    "中文 名称",
    "\U0001f600",
]


def _nest(pairs: list[tuple[str, object]]) -> dict:
    root: dict = {}
    for key, value in pairs:
        node = root
        parts = key.lstrip("+").split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return root


def _hostile_scenario(text: str):  # noqa: ANN202 - a Scenario
    return load_scenario(
        PRESET,
        overrides={
            "name": text,
            "description": text,
            "model.path": text,  # ignored for the estimate (a config is given), exported all the same
            "model.config": {**small_config(), "_name_or_path": text},
        },
    )


@pytest.mark.parametrize("preset", sorted(scenario_presets()))
def test_every_preset_exports_yaml_that_reads_back(preset: str) -> None:
    s = load_scenario(preset)
    text = export_yaml(s)
    assert yaml.safe_load(text) == _nest(export_overrides(s))
    back = load_scenario(preset, verl_overrides=text)
    assert back == s


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=lambda t: repr(t)[:24])
def test_hostile_text_cannot_add_a_key_to_the_yaml_export(text: str) -> None:
    s = _hostile_scenario(text)
    out = export_yaml(s)
    data = yaml.safe_load(out)
    assert set(data) <= VERL_ROOTS, set(data)
    assert data == _nest(export_overrides(s))
    assert data["actor_rollout_ref"]["model"]["path"] == text
    for line in out.split("\n"):
        assert not any(ch in line for ch in ("\u2028", "\u2029", "\x85")) or not line.startswith("#"), repr(line)
    natives, _ = import_verl_text(out)
    assert natives["name"] == text and natives["model.config"]["_name_or_path"] == text  # the # rlplan: lines


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=lambda t: repr(t)[:24])
def test_hostile_text_in_the_launch_command_reads_back(text: str) -> None:
    s = _hostile_scenario(text)
    for style in ("command", "overrides"):
        back = load_scenario(
            PRESET, overrides={"model.config": s.model.config}, verl_overrides=format_overrides(s, style)
        )
        if style == "command":  # the # rlplan: lines carry what verl has no key for
            assert back.name == text and back.model.config == s.model.config


def test_comment_json_is_one_line_and_valid_json() -> None:
    for text in HOSTILE_TEXTS:
        line = comment_json({"name": text})
        assert line.isprintable() and json.loads(line) == {"name": text}, repr(line)


def test_the_reported_u2028_injection_through_the_cli(tmp_path: Path) -> None:
    """The issue's reproduction: an imported ``# rlplan: name=`` line with U+2028, then export --format yaml."""
    script = tmp_path / "launch.sh"
    script.write_text(
        f'# rlplan: name="evil\u2028{INJECTION}\u2028#"\nactor_rollout_ref.rollout.n=8\n', encoding="utf-8"
    )
    run = cli("export", PRESET, "--verl", str(script), "--format", "yaml")
    assert run.returncode == 0, run.stderr
    data = yaml.safe_load(run.stdout)
    assert "custom_reward_function" not in data and set(data) <= VERL_ROOTS, set(data)
    assert data["actor_rollout_ref"]["rollout"]["n"] == 8


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=lambda t: repr(t)[:24])
def test_scenario_yaml_download_reads_back(text: str) -> None:
    s = _hostile_scenario(text)
    assert load_scenario(yaml.safe_load(scenario_yaml(s))) == s


def test_terminal_escaping_keeps_printable_text() -> None:
    assert terminal_text("Qwen2.5-7B · 中文 \U0001f600\n\tok") == "Qwen2.5-7B · 中文 \U0001f600\n\tok"
    assert terminal_text("a\x1b[2Jb\rc\x07\u202e") == "a\\x1b[2Jb\\x0dc\\x07\\u202e"
    assert one_line("a\nb\u2028c") == "a\\x0ab\\u2028c"


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=lambda t: repr(t)[:24])
def test_json_report_reads_back(tmp_path: Path, text: str) -> None:
    """``estimate --json`` (and the web app's JSON download, the same model_dump) is emitted by json.dumps:
    whatever the model name holds, it parses and gives the name back."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**small_config(), "_name_or_path": text}))
    run = cli("estimate", PRESET, "--model", str(config), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["model"]["name"] == text
