"""Process-wide caches of the dashboard's pure, expensive results: the estimate and the figures of a scenario
(issue #18: a rerun after a widget change should cost the server a few milliseconds, and 20 people changing
widgets should not queue behind each other's plotly figures).

Keys are the SHA-256 of the scenario's canonical JSON (``Scenario.model_dump_json()``: every field, fixed order,
~0.06 ms), so two sessions with the same scenario share one entry, and a value is only ever computed from its key.
Values are shared between sessions and threads, so they must never be changed: a ``Report`` is a frozen
model, and a figure is finished by its maker (layout included) before it is stored; views only read it
(``st.plotly_chart`` serialises it; ``render.png_button`` copies it before adding a title).

The LRU is bounded (``MAX_ENTRIES``) and guarded by a lock; a value is computed outside the lock, once: a session
that misses a key another session is computing waits for that result (``BoundedLru``).

``st.plotly_chart`` turns its figure into a plain dict on every rerun (``plotly.tools.return_figure_from_figure_or_data``
calls ``Figure.to_dict()``, a deep copy of the whole figure: 4.3 ms for the memory chart, 2.5 ms for the role chart on
this 2-core machine, ~10% of an Estimate rerun). A cached figure never changes, so :func:`chart_spec` makes that dict
once per figure and hands Streamlit an object that answers ``to_dict()`` with it; Streamlit serialises the same dict as
before, so the page receives the same bytes.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import pyarrow as pa
from plotly.basedatatypes import BaseFigure

from calculator import Report, Scenario, estimate

T = TypeVar("T")

MAX_ENTRIES = 512  # estimates and figures together; a Report and its 3 figures are ~0.5 MB


WAIT_S = 60.0  # a thread waiting for another's computation of the same key gives up after this and computes it


class BoundedLru:
    """A thread-safe least-recently-used map of at most ``max_entries`` values.

    One computation per key at a time: a thread that misses a key another thread is already computing waits for that
    result instead of computing it again. Sessions that change to the same new scenario together (a team trying the
    same settings, the load test's users) would otherwise each build its estimate and figures at once, and their
    reruns would queue behind the copies (issue #18). If the computing thread fails, a waiter computes the value
    itself (and meets the same error); after ``WAIT_S`` a waiter stops waiting and computes it too.
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._pending: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.waits = 0

    def get_or_make(self, key: Hashable, make: Callable[[], T]) -> T:
        while True:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
                    self.hits += 1
                    return self._data[key]  # type: ignore[no-any-return]
                pending = self._pending.get(key)
                if pending is None:  # nobody is computing it: this thread does
                    done = self._pending[key] = threading.Event()
                    self.misses += 1
                    break
                self.waits += 1
            if not pending.wait(WAIT_S):  # another thread computes it: wait, then look again
                return make()  # stuck (e.g. a computation that never ends): compute it here, store nothing
        try:
            value = make()
            with self._lock:
                self._data[key] = value
                self._data.move_to_end(key)
                while len(self._data) > self.max_entries:
                    self._data.popitem(last=False)
        finally:
            with self._lock:
                del self._pending[key]
            done.set()
        return value

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


CACHE = BoundedLru(MAX_ENTRIES)
# Trade-off sweeps (up to 1,920 points with their Pareto front and technique table) and their charts: fewer, larger
# values in an LRU of their own (32 entries, as the ``st.cache_data`` it replaces, which also unpickled a copy of the
# whole sweep on every rerun of the page). Measured with tracemalloc: a 1,920-point sweep holds 3.8 MB, its chart
# 1.8 MB (and 0.07 MB of chart spec), so the LRU stays under ~130 MB; a chart spec of the Estimate page is ~0.06 MB.
SWEEPS = BoundedLru(32)
# Hardware plans (every GPU type and count: a plan's JSON data, ~100 KB), 16 entries as the ``st.cache_data`` they
# replace, which hashed the scenario and unpickled a copy of the whole plan on every rerun of the Planner page.
PLANS = BoundedLru(16)


def digest(text: str) -> str:
    """A key of 64 characters for ``text`` (its SHA-256): the LRUs keep 512 + 48 keys, and the texts they stand for
    can be megabytes (a pasted config.json makes a scenario's JSON 2 MiB)."""
    return hashlib.sha256(text.encode()).hexdigest()


def scenario_key(scenario: Scenario) -> str:
    """The digest of the scenario's canonical JSON: equal scenarios, equal keys."""
    return digest(scenario.model_dump_json())


def cached_estimate(scenario: Scenario, key: str | None = None) -> Report:
    """``estimate(scenario)``, computed once per distinct scenario in this server process."""
    key = key or scenario_key(scenario)
    return CACHE.get_or_make(("estimate", key), lambda: estimate(scenario))


def cached_figure(kind: str, key: str, make: Callable[[], T], *args: Hashable) -> T:
    """A finished figure of the scenario ``key`` (``kind`` and ``args`` say which: language, case, ...).
    ``make`` must build it completely (layout included): the stored figure is shared and never changed."""
    return CACHE.get_or_make(("figure", kind, key, *args), make)


def cached_table(kind: str, key: str, make: Callable[[], list[dict[str, Any]]], *args: Hashable) -> pa.Table:
    """The rows ``make`` returns (one dict per row, columns in the first row's order) of a table of the scenario
    ``key``, as an Arrow table made once (``kind`` and ``args`` say which). ``st.dataframe`` sends an Arrow table as it
    is; a pandas frame is converted to Arrow on every rerun (3 tables: ~16 ms a rerun with pandas, ~6 ms with cached
    Arrow tables on this 2-core machine, AppTest). An Arrow table is immutable, so sharing it is safe."""
    return CACHE.get_or_make(("table", kind, key, *args), lambda: pa.Table.from_pylist(make()))


class FigureSpec(BaseFigure):
    """A finished figure as ``st.plotly_chart`` reads it: ``to_dict()`` and nothing else (it then serialises that dict).
    Not a figure to draw on: ``BaseFigure.__init__`` is not run; the class only passes Streamlit's ``BaseFigure`` test."""

    def __init__(self, spec: dict[str, Any]) -> None:  # noqa: D107 - no BaseFigure.__init__ on purpose
        self._spec = spec

    def to_dict(self) -> dict[str, Any]:
        return self._spec


def chart_spec(fig: BaseFigure) -> FigureSpec:
    """What ``st.plotly_chart`` needs of a cached (never changed) figure, its dict made once per figure object and
    kept on the figure (plotly lets private attributes through; it lives and goes with the figure's LRU entry). Two
    sessions drawing a new figure at once may both make it; the dicts are equal."""
    spec = getattr(fig, "_rlplan_chart_spec", None)
    if spec is None:
        spec = FigureSpec(fig.to_dict())
        fig._rlplan_chart_spec = spec
    return spec
