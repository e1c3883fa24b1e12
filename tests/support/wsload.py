"""Team load without browsers: N users on Streamlit's own websocket protocol (``tests/system/stclient.py``),
each changing the GPU count on a fixed period, as people trying settings do (issue #18: 20 users, a change
every 2 s, p95 rerun <= 1 s, 0 errors).

One user = one websocket session = one browser tab: it loads the Estimate page, waits for the others, then
every ``period_s`` (from a random phase, so the users are not in lock-step) sends the next GPU count and
waits until the script finished. Latency = send -> ``script_finished`` (what a person waits for after
a change, minus the browser's drawing). A change counts as an error when the run does not finish normally,
shows an exception, or its peak-memory metric is not the calculator's number for that GPU count.

Server CPU: utime + stime of the server processes (``/proc/PID/stat``) over the measured part.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from dataclasses import dataclass, field

from calculator import estimate, load_scenario
from tests.system.stclient import Session
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET

GPU_COUNTS = (8, 16, 32, 4)  # the values the users cycle through (all valid for the default preset)
PEAK_LABEL = tr("en", "metric.peak")


@dataclass
class LoadResult:
    users: int
    changes: int
    period_s: float
    latencies_s: list[float] = field(default_factory=list)
    first_change_s: list[float] = field(default_factory=list)  # each user's first change (also in latencies_s)
    first_load_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    server_cpu_s: float = 0.0
    wall_s: float = 0.0

    def quantile(self, q: float, latencies_s: list[float] | None = None) -> float:
        """The ``q`` quantile of ``latencies_s`` (every change's by default)."""
        xs = sorted(self.latencies_s if latencies_s is None else latencies_s)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")

    def _later_p95(self) -> float:
        later = list(self.latencies_s)
        for x in self.first_change_s:
            later.remove(x)
        return self.quantile(0.95, later)

    def summary(self) -> str:
        lat = self.latencies_s
        return (
            f"{self.users} users x {self.changes} changes every {self.period_s:g} s: "
            f"p50 {self.quantile(0.5):.3f} s, p95 {self.quantile(0.95):.3f} s, max {max(lat, default=0):.3f} s, "
            f"errors {len(self.errors)}; the users' first changes (together, new scenarios for the server) median "
            f"{statistics.median(self.first_change_s or [0]):.3f} s, later changes p95 {self._later_p95():.3f} s; "
            f"first load median {statistics.median(self.first_load_s or [0]):.2f} s; "
            f"server CPU {self.server_cpu_s:.1f} s over {self.wall_s:.1f} s "
            f"({self.server_cpu_s / max(1, len(lat)) * 1000:.0f} ms per rerun)"
        )


def expected_peaks() -> dict[int, str]:
    """The peak metric's text for each GPU count (as ui.render formats it)."""
    return {
        n: f"{estimate(load_scenario(DEFAULT_PRESET, overrides={'hardware.num_gpus': n})).peak.gib_per_gpu:.2f} GiB"
        for n in GPU_COUNTS
    }


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


def _peak_text(page) -> str | None:
    return next((el.body for name, el in page.elements if name == "metric" and el.label == PEAK_LABEL), None)


def _problem(page, expected: str) -> str:
    if page.status != "FINISHED_SUCCESSFULLY":
        return f"run ended {page.status}"
    if page.exceptions():
        return f"exception: {page.exceptions()[0]}"
    got = _peak_text(page)
    return "" if got == expected else f"peak metric {got!r}, expected {expected!r}"


async def _first_load(s: Session, i: int, res: LoadResult) -> None:
    t0 = time.perf_counter()
    page = await s.run()
    res.first_load_s.append(time.perf_counter() - t0)
    if page.exceptions() or keys.NUM_GPUS not in s.widget_ids:
        raise RuntimeError(f"first load {page.status} {page.exceptions()[:1]}")


async def _user(url: str, i: int, res: LoadResult, ready: asyncio.Barrier, peaks: dict[int, str]) -> None:
    rng = random.Random(i)
    waited = False
    try:
        async with Session(url) as s:
            await _first_load(s, i, res)
            waited = True
            await ready.wait()
            start = time.perf_counter() + rng.uniform(0, res.period_s)
            for c in range(res.changes):
                await asyncio.sleep(max(0.0, start + c * res.period_s - time.perf_counter()))
                n = GPU_COUNTS[(i + c + 1) % len(GPU_COUNTS)]
                t = time.perf_counter()
                page = await s.run([s.state(keys.NUM_GPUS, int_value=n)])
                res.latencies_s.append(time.perf_counter() - t)
                if c == 0:
                    res.first_change_s.append(res.latencies_s[-1])
                problem = _problem(page, peaks[n])
                if problem:
                    res.errors.append(f"user {i}, change {c} (GPUs {n}): {problem}")
    except Exception as exc:  # a dropped socket, a timeout: an error of this user, the others go on
        res.errors.append(f"user {i}: {type(exc).__name__}: {exc}")
        if not waited:
            await ready.wait()


async def run_load(urls: list[str], users: int, changes: int, period_s: float, pids: list[int]) -> LoadResult:
    """``users`` sessions spread over ``urls`` round-robin (one URL: one server or a proxy)."""
    res = LoadResult(users, changes, period_s)
    peaks = expected_peaks()
    ready = asyncio.Barrier(users + 1)
    tasks = [asyncio.create_task(_user(urls[i % len(urls)], i, res, ready, peaks)) for i in range(users)]
    await ready.wait()
    cpu0, t0 = cpu_seconds(pids), time.perf_counter()
    await asyncio.gather(*tasks)
    res.server_cpu_s, res.wall_s = cpu_seconds(pids) - cpu0, time.perf_counter() - t0
    return res
