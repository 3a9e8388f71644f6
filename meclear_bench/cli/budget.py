"""``meclear budget``: what one clearance costs in latency and engine overhead.

- ``meclear budget latency``: a simulated-latency model (every model call takes a fixed
  delay; at most ``--concurrency`` calls in flight). An evaluator call is one agent call
  followed by one judge call. Reports the wall time of one clearance divided by the wall
  time of one answer+judge round, the default preset (with the answer/judge dedup helper)
  against the paper preset (no dedup), plus rounds, evaluator calls and model calls.
- ``meclear budget overhead``: a zero-latency evaluator, so the wall time is the engine's
  own (K=20 with L=100 permutations, and K=50 and K=200).
- ``meclear budget scale``: calls, recovery, wall time, engine overhead and peak memory
  against K for the presets, on scale games with sparse harm (``cli.budget_scale``).

Every figure comes from the SIMULATED evidence world or a synthetic game, not a real model.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from meclear_integrations.core import (
    AnswerCache,
    Budget,
    ClearanceConfig,
    MeClearEngine,
    Memory,
    PermutationShapley,
)
from meclear_integrations.core.judging.dispatch import adedup_evaluator
from meclear_integrations.simulation import EvidenceWorld, exact_match_score

__all__ = ["LatencyModel", "measure_latency", "measure_overhead", "register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear budget`` subcommand (latency and engine overhead of one clearance).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "budget",
        help="latency and engine-overhead budget of one clearance (simulated)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    inner = p.add_subparsers(dest="budget_command", metavar="WHAT")
    lat = inner.add_parser("latency", help="clearance wall time / one answer+judge round")
    lat.add_argument("--cases", type=Path, default=None, help="JSONL cases (default built-in)")
    lat.add_argument("--max-cases", type=int, default=40, help="cases to run (default 40)")
    lat.add_argument("--delay", type=float, default=0.02, help="seconds per model call")
    lat.add_argument("--concurrency", type=int, default=64, help="model calls in flight")
    lat.add_argument("--seed", type=int, default=0)
    lat.set_defaults(handler=_handle_latency)
    ovh = inner.add_parser("overhead", help="engine wall time with a zero-latency evaluator")
    ovh.add_argument("--repeats", type=int, default=9, help="runs per setting (median shown)")
    ovh.set_defaults(handler=_handle_overhead)
    sc = inner.add_parser(
        "scale", help="calls, recovery, wall time and overhead against K (simulated)"
    )
    sc.add_argument("--k", default="5,10,20,50,100,200", help="comma-separated context sizes")
    sc.add_argument("--games", type=int, default=20, help="games per family and K (default 20)")
    sc.add_argument(
        "--families",
        default="direct,redundant2,redundant3",
        help="comma-separated: direct, redundant2, redundant3, redundant5, redundant10, "
        "redundant20, joint",
    )
    sc.add_argument(
        "--presets",
        default="default,flat,paper",
        help="comma-separated: default, cheap, flat, paper",
    )
    sc.add_argument("--delay", type=float, default=0.05, help="seconds per model call")
    sc.add_argument("--concurrency", type=int, default=64, help="model calls in flight")
    sc.add_argument("--wall-games", type=int, default=1, help="games per cell timed with latency")
    sc.add_argument("--temperature", type=float, default=0.0, help="reader temperature")
    sc.add_argument("--seed", type=int, default=0)
    sc.add_argument("--out", type=Path, default=None, help="write scale.json and scale.png here")
    sc.add_argument("--no-progress", action="store_true", help="no per-cell progress lines")
    sc.set_defaults(handler=_handle_scale)
    p.set_defaults(handler=lambda args: p.print_help() or 2)


# ----------------------------------------------------------------------------- latency
class LatencyModel:
    """Model calls that take ``delay`` seconds, at most ``concurrency`` at once; counted.

    Args:
        delay: The seconds every call takes.
        concurrency: The most calls at once.
    """

    def __init__(self, delay: float, concurrency: int) -> None:
        self.delay = delay
        self.semaphore = asyncio.Semaphore(concurrency)
        self.calls = 0

    async def call(self) -> None:
        """Make one model call: wait ``delay`` seconds under the concurrency cap."""
        async with self.semaphore:
            self.calls += 1
            await asyncio.sleep(self.delay)


@dataclass(frozen=True)
class _Case:
    case_id: str
    memories: list[Memory]
    world: EvidenceWorld
    reference: str


@dataclass(frozen=True)
class LatencyRow:
    """One preset on one case."""

    preset: str
    """The engine preset."""
    ratio: float
    """Wall time over the time of one evaluator call (an agent and a judge call)."""
    rounds: int
    """Evaluation rounds."""
    evaluator_calls: int
    """Evaluator calls."""
    model_calls: int
    """Agent and judge calls."""


def _evaluator(case: _Case, model: LatencyModel, cache: AnswerCache | None):
    async def answer(coalition: tuple[Memory, ...], trial: int) -> str:
        await model.call()
        ids = (m.id for m in coalition)
        return case.world.answer(ids, case_id=case.case_id, trial=trial)

    async def judge(text: str) -> float:
        await model.call()
        return exact_match_score(text, case.reference)

    if cache is not None:
        return adedup_evaluator(answer, judge, cache)

    async def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
        return await judge(await answer(coalition, trial))

    return evaluate


async def _one(case: _Case, preset: str, delay: float, concurrency: int, seed: int) -> LatencyRow:
    probe = LatencyModel(delay, concurrency)
    t0 = time.perf_counter()
    await _evaluator(case, probe, None)(tuple(case.memories), 0)
    round_time = time.perf_counter() - t0
    model = LatencyModel(delay, concurrency)
    # The default preset uses the dedup helper: identical answers judged once per query,
    # identical prompts answered once when the reader is deterministic (temperature 0).
    cache = AnswerCache(deterministic=case.world.temperature == 0) if preset == "default" else None
    config = ClearanceConfig.preset(preset, budget=Budget(max_concurrency=concurrency), seed=seed)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    report = await MeClearEngine(config).aclear(case.memories, _evaluator(case, model, cache))
    return LatencyRow(
        preset=preset,
        ratio=(time.perf_counter() - t0) / round_time,
        rounds=report.cost.rounds,
        evaluator_calls=report.cost.evaluator_calls,
        model_calls=model.calls,
    )


def _load_cases(path: Path | None, limit: int) -> list[_Case]:
    if path is not None:
        from .. import load_cases

        bench = load_cases(path).cases
    else:
        from .. import load_builtin_cases

        bench = list(load_builtin_cases())
    return [_Case(c.case_id, c.context(), c.world, c.reference) for c in bench[: max(1, limit)]]


def measure_latency(
    cases: Sequence[_Case], *, delay: float, concurrency: int, seed: int = 0
) -> dict[str, list[LatencyRow]]:
    """Per preset, one :class:`LatencyRow` per case (cases run one after another).

    Args:
        cases: The simulated cases.
        delay: The seconds every model call takes.
        concurrency: The most model calls at once.
        seed: The engine's seed.

    Returns:
        Preset -> one row per case.
    """

    async def run() -> dict[str, list[LatencyRow]]:
        rows: dict[str, list[LatencyRow]] = {"default": [], "paper": []}
        for case in cases:
            for preset in rows:
                rows[preset].append(await _one(case, preset, delay, concurrency, seed))
        return rows

    return asyncio.run(run())


def _handle_latency(args: argparse.Namespace) -> int:
    cases = _load_cases(args.cases, args.max_cases)
    rows = measure_latency(cases, delay=args.delay, concurrency=args.concurrency, seed=args.seed)
    print(
        "SIMULATED latency model: every model call takes "
        f"{args.delay * 1000:.0f} ms, at most {args.concurrency} in flight; one evaluator call "
        "= agent call + judge call. Ratio = clearance wall time / one answer+judge round."
    )
    print(f"{len(cases)} cases from {args.cases or 'the built-in set'}")
    print(
        "| preset | mean ratio | max ratio | mean rounds | evaluator calls / case "
        "| model calls / case |"
    )
    print("|---|---|---|---|---|---|")
    for preset, block in rows.items():
        print(
            f"| {preset} | {statistics.fmean(r.ratio for r in block):.2f} "
            f"| {max(r.ratio for r in block):.2f} "
            f"| {statistics.fmean(r.rounds for r in block):.2f} "
            f"| {statistics.fmean(r.evaluator_calls for r in block):.1f} "
            f"| {statistics.fmean(r.model_calls for r in block):.1f} |"
        )
    return 0


# ----------------------------------------------------------------------------- overhead
def _synthetic_value(coalition: tuple[Memory, ...], trial: int) -> float:
    """Redundant harm: m0 supports the answer, m1 and m2 each override it (zero latency)."""
    ids = {m.id for m in coalition}
    return 1.0 if "m0" in ids and "m1" not in ids and "m2" not in ids else 0.0


OVERHEAD_SETTINGS: list[tuple[str, int, ClearanceConfig]] = [
    (
        "paper preset, L=100 (T=2)",
        20,
        ClearanceConfig.paper(estimator=PermutationShapley(permutations=100)),
    ),
    (
        "default, estimator=permutation, L=100 (adaptive T)",
        20,
        ClearanceConfig(estimator=PermutationShapley(permutations=100)),
    ),
    ("default (auto: hierarchical)", 20, ClearanceConfig()),
    ("default, estimator=kernel", 20, ClearanceConfig(estimator="kernel")),
    ("default (auto: hierarchical)", 50, ClearanceConfig()),
    ("default (auto: hierarchical)", 200, ClearanceConfig()),
    (
        "default, estimator=permutation, L=100",
        50,
        ClearanceConfig(estimator=PermutationShapley(permutations=100)),
    ),
]


def measure_overhead(repeats: int = 9) -> list[tuple[str, int, float, float, int]]:
    """(setting, K, median ms, min ms, evaluator calls) for each overhead setting.

    Args:
        repeats: The runs per setting (the median is reported).

    Returns:
        One row per overhead setting.
    """
    rows = []
    for label, k, config in OVERHEAD_SETTINGS:
        memories = [Memory(id=f"m{i}", content=f"memory {i}") for i in range(k)]
        times, calls = [], 0
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            report = MeClearEngine(config).clear(memories, _synthetic_value)
            times.append(time.perf_counter() - t0)
            calls = report.cost.evaluator_calls
        rows.append((label, k, statistics.median(times) * 1000, min(times) * 1000, calls))
    return rows


def _handle_overhead(args: argparse.Namespace) -> int:
    print(
        "Engine overhead: zero-latency synthetic evaluator (redundant-harm game), sync path, "
        "max_concurrency 8; wall time is the engine's own work."
    )
    print("| setting | K | median ms | min ms | evaluator calls |")
    print("|---|---|---|---|---|")
    for label, k, median, best, calls in measure_overhead(args.repeats):
        print(f"| {label} | {k} | {median:.1f} | {best:.1f} | {calls} |")
    return 0


# ----------------------------------------------------------------------------- scale
def _handle_scale(args: argparse.Namespace) -> int:
    import sys

    from .budget_scale import FAMILIES, PRESETS, measure_scale, plot_scale, render_scale, write_json

    ks = [int(x) for x in args.k.split(",") if x.strip()]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    unknown = [f for f in families if f not in FAMILIES] + [p for p in presets if p not in PRESETS]
    if unknown or not ks or min(ks) < 1:
        print(f"unknown families/presets {unknown} or bad --k {args.k!r}", file=sys.stderr)
        return 2
    rows = measure_scale(
        ks,
        games=args.games,
        families=families,
        presets=presets,
        delay=args.delay,
        concurrency=args.concurrency,
        wall_games=args.wall_games,
        temperature=args.temperature,
        seed=args.seed,
        progress=None if args.no_progress else lambda line: print(line, file=sys.stderr),
    )
    print(render_scale(rows, delay=args.delay, concurrency=args.concurrency))
    if args.out is not None:
        settings = {k: v for k, v in vars(args).items() if k not in {"handler", "out"}}
        written = [
            write_json(rows, args.out / "scale.json", settings),
            plot_scale(rows, args.out / "scale.png", delay=args.delay),
        ]
        print("wrote " + ", ".join(str(p) for p in written))
    return 0
