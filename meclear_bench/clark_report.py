"""CLARK-News tables: expected recovery by fault type with model calls, and a per-case diagnosis.

Reads the ``outcomes.jsonl`` of a ``meclear bench --cases CLARK_CASES`` run
(:mod:`meclear_bench.clark_news`) and prints, in markdown:

1. the headline, on the faults the data gives only: per method, E[recovery] in % on stale
   facts (a stale answer stated once or twice, ``direct`` / ``redundant``), clean queries and
   both together (``data``), the model calls (agent + judge) per case in each, and the
   deleted background memories per case on them; then, apart and labelled ours, the kinds
   this project's builder writes (wrong corrections, stale-joint when built): their
   E[recovery] and calls;
2. per method against a comparator (default ``newest``) on the data's stale facts: where the method
   loses or gains expected recovery (with a 95% cluster-bootstrap interval over questions),
   by what it deleted (:func:`~.gap.outcome_kind`: exact,
   superset, partial, nothing deleted, abstained, ...), each kind's cases and its share of
   the difference in percentage points over all stale cases; paired case wins and losses.
   With ``--cases`` and ``--judge``, the cases whose simulated judge is wrong on every call
   about the current answer, the stale one or the abstention are marked
   (:func:`judge_blind`).

The setting of ``meclear-recency`` (``RECENCY_SIMILARITY``,
:mod:`meclear_bench.methods.recency`) was chosen on the dev split with these tables (noisy
setting, 528 cases, ``--methods oracle,meclear-recency,newest``, similarity 0.2 / 0.3 / 0.4
/ 0.5): stale facts 85.1 / 85.4 / 84.8 / 81.8 against newest-wins' 85.4 at 32.3 / 25.0 /
33.9 / 67.1 model calls per stale case, deleted background 0.13 per case at 0.3 (the
similarity groups chain: at 0.3 every stale case deletes all its stale copies).

Usage::

    python -m meclear_bench.clark_report OUT_DIR [--against newest] [--diagnose all]
        [--cases CASES --judge persistent:0.05 --seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from meclear_integrations.simulation.judging import JudgeSignal, SimulatedJudge

from .bootstrap import ClusterBootstrap
from .cases import BenchCase, load_cases
from .gap import outcome_kind

__all__ = [
    "BUILDER_KINDS",
    "DIAGNOSED",
    "FAULTS",
    "diagnosis",
    "fault_table",
    "judge_blind",
    "kind_of",
    "main",
    "markdown",
]

DIAGNOSED: tuple[str, ...] = ("meclear", "meclear-recency")
"""The methods diagnosed by default."""

FAULTS: tuple[str, ...] = ("stale", "clean")
"""The kinds the data gives (the headline's columns; ``data``: both together)."""
BUILDER_KINDS: tuple[str, ...] = ("wrong corr.", "stale-joint")
"""The kinds this project's builder writes (reported apart, labelled ours)."""


def kind_of(row: dict[str, Any]) -> str:
    """The CLARK-News kind of one outcome row.

    Args:
        row: A line of ``outcomes.jsonl``.

    Returns:
        ``stale`` (the data's stale answer, once or twice), ``clean``, or a builder-written
        kind: ``wrong corr.`` (a "Correction:" the builder writes) or ``stale-joint`` (two
        weaker copies whose weights the builder chose).
    """
    fault = row.get("fault_type") or "none"
    if fault == "wrong_correction":
        return "wrong corr."
    if fault == "stale":
        return "stale-joint" if row.get("structure") == "joint" else "stale"
    return "clean"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def fault_table(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per method: E[recovery] (%) and model calls per case by kind.

    Args:
        rows: The lines of ``outcomes.jsonl``.

    Returns:
        One entry per method, in the run's order: ``method``, ``n`` (the data's cases), and
        per kind ``recovery`` / ``calls`` dictionaries (:data:`FAULTS`, ``data`` for both
        together, and :data:`BUILDER_KINDS`; NaN for a kind the run lacks),
        ``deleted_background`` per case on the data's kinds.
    """
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_method[row["method"]].append(row)
    table: list[dict[str, Any]] = []
    for method, outcomes in by_method.items():
        recovery: dict[str, float] = {}
        calls: dict[str, float] = {}
        data = [r for r in outcomes if kind_of(r) in FAULTS]
        for label in (*FAULTS, "data", *BUILDER_KINDS):
            chosen = data if label == "data" else [r for r in outcomes if kind_of(r) == label]
            recovery[label] = 100 * _mean([r["expected_recovery"] for r in chosen])
            calls[label] = _mean([r["model_calls"] for r in chosen])
        table.append(
            {
                "method": method,
                "n": len(data),
                "recovery": recovery,
                "calls": calls,
                "deleted_background": _mean([r["cleared_extra_background"] for r in data]),
            }
        )
    return table


def judge_blind(cases: Iterable[BenchCase], judge: str, seed: int = 0) -> set[str]:
    """Cases whose simulated judge is always wrong about the current, a stale or no answer.

    With a persistent judge error (``persistent:e``, ``mixed:p:e``) the verdict on a given
    question and answer is the same wrong one on every call: no verification can show that
    clearing the stale memory recovers (or that the full context fails), and a clearance
    that leaves the agent with no answer may pass. A diagnosis, not a method input: it
    reads the case's labels.

    Args:
        cases: The run's cases.
        judge: The run's judge signal (``--judge``; ``persistent:0.05`` for ``--setting
            persistent``).
        seed: The run's seed.

    Returns:
        The ids of those cases (none for a judge without persistent errors).
    """
    signal = JudgeSignal.parse(judge)
    blind: set[str] = set()
    for case in cases:
        if not case.targets:
            continue
        judged = SimulatedJudge(
            case.world,
            case.reference,
            case_id=case.case_id,
            context_ids=[m.id for m in case.memories],
            signal=signal,
            question=case.query,
            seed=seed,
        )
        stale = {case.world.claims[t].answer for t in case.targets if t in case.world.claims}
        if any(judged.persistent_flip(a) for a in (case.reference, case.world.abstain, *stale)):
            blind.add(case.case_id)
    return blind


def diagnosis(
    rows: Iterable[dict[str, Any]],
    method: str,
    against: str = "newest",
    blind: set[str] | None = None,
    replicates: int = 2000,
) -> dict[str, Any]:
    """Where ``method`` loses or gains E[recovery] against ``against`` on the data's stale facts.

    Args:
        rows: The lines of ``outcomes.jsonl``.
        method: The method diagnosed.
        against: The comparator (default: newest-wins).
        blind: Cases whose judge is persistently wrong (:func:`judge_blind`): their kinds
            are reported apart, marked ``judge wrong``.
        replicates: Cluster-bootstrap replicates of the difference's 95% interval
            (questions, then their cases; 0: none).

    Returns:
        ``kinds``: per outcome kind of ``method`` (with the abstention reason), its cases
        and its share of the difference (pp over all stale cases, negative: a loss);
        ``difference`` (pp) and its ``interval`` (pp, or None), ``wins`` / ``losses`` (cases,
        by more than 0.005 of E[recovery]).

    Raises:
        ValueError: The run lacks either method or any stale case.
    """
    stale = [r for r in rows if kind_of(r) == "stale"]
    mine = {r["case_id"]: r for r in stale if r["method"] == method}
    theirs = {r["case_id"]: r for r in stale if r["method"] == against}
    if not mine or not theirs:
        raise ValueError(f"the run has no stale cases of both {method!r} and {against!r}")
    cases: Counter[str] = Counter()
    share: Counter[str] = Counter()
    wins = losses = 0
    for case_id, row in mine.items():
        delta = row["expected_recovery"] - theirs[case_id]["expected_recovery"]
        kind = f"{outcome_kind(row)}/{row['structure']}"
        if row.get("status", "complete") != "complete":
            kind += f" ({row.get('status_reason') or row['status']})"
        if blind is not None and case_id in blind:
            kind += ", judge wrong"
        cases[kind] += 1
        share[kind] += 100 * delta / len(mine)
        wins += delta > 0.005
        losses += delta < -0.005
    ids = sorted(mine)
    boot = ClusterBootstrap(
        [mine[c]["cluster"] for c in ids], ids, replicates=replicates, seed=0
    )  # questions, then their cases
    deltas = np.array(
        [100 * (mine[c]["expected_recovery"] - theirs[c]["expected_recovery"]) for c in ids]
    )
    interval = boot.interval(deltas, np.ones(len(ids))) if replicates else None
    kinds = [
        {"kind": kind, "cases": cases[kind], "difference": share[kind]}
        for kind in sorted(cases, key=lambda k: (share[k], k))
    ]
    return {
        "method": method,
        "against": against,
        "kinds": kinds,
        "difference": sum(share.values()),
        "interval": interval,
        "wins": wins,
        "losses": losses,
        "cases": len(mine),
    }


def markdown(
    rows: Sequence[dict[str, Any]],
    against: str = "newest",
    diagnose: Sequence[str] | None = DIAGNOSED,
    blind: set[str] | None = None,
) -> str:
    """Both tables (module docstring) as markdown.

    Args:
        rows: The lines of ``outcomes.jsonl``.
        against: The comparator of the stale-fact diagnosis.
        diagnose: The methods diagnosed (those in the run; None: every method but the
            comparator, the oracle and ``none``).
        blind: Cases whose judge is persistently wrong (:func:`judge_blind`).

    Returns:
        The markdown text.
    """
    labels = [*FAULTS, "data"]
    lines = [
        "Faults the data gives (stale facts, clean queries):",
        "",
        "| method | E[recovery] " + " / ".join(labels) + " | model calls / case "
        "" + " / ".join(labels) + " | deleted bg / case |",
        "|---|---|---|---|",
    ]
    table = fault_table(rows)

    def cell(value: float) -> str:
        return "n/a" if math.isnan(value) else f"{value:.1f}"

    for entry in table:
        rec = " / ".join(cell(entry["recovery"][k]) for k in labels)
        calls = " / ".join(cell(entry["calls"][k]) for k in labels)
        bg = entry["deleted_background"]
        lines.append(f"| {entry['method']} | {rec} | {calls} | {bg:.3f} |")
    ours = [k for k in BUILDER_KINDS if any(not math.isnan(e["recovery"][k]) for e in table)]
    if ours:
        lines += [
            "",
            "Kinds our builder writes (not in the data; reported apart):",
            "",
            "| method | E[recovery] " + " / ".join(f"{k} (ours)" for k in ours) + " | model "
            "calls / case " + " / ".join(ours) + " |",
            "|---|---|---|",
        ]
        for entry in table:
            rec = " / ".join(cell(entry["recovery"][k]) for k in ours)
            calls = " / ".join(cell(entry["calls"][k]) for k in ours)
            lines.append(f"| {entry['method']} | {rec} | {calls} |")
    methods = [e["method"] for e in table if e["method"] not in (against, "oracle", "none")]
    if diagnose is not None:
        methods = [m for m in methods if m in diagnose]
    if against not in {e["method"] for e in table}:
        return "\n".join(lines) + "\n"
    if not any(kind_of(r) == "stale" for r in rows):
        # e.g. through the offline text reader only builder-written stale kinds may survive
        lines += ["", "No stale fact the data gives in this run: no stale-fact diagnosis."]
        return "\n".join(lines) + "\n"
    for method in methods:
        found = diagnosis(rows, method, against, blind)
        ci = found["interval"]
        span = f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci is not None else ""
        lines += [
            "",
            f"{method} minus {against} on stale facts: {found['difference']:+.1f} pp{span} over "
            f"{found['cases']} cases ({found['wins']} wins, {found['losses']} losses)",
            "",
            "| outcome | cases | share of the difference (pp) |",
            "|---|---|---|",
        ]
        for k in found["kinds"]:
            lines.append(f"| {k['kind']} | {k['cases']} | {k['difference']:+.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables of a run directory (``python -m meclear_bench.clark_report``).

    Args:
        argv: The command line (None: ``sys.argv``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a meclear bench output directory")
    parser.add_argument("--against", default="newest", help="the stale-fact comparator")
    parser.add_argument(
        "--diagnose",
        default=",".join(DIAGNOSED),
        help="comma-separated methods diagnosed ('all': every method)",
    )
    parser.add_argument("--cases", type=Path, help="the run's case file (with --judge)")
    parser.add_argument("--judge", help="the run's judge signal: mark persistently wrong cases")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (with --judge)")
    args = parser.parse_args(argv)
    blind = None
    if args.judge is not None:
        if args.cases is None:
            parser.error("--judge needs --cases")
        blind = judge_blind(load_cases(args.cases).cases, args.judge, args.seed)
    diagnose = None if args.diagnose == "all" else [m for m in args.diagnose.split(",") if m]
    with open(args.run / "outcomes.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    print(markdown(rows, args.against, diagnose, blind), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
