"""Read a verl run's metrics: the console lines, the file logger's JSONL, a wandb CSV export.

What verl writes (verl 0.9.1, read in the wheel):

* console (``trainer.logger=['console']``): ``verl/utils/logger/aggregate_logger.py`` ``concat_dict_to_str``
  prints one line per step, ``step:{N} - {key}:{pprint.pformat(value)} - ...`` (numbers only). Under Ray the
  line carries a prefix such as ``(TaskRunner pid=123)``; numpy scalars print as ``np.float64(1.5)``.
* file (``trainer.logger=['file']``): ``verl/utils/tracking.py`` ``FileLogger.log`` writes one JSON object per
  line, ``{"step": N, "data": {key: value}}``.
* wandb: a run's history exported as CSV (``_step`` plus one column per metric) or a panel export
  (``Step``, ``<run> - <metric>``, ``<run> - <metric>__MIN`` / ``__MAX``).

The metric names are the trainer's: ``timing_s/<timer>`` from ``marked_timer`` in
``verl/trainer/ppo/ray_trainer.py`` (``step``, ``gen``, ``reward``, ``old_log_prob``, ``ref``, ``values``,
``adv``, ``update_critic``, ``update_actor``, ``update_weights``, ``testing``, ``save_checkpoint``),
``timing_per_token_ms/*`` and ``perf/throughput`` from ``verl/trainer/ppo/metric_utils.py``,
``response_length/mean|max|clip_ratio`` and ``prompt_length/mean`` (``compute_data_metrics``), and
``perf/max_memory_allocated_gb`` / ``perf/max_memory_reserved_gb`` / ``perf/cpu_memory_used_gb`` logged by the
actor's update (``verl/workers/engine_workers.py``: ``torch.cuda.max_memory_allocated() / 1024**3``, i.e. GiB
of the trainer process on one rank; ``psutil.virtual_memory().used`` of its node).

Every bound is in :mod:`calculator.inputs.limits` (bytes, lines, line length, steps, seconds); the text comes
from :func:`calculator.inputs.readers.read_file_text` or a bounded upload.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from calculator.errors import InputError
from calculator.inputs.limits import (
    MAX_LOG_BYTES,
    MAX_LOG_LINE_CHARS,
    MAX_LOG_LINES,
    MAX_LOG_PARSE_S,
    MAX_LOG_STEPS,
)
from calculator.inputs.readers import size_text

_STEP_RE = re.compile(r"(?:^|[\s)\]])step:(\d{1,9}) - ")
_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)", re.IGNORECASE)
_WANDB_PREFIX_RE = re.compile(r"^.* - (?=[A-Za-z_][\w]*/)")


@dataclass(frozen=True)
class RunLog:
    """The metrics of each logged step (step number -> metric -> value) and what reading them left out."""

    format: str
    steps: dict[int, dict[str, float]]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def step_numbers(self) -> list[int]:
        return sorted(self.steps)


def _number(text: str) -> float | None:
    """A metric value as verl prints it: ``1.5``, ``np.float64(1.5)``, ``tensor(1.5)``; None if not finite."""
    text = text.strip()
    if len(text) > 64:
        return None
    if text.endswith(")") and "(" in text:  # np.float64(1.5), tensor(1.5): the number is inside the brackets
        text = text[text.rindex("(") + 1 : -1]
    m = _NUMBER_RE.fullmatch(text.strip())
    if m is None:
        return None
    try:
        value = float(m.group(0))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class _Budget:
    """Lines, steps and seconds one parse may use; ``notes`` says what was cut."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + MAX_LOG_PARSE_S
        self.lines = 0
        self.skipped_long = 0
        self.notes: list[str] = []
        self.stopped = False

    def take(self, line: str) -> bool:
        """Whether to parse this line; after a bound on lines or time, ``stopped`` ends the parse."""
        self.lines += 1
        if self.lines > MAX_LOG_LINES:
            self.stop(f"only the first {MAX_LOG_LINES:,} lines were read")
            return False
        if self.lines % 2000 == 0 and time.monotonic() > self.deadline:
            self.stop(f"parsing stopped after {MAX_LOG_PARSE_S:.0f} s at line {self.lines:,}")
            return False
        if len(line) > MAX_LOG_LINE_CHARS:
            self.skipped_long += 1  # this line only
            return False
        return True

    def stop(self, note: str) -> None:
        if not self.stopped:
            self.notes.append(note)
        self.stopped = True

    def finish(self) -> list[str]:
        if self.skipped_long:
            self.notes.append(f"{self.skipped_long:,} lines longer than {MAX_LOG_LINE_CHARS:,} characters skipped")
        return self.notes


def _lines(text: str, budget: _Budget) -> Iterator[str]:
    for line in io.StringIO(text):
        if budget.stopped:
            return
        if budget.take(line):
            yield line.rstrip("\n")


