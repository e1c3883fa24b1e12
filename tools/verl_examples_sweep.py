"""Run every verl launch script of a directory through ``python -m calculator estimate --verl`` and tabulate it.

Usage (from the repository root; DIR is a verl checkout or a copy of its ``examples/`` and ``recipe/``)::

    python tools/verl_examples_sweep.py DIR [--timeout 60] [--gpu ID] [--json] [--skip SUBSTRING ...]

One row per ``*.sh`` under DIR (sorted): the exit code (0 computed, 2 refused input; anything else, a timeout or a
traceback is a bug), the model the script resolved to, GPUs, the peak GiB per GPU and the verdict, the step time,
warnings counted by kind and the first error line. Each script runs in its own process, bounded by ``--timeout``
seconds. Scripts under ``examples/sft/`` and ``examples/generation/`` are skipped by default (not RL training); the
table lists them as skipped.

The GPU type: ``--gpu`` when given, else the one the script's file name names (verl's ``examples/tuning`` scripts
are named ``<model>_<algo>_<N>_<gpu>_...``; ``_npu`` scripts run on Ascend, ``80gb`` / ``96gb`` scripts on H100 /
H20), else one a comment in its first 20 lines names (``# run on 8xH20``, ``# tested in ... H20``), else the
calculator's default (H100 80 GB). The GPU count is the script's (``trainer.n_gpus_per_node`` x ``trainer.nnodes``). Nothing of the scripts is executed: the calculator only reads them.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SKIP = ("examples/sft/", "examples/generation/")

# File-name token -> rlplan GPU preset id (first match in this order wins).
GPU_TOKENS = (
    ("h100", "h100-80gb"),
    ("h800", "h800-80gb"),
    ("h200", "h200-141gb"),
    ("h20", "h20-96gb"),
    ("a100", "a100-80gb"),
    ("npu", "ascend-910b-64gb"),
    ("96gb", "h20-96gb"),
    ("80gb", "h100-80gb"),
)

# Warning kind -> pattern of the calculator's warning text (calculator/verl/imports.py, fields.py, shell.py).
KINDS = (
    ("unknown", re.compile(r"^verl (overrides|config: \d+ keys) not modelled")),
    (
        "not_modelled",
        re.compile(r"^verl \S+: not modelled; likely effect|: not modelled \(rlplan knows|is not modelled"),
    ),
    ("unresolved", re.compile(r"unresolved shell variable|cannot resolve|\?\?\? \(required")),
    ("model_fallback", re.compile(r"not a model preset|is not guessed")),
    ("verl_check", re.compile(r"^verl: |^verl rejects the config")),
)


@dataclass
class Row:
    script: str
    exit_code: int | str  # an int, or "timeout" / "skipped"
    gpu: str = ""
    model: str = ""
    num_gpus: int | None = None
    peak_gib: float | None = None
    verdict: str = ""
    step_s: float | None = None
    warnings: dict[str, int] = field(default_factory=dict)
    error: str = ""
    warning_texts: list[str] = field(default_factory=list)


# "# run on 8xH20", "# tested in NNODES=1~4 * 96G H20 GPU": a GPU named in a comment of the script's first lines.
_COMMENT_GPU = re.compile(r"^#.*\b(?:run on|tested (?:on|in))\b.*?(?:\b|\dx)(h100|h800|h200|h20|a100)\b", re.I | re.M)


def gpu_for(path: Path, text: str = "") -> str | None:
    """The GPU preset the file name names, else one a leading comment of ``text`` names, or None."""
    tokens = re.split(r"[_\-.]", path.name.lower())
    for token, gpu in GPU_TOKENS:
        if token in tokens:
            return gpu
    m = _COMMENT_GPU.search("\n".join(text.splitlines()[:20]))
    return dict(GPU_TOKENS).get(m.group(1).lower()) if m else None


def count_kinds(texts: list[str]) -> dict[str, int]:
    """Warnings by kind; an ``unknown`` warning counts its keys (one warning lists all of them)."""
    counts: Counter[str] = Counter()
    for text in texts:
        kind = next((k for k, pattern in KINDS if pattern.search(text)), "other")
        if kind == "unknown" and text.startswith("verl overrides"):
            counts[kind] += len(text.split(":", 1)[1].split(","))
        else:
            counts[kind] += 1
    return dict(counts)


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if any(ln.startswith("Traceback") for ln in lines):
        return "traceback: " + lines[-1]
    return lines[0] if lines else ""


def run_one(path: Path, rel: str, gpu: str | None, timeout_s: float) -> Row:
    """One script through the CLI in its own process."""
    cmd = [sys.executable, "-m", "calculator", "estimate", "--verl", str(path), "--json"]
    cmd += ["--gpu", gpu] if gpu else []
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return Row(rel, "timeout", gpu or "", error=f"no answer in {timeout_s:g} s")
    row = Row(rel, proc.returncode, gpu or "", error=_first_error(proc.stderr))
    if proc.returncode != 0:
        return row
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        row.error = f"output is not JSON: {exc}"
        return row
    peak, hw = report["peak"], report["hardware"]
    row.gpu = hw["gpu"]
    row.model = report["model"]["name"]
    row.num_gpus = hw["num_gpus"]
    row.peak_gib = round(peak["gib_per_gpu"], 2)
    row.verdict = "fits" if peak["fits"] else f"NO ({len(peak['reasons'])})"
    row.step_s = report["time"]["step_s"]
    row.warning_texts = list(report["warnings"]) + [r for r in peak["reasons"] if r.startswith("verl rejects")]
    row.warnings = count_kinds(row.warning_texts)
    if not peak["fits"] and not row.error:
        row.error = peak["reasons"][0]
    return row


def scripts(root: Path, skip: tuple[str, ...]) -> tuple[list[Path], list[Path]]:
    """(scripts to run, scripts skipped), sorted by path."""
    found = sorted(p for p in root.rglob("*.sh") if p.is_file())
    skipped = [p for p in found if any(s in p.relative_to(root).as_posix() for s in skip)]
    return [p for p in found if p not in skipped], skipped


def _fmt(row: Row) -> str:
    if row.exit_code == "skipped":
        return f"{row.script:<72} skipped (not RL training)"
    peak = f"{row.peak_gib:7.2f}" if row.peak_gib is not None else "      -"
    step = f"{row.step_s:8.1f}" if row.step_s is not None else "       -"
    gpus = f"{row.num_gpus}x{row.gpu}" if row.num_gpus else row.gpu or "-"
    warns = " ".join(f"{k}={v}" for k, v in sorted(row.warnings.items()))
    return (
        f"{row.script:<72} {row.exit_code!s:>7} {row.model[:28]:<28} {gpus:<22} {peak} {row.verdict:<7} {step} "
        f"{warns:<50} {row.error[:160]}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="a verl checkout, or a directory of its launch scripts")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per script (default 60)")
    ap.add_argument("--gpu", help="GPU preset for every script (default: from the file name, else H100)")
    ap.add_argument("--skip", action="append", help="skip scripts whose path contains this (default: sft, generation)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row, warning texts included")
    args = ap.parse_args(argv)
    if not args.dir.is_dir():
        ap.error(f"{args.dir}: not a directory")
    run, skipped = scripts(args.dir, tuple(args.skip or DEFAULT_SKIP))
    rows = [Row(p.relative_to(args.dir).as_posix(), "skipped") for p in skipped]
    for row in rows:
        print(json.dumps(asdict(row)) if args.json else _fmt(row), flush=True)
    for path in run:
        gpu = args.gpu or gpu_for(path, path.read_text(errors="replace"))
        rows.append(run_one(path, path.relative_to(args.dir).as_posix(), gpu, args.timeout))
        print(json.dumps(asdict(rows[-1])) if args.json else _fmt(rows[-1]), flush=True)
    bad = [r for r in rows if r.exit_code not in (0, 2, "skipped") or r.error.startswith("traceback")]
    summary = Counter(str(r.exit_code) for r in rows)
    print(f"# {len(rows)} scripts: " + ", ".join(f"exit {k}: {v}" for k, v in sorted(summary.items())), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
