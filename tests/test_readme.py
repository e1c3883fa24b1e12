"""The README's "real output" blocks are what the documented commands print (tools/readme_examples.py): a change
that moves a number fails here until ``python -m tools.readme_examples --write`` refreshes the README."""

from __future__ import annotations

import pytest

from tools import readme_examples

EXAMPLES = readme_examples.examples(readme_examples.README.read_text(encoding="utf-8"))


def test_readme_has_generated_examples() -> None:
    commands = [e.command for e in EXAMPLES]
    assert "python -m calculator estimate qwen2.5-7b-grpo-8xh100" in commands
    assert len(commands) >= 3
    for e in EXAMPLES:
        assert e.shown.startswith(f"$ {e.command}\n"), e.command  # the block shows the command it ran


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.command)
def test_readme_example_is_current(example: readme_examples.Example) -> None:
    assert readme_examples.run(example.command) == example.shown, "python -m tools.readme_examples --write"


def test_only_calculator_commands_are_run() -> None:
    with pytest.raises(ValueError, match="only 'python -m calculator"):
        readme_examples.run("rm -rf /")


def test_a_changed_output_is_detected() -> None:
    text = readme_examples.README.read_text(encoding="utf-8")
    first = EXAMPLES[0]
    stale = text.replace(first.shown, first.shown.replace("GiB", "GB", 1), 1)
    assert readme_examples.examples(stale)[0].shown != readme_examples.run(first.command)
