"""The hostile-input corpus of issue 12 and the harness that runs it with bounded resources.

Every case is an input someone could hand the server or the CLI, with the one-line refusal it must get (or
``None`` when a clean read is the right answer). ``run_limited`` runs code in a child Python under a CPU-time
limit and an address-space limit: an unbounded case is killed by the kernel (SIGXCPU) instead of holding the
test run, and the child reports the CPU time it used. The limit is a backstop, not the measurement: before
issue 12 these cases took 13 s to more than 200 s of CPU; now the worst takes about a second (``docs/security.md``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CPU_LIMIT_S = 20  # per child; the slowest bounded case uses ~1 s of CPU on this machine kind
MEMORY_LIMIT_BYTES = 2 * 2**30  # address space per child (Python + the calculator use ~150 MB)
HANG_TIMEOUT_S = 120  # wall clock, only to turn a hang (a FIFO read blocks without using CPU) into a failure
MIB = 2**20
PRESET = "qwen2.5-7b-grpo-8xh100"


@dataclass(frozen=True)
class Case:
    """One hostile input: its text and the refusal it must get (a substring), or None for a clean read."""

    name: str
    text: str
    refusal: str | None


def _nested_interpolation(levels: int) -> str:
    return "${oc.select:x," * levels + "1" + "}" * levels


def _doubling_yaml() -> str:
    data = {f"k{i}": f"${{data.k{i + 1}}}${{data.k{i + 1}}}" for i in range(30)}
    data["k30"] = "x" * 1000
    return yaml.safe_dump({"actor_rollout_ref": {"rollout": {"name": "${data.k0}"}}, "data": data})


def shell_cases() -> list[Case]:
    """Launch scripts and verl YAML that made the importer run for seconds to minutes (measured before issue 12,
    on this machine kind: doubling 99 s, 2 MiB token 49 s, backticks > 200 s, ``${`` 13 s, reversed keys 21 s,
    nested interpolation: RecursionError)."""
    seed = "A=" + "x" * 78 + "\n"
    return [
        Case("doubling-15-lines", seed + "A=$A$A\n" * 15, "shell variable A would hold more than 64 KiB"),
        Case("doubling-40-lines", seed + "A=$A$A\n" * 40, "shell variable A would hold more than 64 KiB"),
        Case("token-2MiB", "data.custom_name=" + "x" * (2 * MIB - 40), None),
        Case("backticks-1MiB", "`" * MIB, "more than 50,000 shell expansions"),
        Case("dollar-brace-1MiB", "${" * (MIB // 2), None),
        Case("dollar-paren-1MiB", "$(" * (MIB // 2), None),
        Case("arith-100k", "N=4\n" + "\n".join(f"data.k{i % 1000}=$((N*2))" for i in range(100_000)), "50,000"),
        Case(
            "keys-60k-reversed",
            "\n".join(f"data.k{i}=1" for i in range(60_000)) + "\n" + "\n".join(f"data.k{i}=1" for i in range(60_000)),
            "more than 20,000 distinct overrides",
        ),
        Case("keys-19k-reversed", "\n".join(f"data.k{i}=1" for i in [*range(19_000), *reversed(range(19_000))]), None),
        Case("default-nesting-17", "data.a=" + "${A:-" * 17 + "x" + "}" * 17, "nested more than 16 levels"),
        Case("expansion-4MiB", "A=" + "x" * 60_000 + "\n" + "data.a=" + "$A" * 80, "would produce more than 4 MiB"),
        Case("nul-byte", "actor_rollout_ref.rollout.n=8\x00", "NUL byte"),
        Case("nested-interpolation-script", f"actor_rollout_ref.rollout.n='{_nested_interpolation(40_000)}'", "2 MiB"),
        Case(
            "nested-interpolation-yaml",
            f"actor_rollout_ref:\n  rollout:\n    n: '{_nested_interpolation(40_000)}'\n",
            "interpolation would scan or build more than 2 MiB",
        ),
        Case("interpolation-doubling-yaml", _doubling_yaml(), "interpolation would scan or build more than 2 MiB"),
        Case(
            "yaml-100k-values",
            "data:\n" + "".join(f"  k{i}:\n  - 1\n  - 2\n  - 3\n  - 4\n" for i in range(25_000)),
            "more than 100,000 values",
        ),
    ]


BILLION_LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def refused_yaml_cases(canary: Path) -> list[Case]:
    """verl YAML the bounded reader refuses: it was silently read as an empty launch script (exit 0)."""
    return [
        Case(
            "python-tag",
            f"actor_rollout_ref:\n  rollout: !!python/object/apply:os.system ['touch {canary}']\n",
            "could not determine a constructor",
        ),
        Case("alias-bomb", BILLION_LAUGHS.replace("i: &i", "data: &i"), "alias"),
        Case("deep", "data:\n" + "".join("  " * i + "- \n" for i in range(1, 300)), "nested deeper than 64"),
        Case("long-int", f"actor_rollout_ref:\n  rollout:\n    n: {'9' * 5000}\n", "more than 4,300 digits"),
    ]


def small_config() -> dict:
    return dict(yaml.safe_load((ROOT / "presets" / "models" / "qwen2.5-0.5b.yaml").read_text())["config"])


def write_config(path: Path, **changes: object) -> Path:
    path.write_text(json.dumps({**small_config(), **changes}))
    return path


def _limits() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 1))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float  # the child's user + system CPU time

    @property
    def killed_by_cpu_limit(self) -> bool:
        return self.returncode in (-24, -9)  # SIGXCPU at the soft limit, SIGKILL at the hard one


def run_limited(argv: list[str], *, env: dict[str, str] | None = None, stdin: str | None = None) -> Run:
    """Run ``python argv...`` in the repository under the CPU and memory limits; report its CPU time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=HANG_TIMEOUT_S,
        preexec_fn=_limits,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(done.returncode, done.stdout, done.stderr, cpu)


def cli(*args: str, env: dict[str, str] | None = None) -> Run:
    return run_limited(["-m", "calculator", *args], env=env)
