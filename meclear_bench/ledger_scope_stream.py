"""Scoped harm over a live-style stream: off-topic memories withheld, true memories proposed.

``python -m meclear_bench.ledger_scope_stream`` plays a scripted app (offline,
deterministic; the judge is a scripted function, not a model) through ``ClearanceGate`` and
a ``HarmLedger``, in the style of issue 24's live test: a bank of ``--questions`` true notes
(one per question), a stale note contradicting each of the first ``--stale`` questions, and
every question's context its K notes: its own true note, its stale note if it has one, the
rest drawn from the bank (other questions' notes and stale notes as background). Two
questions misread: one is misled by another question's true note (it is cleared for that
question only), and one fails on its full context whatever it holds (any removal passes,
the pattern of a noisy judge).

Pass 1 asks every question once (the gate clears and records). Pass 2 asks every question
again and a template rewording of it, and counts:

- ``off_topic_withheld``: memories the request path would withhold (``scoped_harm``)
  whose harm was verified only on *another* question (not this one or its rewording);
  the same count for the unscoped lookup (``prior_candidate(context)`` without the
  question, the ledger's behaviour before scoping);
- ``true_proposed``: true notes that ``review(min_queries=2)`` proposes for deletion.

Targets (issue 24): 0 and 0.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.engine import MeClearEngine
from meclear_integrations.core.memory import Memory
from meclear_integrations.guard.gate import ClearanceGate
from meclear_integrations.triggers.policies import Always

__all__ = ["main", "run_stream"]

_WORDS = (
    "dentist",
    "garden",
    "violin",
    "bakery",
    "harbor",
    "tennis",
    "museum",
    "orchard",
    "lantern",
    "bicycle",
    "novel",
    "cactus",
    "piano",
    "glacier",
    "pottery",
    "canoe",
    "chess",
    "falcon",
    "meadow",
    "quilt",
    "robot",
    "saddle",
    "tulip",
    "volcano",
    "yacht",
    "zebra",
    "anchor",
    "bridge",
    "candle",
    "desert",
    "ember",
    "fossil",
    "goblet",
    "helmet",
    "island",
    "jungle",
    "kettle",
    "lagoon",
)


def _question(i: int) -> str:
    return f"What did Sam say about the {_WORDS[i % len(_WORDS)]} {i}?"


def run_stream(
    *, questions: int = 15, stale: int = 5, k: int = 12, seed: int = 0, url: str | None = None
) -> dict[str, Any]:
    """Play the two passes (module docstring) and count.

    Args:
        questions: Questions (one true note each).
        stale: Questions with a stale note.
        k: Notes per context.
        seed: The seed of the contexts.
        url: The ledger (None: a temporary SQLite file).

    Returns:
        The counts and the per-question detail.
    """
    from meclear_integrations.ledger import HarmLedger

    rng = np.random.default_rng(seed)
    true = [Memory(id=f"t{i}", content=f"Sam's {_WORDS[i]} note {i}.") for i in range(questions)]
    wrong = [Memory(id=f"s{i}", content=f"Old: Sam's {_WORDS[i]} note {i}.") for i in range(stale)]
    bank = [*true, *wrong]
    misled, noisy = min(6, questions - 1), min(10, questions - 1)
    contexts: list[list[Memory]] = []
    for i in range(questions):
        mine = [true[i], *([wrong[i]] if i < stale else [])]
        if i == misled:
            mine.append(true[misled - 1])
        others = [m for m in bank if m not in mine]
        picked = rng.choice(len(others), max(0, k - len(mine)), replace=False)
        contexts.append([*mine, *(others[int(j)] for j in sorted(picked))])

    def judge(i: int) -> Callable[[tuple[Memory, ...], int], float]:
        def evaluate(coalition: tuple[Memory, ...], trial: int) -> float:
            ids = {m.id for m in coalition}
            if f"t{i}" not in ids or f"s{i}" in ids:
                return 0.0
            if i == misled and f"t{misled - 1}" in ids:
                return 0.0  # misreads another question's true note
            if i == noisy and len(ids) == len(contexts[i]):
                return 0.0  # the full context fails whatever it holds
            return 1.0

        return evaluate

    with tempfile.TemporaryDirectory(prefix="meclear-scope-stream-") as folder:
        target = url or f"sqlite:///{Path(folder) / 'ledger.db'}"
        with HarmLedger(target, namespace="scope-stream") as ledger:
            gate = ClearanceGate(trigger=Always(), ledger=ledger)

            def ask(text: str, i: int) -> None:
                plan = gate.plan(text, contexts[i], ClearanceConfig())
                report = MeClearEngine(plan.config).clear(
                    contexts[i], judge(i), prior_harmful=plan.prior
                )
                gate.finish(plan, report, success_signal="reference")

            for i in range(questions):
                ask(_question(i), i)
            off_scoped = off_unscoped = withheld = 0
            detail = []
            for i in range(questions):
                for text in (_question(i), "Remind me, " + _question(i).lower()):
                    own = {ledger.query_id(_question(i)), ledger.query_id(text)}
                    harm = ledger.scoped_harm(text, contexts[i])
                    proven_here = {h.memory_id for h in harm if h.query_id in own}
                    off = [h.memory_id for h in harm if h.query_id not in own]
                    unscoped = ledger.prior_candidate(contexts[i]).ids
                    cleared_here = _cleared_for(ledger, own)
                    off_old = [m for m in unscoped if m not in cleared_here]
                    off_scoped += len(off)
                    off_unscoped += len(off_old)
                    withheld += len(harm)
                    detail.append(
                        {
                            "question": i,
                            "text": text,
                            "withheld": sorted(proven_here),
                            "off_topic": off,
                            "unscoped_off_topic": off_old,
                        }
                    )
                    ask(text, i)
            proposals = ledger.review(min_queries=2)
            true_ids = {m.id for m in true}
            return {
                "questions": questions,
                "stale": stale,
                "k": k,
                "lookups": 2 * questions,
                "withheld": withheld,
                "off_topic_withheld": off_scoped,
                "off_topic_withheld_unscoped": off_unscoped,
                "proposed": [p.memory_id for p in proposals],
                "true_proposed": sorted(p.memory_id for p in proposals if p.memory_id in true_ids),
                "detail": detail,
            }


def _cleared_for(ledger: Any, query_ids: set[str]) -> set[str]:
    """Memories a verified run of these questions cleared (their own, on-topic harm)."""
    out: set[str] = set()
    for query_id in query_ids:
        for run in ledger.runs(query_id=query_id):
            if run.status == "complete" and run.recovered:
                out.update(run.cleared_ids)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (module docstring).

    Args:
        argv: The arguments (None: ``sys.argv``).

    Returns:
        The exit code.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.ledger_scope_stream",
        description="Off-topic memories withheld and true memories proposed, scoped ledger.",
    )
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--stale", type=int, default=5)
    parser.add_argument("--k", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", default=None, help="ledger URL (default: a temporary file)")
    parser.add_argument("--detail", action="store_true", help="print every lookup")
    args = parser.parse_args(argv)
    figures = run_stream(
        questions=args.questions, stale=args.stale, k=args.k, seed=args.seed, url=args.url
    )
    if not args.detail:
        figures.pop("detail")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
