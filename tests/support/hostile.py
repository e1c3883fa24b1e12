"""Hostile inputs shared by the bad-input tests of several modules (issue #8): YAML and JSON bombs, markup a user
could smuggle into echoed text, a launch script that would run commands if it were executed."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from calculator.inputs.presets import MAX_INPUT_BYTES, MAX_NESTING

# A "billion laughs" document: 9 levels of 9 aliases = 9**9 (387 million) values from 324 bytes.
BILLION_LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP_JSON = "[" * 100_000 + "]" * 100_000  # json.loads alone raises RecursionError on this
# Markup a user could smuggle into any echoed text: a tracking image, a link, raw HTML, LaTeX, a directive.
PAYLOAD = (
    "![EVIL](http://evil.example/p.png) [EVIL](http://evil.example) <img src=x onerror=alert('EVIL')> $EVIL$ :red[EVIL]"
)
# What must never survive unescaped in a Markdown element that echoes user text marked EVIL.
UNESCAPED_MARKUP = re.compile(r"(?<!\\)(\]\(|<\s*(img|script|a|iframe|svg)\b|\$EVIL|\[EVIL)|https?://|www\.", re.I)

# verl text a user could paste into the import box ("{canary}" is replaced by a path that must stay absent).
HOSTILE_VERL_TEXTS = {
    "alias-bomb": BILLION_LAUGHS.replace("i: &i", "data: &i"),  # a verl-looking YAML bomb
    "python-tag": "actor_rollout_ref:\n  rollout: !!python/object/apply:os.system ['touch {canary}']\n",
    "deep-yaml": "data:\n" + "".join("  " * i + "- \n" for i in range(1, 300)),
    "deep-value": "actor_rollout_ref.rollout.n=" + "[" * 50_000 + "]" * 50_000,
    "markup-keys": f"{PAYLOAD}=1\nactor_rollout_ref.{PAYLOAD}=2\n",
}


def injection_script(canary: Path) -> str:
    """A verl launch script whose every command substitution, eval, pipe or here-doc would create a canary file
    ``<canary>.N`` if anything executed it."""
    c = str(canary)
    return textwrap.dedent(
        f"""\
        #!/bin/bash
        set -x; touch {c}.1
        X=$(touch {c}.2)
        Y=`touch {c}.3`
        eval "touch {c}.4"
        source <(echo touch {c}.5)
        N=${{UNSET:=$(touch {c}.6)}}
        touch {c}.7 && python3 -m verl.trainer.main_ppo \\
            actor_rollout_ref.rollout.n=8 \\
            trainer.n_gpus_per_node=$X \\
            trainer.nnodes=$(rm -rf / --no-preserve-root) \\
            data.train_batch_size=`touch {c}.8` \\
            actor_rollout_ref.actor.ppo_mini_batch_size=$(( 2**99 )) | sh -c "touch {c}.9"
        cat > {c}.10 <<EOF
        data.max_prompt_length=1
        EOF
        """
    )


# (text, message the reader must refuse it with): YAML a preset file, a --verl file or a pasted text could hold.
HOSTILE_YAML: dict[str, tuple[str, str]] = {
    "billion-laughs": (BILLION_LAUGHS, "alias"),
    "recursive": ("a: &a [*a]\n", "recursive alias"),
    "deep-flow": ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_NESTING}"),
    "deep-block": ("".join("  " * i + "-\n" for i in range(200)), f"nested deeper than {MAX_NESTING}"),
    # each alias adds depth: 60 + 10 levels once expanded, though neither anchor is deeper than 64
    "deep-by-alias": (
        "a: &a " + "[" * 60 + "1" + "]" * 60 + "\nb: " + "[" * 10 + "*a" + "]" * 10 + "\n",
        "once YAML aliases",
    ),
    "too-many-values": ("[" + ",".join(["1"] * 150_000) + "]", "more than 100,000 values"),
    "huge": ("a: " + "x" * (MAX_INPUT_BYTES + 1), "larger than 2 MiB"),
    "long-int": ("a: " + "9" * 5000, "not valid YAML"),  # more digits than Python converts to int
    "malformed": ("a: [unclosed\n", "not valid YAML"),
    "two-docs": ("a: 1\n---\nb: 2\n", "not valid YAML"),
}
# The same for JSON (a config.json upload or paste).
HOSTILE_JSON: dict[str, tuple[str, str]] = {
    "deep-100000": (DEEP_JSON, f"nested deeper than {MAX_NESTING}"),
    "deep-100": ("[" * 100 + "]" * 100, f"nested deeper than {MAX_NESTING}"),
    "malformed": ('{"a": 1,,}', r"not valid JSON \(Expecting .*line 1 column 9\)"),
    "huge": ('{"a": "' + "x" * MAX_INPUT_BYTES + '"}', "larger than 2 MiB"),
    "long-int": ('{"a": ' + "9" * 5000 + "}", "not valid JSON"),
}


# Shell arithmetic a launch script could hold in $(( ... )).
HOSTILE_ARITHMETIC = {
    "huge-exponent": "2**65",
    "negative-exponent": "2**-1",
    "long": "1+" * 100_000 + "1",
    "deep": "(" * 5000 + "1" + ")" * 5000,
    "division-by-zero": "1/0",
    "python": "__import__('os')",
    "nested-powers": "(" * 6 + "2" + ")**64" * 6,  # each power is small, the result is 2**(64**6)
}


# Query parameters of a tampered dashboard link.
TAMPERED = {
    "nonsense.key": "1",
    "x" * 10_000: "1",  # a 10,000-character parameter name
    "hardware.num_gpus": "abc",
    "rollout.n": "nan",
    "data.train_batch_size": "1e30",
    "actor.ppo_mini_batch_size": "-8",
    "rollout.gpu_memory_utilization": "NaN",
    "overheads.fragmentation_fraction": "inf",
    "data.max_prompt_length": "9" * 100_000,  # a 100,000-digit number
    "model.path": "y" * 100_000,
    "model.config": "[" * 20_000 + "]" * 20_000,  # json.loads alone: RecursionError
    "data.max_response_length": "[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]]",
    "hardware.gpu": "<script>alert('EVIL')</script>",
    "actor.strategy": PAYLOAD,
    PAYLOAD: PAYLOAD,
    "lang": PAYLOAD,
    "algo": PAYLOAD,
    "size": PAYLOAD,
}


# A YAML alias bomb written as one --set value: 8 levels of 9 aliases = 9**8 (43 million) values.
BOMB_VALUE = (
    "["
    + ", ".join(
        ["&a [1,1,1,1,1,1,1,1,1]"]
        + [f"&{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefg", "bcdefgh", strict=True)]
    )
    + "]"
)