def _store(steps: dict[int, dict[str, float]], step: int, metrics: dict[str, float], budget: _Budget) -> None:
    """Keep a step's metrics (a step logged twice, as after a resume, keeps its last values)."""
    if not metrics:
        return
    if step not in steps and len(steps) >= MAX_LOG_STEPS:
        budget.stop(f"only the first {MAX_LOG_STEPS:,} steps were kept")
        return
    steps.setdefault(step, {}).update(metrics)


def parse_console(text: str, budget: _Budget) -> dict[int, dict[str, float]]:
    """``step:N - key:value - key:value`` lines, anywhere in a line (Ray's ``(TaskRunner pid=..)`` prefix)."""
    steps: dict[int, dict[str, float]] = {}
    for line in _lines(text, budget):
        m = _STEP_RE.search(line)
        if m is None:
            continue
        metrics: dict[str, float] = {}
        for part in line[m.end() :].split(" - "):
            key, sep, raw = part.rpartition(":")
            if not sep or not key or len(key) > 200:
                continue
            value = _number(raw)
            if value is not None:
                metrics[key.strip()] = value
        _store(steps, int(m.group(1)), metrics, budget)
    return steps


def _flat_numbers(data: object) -> dict[str, float]:
    if not isinstance(data, dict):
        return {}
    out: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(key, str) and isinstance(value, int | float) and not isinstance(value, bool):
            if math.isfinite(value):
                out[key] = float(value)
    return out


def parse_jsonl(text: str, budget: _Budget) -> dict[int, dict[str, float]]:
    """verl's FileLogger lines ``{"step": N, "data": {...}}`` (a flat ``{"step": N, key: value}`` also works)."""
    steps: dict[int, dict[str, float]] = {}
    bad = 0
    for line in _lines(text, budget):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("step"), int) or isinstance(obj.get("step"), bool):
            continue
        metrics = _flat_numbers(obj.get("data")) or _flat_numbers({k: v for k, v in obj.items() if k != "step"})
        _store(steps, obj["step"], metrics, budget)
    if bad:
        budget.notes.append(f"{bad:,} lines that are not JSON skipped")
    return steps


def _csv_metric(column: str) -> str | None:
    """``run-name - timing_s/gen`` -> ``timing_s/gen``; ``...__MIN`` / ``__MAX`` columns are dropped."""
    name = _WANDB_PREFIX_RE.sub("", column.strip())
    if name.endswith(("__MIN", "__MAX")):
        return None
    return name


def parse_csv(text: str, budget: _Budget) -> dict[int, dict[str, float]]:
    """A wandb export: a step column (``_step``, ``Step``, ``step``, ``trainer/global_step``) and metric columns."""
    steps: dict[int, dict[str, float]] = {}
    rows = csv.reader(_lines(text, budget))
    header = next(rows, None)
    if header is None:
        return steps
    names = [_csv_metric(c) for c in header]
    step_col = next((i for i, n in enumerate(names) if n in ("_step", "Step", "step", "trainer/global_step")), None)
    if step_col is None:
        raise InputError("log: a CSV export needs a step column (_step, Step, step or trainer/global_step)")
    for row in rows:
        if len(row) <= step_col:
            continue
        step = _number(row[step_col])
        if step is None or step < 0 or step != int(step):
            continue
        metrics = {
            n: v
            for i, (n, cell) in enumerate(zip(names, row, strict=False))
            if i != step_col and n and (v := _number(cell)) is not None and cell.strip()
        }
        _store(steps, int(step), metrics, budget)
    return steps


def _detect(text: str) -> str:
    for line in io.StringIO(text[:65536]):
        s = line.strip()
        if not s:
            continue
        if s.startswith("{"):
            return "jsonl"
        if _STEP_RE.search(s):
            return "console"
        if "," in s and ("timing_s/" in s or "_step" in s or s.startswith(("Step,", '"Step"'))):
            return "csv"
    return "console"  # console logs start with many lines of Ray / vLLM output before the first step


def parse_log(text: str, what: str = "log", *, fmt: str | None = None) -> RunLog:
    """Parse a verl log (``fmt``: ``console``, ``jsonl``, ``csv``; detected when None). Raises
    :class:`InputError` naming ``what`` when the text is over the byte cap or holds no step metrics."""
    if len(text) > MAX_LOG_BYTES:
        raise InputError(f"{what}: larger than {size_text(MAX_LOG_BYTES)}")
    kind = fmt or _detect(text)
    parsers = {"console": parse_console, "jsonl": parse_jsonl, "csv": parse_csv}
    if kind not in parsers:
        raise InputError(f"{what}: format {kind!r} is not one of console, jsonl, csv")
    budget = _Budget()
    steps = parsers[kind](text, budget)
    notes = budget.finish()
    if not steps:
        raise InputError(
            f"{what}: no step metrics found (expected verl's console lines 'step:N - timing_s/gen:...', its file "
            "logger's JSONL or a wandb CSV export)"
        )
    return RunLog(format=kind, steps=steps, notes=tuple(notes))
