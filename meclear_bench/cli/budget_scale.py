"""``meclear budget scale``: calls, recovery, wall time and overhead against K (SIMULATED).

Every preset runs on the same scale games (:mod:`meclear_bench.scale_games`:
one gold memory, 1-3 faults including three redundant copies, background about the same
people and kinds of facts) at every K. Per preset and K:

- recovery: share of faulty queries whose returned context passes the recovery predicate;
- evaluator calls per faulty query (mean and max): the unit of the cost targets;
- model calls per query: one agent call per evaluator call plus one judge call per
  distinct answer (answers judged once per query, ``core.AnswerCache``);
- rounds: batches of calls the engine waited for;
- wall time per query with every model call taking ``delay`` seconds, at most
  ``concurrency`` in flight (measured with real waits on ``wall_games`` games);
- engine time: the engine's own CPU time with a zero-latency evaluator (median; thread
  CPU time, so a loaded machine does not inflate it), and
  overhead = engine time / (rounds x 2 x delay), the model time of one agent and one judge
  latency per round, a lower bound of the real model time (so the ratio is an upper bound);
- peak engine memory: tracemalloc peak over one zero-latency run.

The reader is the simulated evidence world, not a model: every figure is SIMULATED.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from meclear_integrations.core import (
    AnswerCache,
    AutoShapley,
    ClearanceConfig,
    MeClearEngine,
    Memory,
)
from meclear_integrations.core.judging.dispatch import adedup_evaluator
from meclear_integrations.simulation import SimulatedCase, exact_match_score

from ..scale_games import ScaleFamily, scale_games

__all__ = [
    "FAMILIES",
    "PRESETS",
    "TARGET_CALLS",
    "ScaleRow",
    "measure_scale",
    "plot_scale",
    "render_scale",
]

PRESETS: dict[str, Callable[[], ClearanceConfig]] = {
    "default": ClearanceConfig,
    "cheap": ClearanceConfig.cheap,
    "flat": lambda: ClearanceConfig(
        estimator=AutoShapley(hierarchical_from=4096), escalation=False
    ),
    "paper": ClearanceConfig.paper,
}
"""``default``: the budget-aware default; ``cheap``: :meth:`ClearanceConfig.cheap` (a
smaller first hierarchical level); ``flat``: the default before hierarchical attribution
and escalation (exact or KernelSHAP over every memory); ``paper``: the paper's
configuration."""

FAMILIES: dict[str, ScaleFamily] = {
    "direct": ScaleFamily("direct"),
    "redundant2": ScaleFamily("redundant", 2),
    "redundant3": ScaleFamily("redundant", 3),
    "redundant5": ScaleFamily("redundant", 5),
    "redundant10": ScaleFamily("redundant", 10),
    "redundant20": ScaleFamily("redundant", 20),
    "joint": ScaleFamily("joint"),
}
DEFAULT_FAMILIES = ("direct", "redundant2", "redundant3")

TARGET_CALLS: dict[int, int] = {5: 32, 10: 60, 20: 100, 50: 150, 200: 300}
"""Evaluator calls per faulty query the default preset must stay within."""


@dataclass
class ScaleRow:
    """One preset at one K, over every game of the chosen families."""

    preset: str
    """The engine preset."""
    k: int
    """The context size K."""
    games: int = 0
    """Games played."""
    recovered: int = 0
    """Games whose answer the clearance recovered."""
    calls: list[int] = field(default_factory=list)
    """Evaluator calls per game."""
    model_calls: list[int] = field(default_factory=list)
    """Agent and judge calls per game."""
    rounds: list[int] = field(default_factory=list)
    """Evaluation rounds per game."""
    engine_seconds: list[float] = field(default_factory=list)
    """Engine CPU time per game, model calls instant."""
    wall_seconds: list[float] = field(default_factory=list)
    """Wall time per timed game, model calls taking ``delay``."""
    peak_mib: float = 0.0
    """Peak memory of one clearance (MiB)."""
    by_family: dict[str, list[int]] = field(default_factory=dict)
    """family -> [games, recovered, total calls, background deletions]."""
    background_deletions: list[int] = field(default_factory=list)
    """Memories cleared per game that are not among its faults (precision)."""

    @property
    def recovery(self) -> float:
        """The share of games whose answer the clearance recovered."""
        return self.recovered / self.games if self.games else 0.0

    @property
    def mean_calls(self) -> float:
        """The mean number of evaluator calls per game."""
        return statistics.fmean(self.calls) if self.calls else 0.0

    def overhead(self, delay: float) -> float:
        """Median engine time over the model-time lower bound rounds x 2 x delay.

        Args:
            delay: The seconds every model call takes.

        Returns:
            The ratio (0.0 when nothing was measured).
        """
        if not self.engine_seconds or not self.rounds or delay <= 0:
            return 0.0
        return statistics.median(self.engine_seconds) / (statistics.median(self.rounds) * 2 * delay)


class _CountingModel:
    """Agent and judge calls of one query, with optional latency and a concurrency cap.

    ``busy`` is the CPU time spent inside the evaluator (simulated answers, verdicts and their
    cache: the caller's side, not the engine's).
    """

    def __init__(self, delay: float, semaphore: asyncio.Semaphore | None) -> None:
        self.delay = delay
        self.semaphore = semaphore
        self.calls = 0
        self.busy = 0.0

    async def call(self) -> None:
        self.calls += 1
        if self.delay <= 0 or self.semaphore is None:
            return
        async with self.semaphore:
            await asyncio.sleep(self.delay)


def _evaluator(case: SimulatedCase, model: _CountingModel) -> Any:
    world, reference = case.world, case.reference

    async def answer(coalition: tuple[Memory, ...], trial: int) -> str:
        await model.call()
        return world.answer((m.id for m in coalition), case_id=case.case_id, trial=trial)

    async def judge(text: str) -> float:
        await model.call()
        return exact_match_score(text, reference)

    evaluate = adedup_evaluator(answer, judge, AnswerCache(deterministic=False))

    async def timed(coalition: tuple[Memory, ...], trial: int) -> float:
        start = time.thread_time()
        try:
            return await evaluate(coalition, trial)
        finally:
            model.busy += time.thread_time() - start

    return timed


async def _zero_latency(case: SimulatedCase, config: ClearanceConfig) -> tuple[Any, int, float]:
    """(report, model calls, engine seconds) with every model call instant.

    The CPU time of the run's thread (the async path runs on one thread; time other processes take
    from it is not counted) minus the CPU time spent inside the evaluator.
    """
    model = _CountingModel(0.0, None)
    evaluate = _evaluator(case, model)
    start = time.thread_time()
    report = await MeClearEngine(config).aclear(case.memories, evaluate)
    return report, model.calls, time.thread_time() - start - model.busy


def _zero_latency_all(
    cases: Sequence[SimulatedCase], config: ClearanceConfig
) -> list[tuple[Any, int, float]]:
    """:func:`_zero_latency` for every case on one event loop (after one warm-up run)."""

    async def run() -> list[tuple[Any, int, float]]:
        if cases:
            await _zero_latency(cases[0], config)
        return [await _zero_latency(case, config) for case in cases]

    return asyncio.run(run())


def _with_latency(
    case: SimulatedCase, config: ClearanceConfig, delay: float, concurrency: int
) -> float:
    async def run() -> float:
        model = _CountingModel(delay, asyncio.Semaphore(concurrency))
        start = time.perf_counter()
        await MeClearEngine(config).aclear(case.memories, _evaluator(case, model))
        return time.perf_counter() - start

    return asyncio.run(run())


def _peak_mib(case: SimulatedCase, config: ClearanceConfig) -> float:
    tracemalloc.start()
    try:
        asyncio.run(_zero_latency(case, config))
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def measure_scale(
    ks: Sequence[int],
    *,
    games: int = 20,
    families: Sequence[str] = DEFAULT_FAMILIES,
    presets: Sequence[str] = ("default", "flat", "paper"),
    delay: float = 0.05,
    concurrency: int = 64,
    wall_games: int = 1,
    temperature: float = 0.0,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[ScaleRow]:
    """One :class:`ScaleRow` per (preset, K), every preset on the same games.

    Args:
        ks: The context sizes K.
        games: The games per family and K.
        families: The harm families (``direct``, ``redundant xN``, ``joint``).
        presets: The engine presets compared.
        delay: The seconds every model call takes.
        concurrency: The most model calls at once.
        wall_games: The games per K timed end to end.
        temperature: The simulated reader's temperature.
        seed: The first game's seed.
        progress: Called with a line per finished (preset, K).

    Returns:
        The rows.
    """
    rows: list[ScaleRow] = []
    for k in ks:
        cases = [
            (name, case)
            for name in families
            if k >= FAMILIES[name].faults + 1
            for case in scale_games(k, FAMILIES[name], games, seed=seed, temperature=temperature)
        ]
        for preset in presets:
            config = PRESETS[preset]().updated(budget={"max_concurrency": concurrency}, seed=seed)
            row = ScaleRow(preset=preset, k=k)
            runs = _zero_latency_all([case for _, case in cases], config)
            for n, ((family, case), (report, model_calls, seconds)) in enumerate(
                zip(cases, runs, strict=True)
            ):
                row.games += 1
                row.recovered += bool(report.recovered)
                row.calls.append(report.cost.evaluator_calls)
                row.model_calls.append(model_calls)
                row.rounds.append(report.cost.rounds)
                row.engine_seconds.append(seconds)
                wrong = len(set(report.cleared_ids) - set(case.targets))
                row.background_deletions.append(wrong)
                stats = row.by_family.setdefault(family, [0, 0, 0, 0])
                stats[0] += 1
                stats[1] += bool(report.recovered)
                stats[2] += report.cost.evaluator_calls
                stats[3] += wrong
                if n < wall_games:
                    row.wall_seconds.append(_with_latency(case, config, delay, concurrency))
            if cases:
                row.peak_mib = _peak_mib(cases[0][1], config)
            rows.append(row)
            if progress is not None:
                progress(
                    f"K={k} {preset}: recovery {100 * row.recovery:.1f}%, "
                    f"{row.mean_calls:.1f} calls/query"
                )
    return rows


def render_scale(rows: Sequence[ScaleRow], *, delay: float, concurrency: int) -> str:
    """The markdown table of :func:`measure_scale`'s rows.

    Args:
        rows: The rows.
        delay: The seconds every model call took.
        concurrency: The most model calls at once.

    Returns:
        The table.
    """
    lines = [
        "| preset | K | recovery % | evaluator calls / faulty query (mean, max) | target "
        "| model calls / query | rounds | wall s / query | engine CPU ms | overhead % "
        "| peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        target = TARGET_CALLS.get(row.k)
        wall = f"{statistics.median(row.wall_seconds):.2f}" if row.wall_seconds else "-"
        lines.append(
            f"| {row.preset} | {row.k} | {100 * row.recovery:.1f} "
            f"| {row.mean_calls:.1f}, {max(row.calls, default=0)} "
            f"| {target if target is not None and row.preset == 'default' else ''} "
            f"| {statistics.fmean(row.model_calls) if row.model_calls else 0:.1f} "
            f"| {statistics.fmean(row.rounds) if row.rounds else 0:.1f} | {wall} "
            f"| {1000 * statistics.median(row.engine_seconds) if row.engine_seconds else 0:.1f} "
            f"| {100 * row.overhead(delay):.1f} | {row.peak_mib:.1f} |"
        )
    lines.append("")
    lines.append(
        "Recovery, calls and precision per family (recovered/games, mean evaluator calls, "
        "background deletions per game):"
    )
    for row in rows:
        parts = [
            f"{family} {stats[1]}/{stats[0]} {stats[2] / stats[0]:.1f} "
            f"bg {(stats[3] if len(stats) > 3 else 0) / stats[0]:.2f}"
            for family, stats in row.by_family.items()
            if stats[0]
        ]
        lines.append(f"- {row.preset} K={row.k}: " + "; ".join(parts))
    lines.append("")
    lines.append(
        f"SIMULATED: the simulated evidence world answers; a model call takes "
        f"{1000 * delay:.0f} ms, at most {concurrency} in flight; one evaluator call = one "
        "agent call + one judge call per distinct answer. Overhead = engine time / (rounds "
        "x 2 x delay)."
    )
    return "\n".join(lines)


def plot_scale(rows: Sequence[ScaleRow], path: Path, *, delay: float) -> Path:
    """Calls, recovery, wall time and overhead against K, one line per preset.

    Args:
        rows: The rows.
        path: The PNG written.
        delay: The seconds every model call took.

    Returns:
        ``path``.
    """
    from ..figures import load_pyplot

    plt = load_pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    presets = list(dict.fromkeys(r.preset for r in rows))
    panels = [
        (axes[0][0], "evaluator calls / faulty query", lambda r: r.mean_calls, True),
        (axes[0][1], "recovery %", lambda r: 100 * r.recovery, False),
        (
            axes[1][0],
            f"wall s / query ({1000 * delay:.0f} ms per model call)",
            lambda r: statistics.median(r.wall_seconds) if r.wall_seconds else float("nan"),
            True,
        ),
        (axes[1][1], "engine overhead % of model time", lambda r: 100 * r.overhead(delay), True),
    ]
    for ax, title, metric, log in panels:
        values: list[float] = []
        for preset in presets:
            sub = [r for r in rows if r.preset == preset]
            values += [metric(r) for r in sub]
            ax.plot([r.k for r in sub], [metric(r) for r in sub], marker="o", label=preset)
        ax.set_xscale("log")
        if log and all(v > 0 for v in values if math.isfinite(v)) and any(v > 0 for v in values):
            ax.set_yscale("log")  # not when nothing was timed (--wall-games 0: overhead 0)
        ax.set_xlabel("K (retrieved memories)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    targets = sorted(TARGET_CALLS.items())
    axes[0][0].plot(
        [k for k, _ in targets], [t for _, t in targets], "k--", linewidth=1, label="target"
    )
    axes[0][1].axhline(95, color="black", linestyle="--", linewidth=1, label="target")
    axes[1][1].axhline(5, color="black", linestyle="--", linewidth=1, label="target")
    axes[0][0].legend()
    fig.suptitle("meclear budget scale (SIMULATED evidence world)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def write_json(rows: Sequence[ScaleRow], path: Path, settings: dict[str, Any]) -> Path:
    """Every row (raw per-query figures included) and the settings of the run.

    Args:
        rows: The rows.
        path: The JSON file written.
        settings: The run's settings.

    Returns:
        ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"simulated": True, "settings": settings, "rows": [asdict(r) for r in rows]}
    path.write_text(json.dumps(payload, indent=2))
    return path
