"""Run the heavy-redundancy benchmark (:mod:`.redundancy`): carriers, deletions, recovery, calls.

Methods, each on every case through a fresh :class:`~.counting.CountingEvaluator` (so all
are charged alike):

- ``meclear``: the engine's default (minimal clearance; ``answer_groups="auto"``, the
  ``"auto"`` unexplained stop and the
  cannot-answer check; the carriers search only from singletons already asked);
- ``meclear-carriers``: the default plus ``find_carriers=True`` (the carriers search alone,
  after a verified clearance: its own cost);
- ``meclear-stop-off``: the default with ``stops={"unexplained": False}`` (what the
  default ``"auto"`` stop buys: a failure no memory explains stops after the screening
  batch and a check of K + 2 calls);
- ``meclear-minimal``: ``find_carriers=True, stops={"unexplained": True}`` (carriers reported,
  the context is the minimal clearance's);
- ``meclear-groups``: ``find_carriers=True, answer_groups=True`` (every memory asked alone
  on a failing context, without stopping early: the opt-in for a store under attack);
- ``meclear-complete``: ``clearance_scope="complete", stops={"unexplained": True}`` (verified
  carriers withheld too);
- ``loo``, ``contextcite``, ``proxyspex``: the benchmark's baselines, the surrogates at
  the coalitions ``meclear-complete`` used on the case (equal calls).

Per method (``identified``: the engine's cleared memories plus its carriers; a
baseline's flagged set):

- carrier recall / precision: identified copies over all copies / over all identified
  memories (controls included: anything identified there is a false positive);
- flag recall: copies in the pre-verification harmful set (attribution's H^);
- deletion recall / precision: deleted copies over all copies / over all deleted memories;
- recovery: the reader answers right on the context the method returns (heavy cases);
  controls: still right (clean, double gold);
- deleted background: non-copies deleted per case;
- calls: evaluator calls per case, by structure (``unexplained``: the context no memory
  explains, against LOO's calls); extra calls per memory: a method's calls minus the
  default ``meclear``'s on the same heavy case, over K (mean and max); carriers calls
  per remaining memory: what the carriers search itself cost (``cost.carrier_calls``) over the
  memories the minimal clearance kept (mean and max).

The reader is the simulated world (``simulated``) or the offline text reader on the
rendered answer prompt (``text``, :mod:`.text_reader`). SIMULATED / offline text reader:
never a real model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from meclear_integrations.core import ClearanceConfig, FailurePolicy, MeClearEngine, Memory
from meclear_integrations.core.answers import note_answer
from meclear_integrations.judges.task import answers_agree

from .cases import BenchCase
from .counting import CountingEvaluator
from .methods.base import MethodContext, case_seed
from .methods.registry import build_method
from .redundancy import ReaderMode, reader_answer
from .settings import BenchSettings

__all__ = ["ENGINE_METHODS", "REDUNDANCY_METHODS", "case_evaluator", "run_redundancy", "summarize"]

ENGINE_METHODS: dict[str, dict[str, Any]] = {
    "meclear": {},
    "meclear-carriers": {"find_carriers": True},
    "meclear-stop-off": {"stops": {"unexplained": False}},
    "meclear-minimal": {"find_carriers": True, "stops": {"unexplained": True}},
    "meclear-groups": {"find_carriers": True, "answer_groups": True},
    "meclear-complete": {"clearance_scope": "complete", "stops": {"unexplained": True}},
}
"""The engine's configurations compared (overrides of ``ClearanceConfig()``)."""
REDUNDANCY_METHODS = (*ENGINE_METHODS, "loo", "contextcite", "proxyspex")


class ReaderEvaluator:
    """``evaluate(coalition, trial)`` of the offline text reader (or the world), with answers.

    Args:
        case: The case.
        mode: The reader.
    """

    def __init__(self, case: BenchCase, mode: ReaderMode) -> None:
        self.case = case
        self.mode = mode
        self.read = reader_answer(mode, case)

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """The reader's answer on ``coalition``, judged against the reference.

        Args:
            coalition: The memories shown.
            trial: The trial index (the readers are deterministic).

        Returns:
            1.0 when judged right, else 0.0.
        """
        answer = self.read([m.id for m in coalition])
        note_answer(answer, same=answers_agree)
        return 1.0 if self.correct(answer) else 0.0

    def correct(self, answer: str) -> bool:
        """Whether ``answer`` is judged right.

        Args:
            answer: An answer.

        Returns:
            The verdict (exact match in the world; the text reader's judge otherwise).
        """
        if self.mode == "simulated":
            from meclear_integrations.simulation.world import exact_match_score

            return exact_match_score(answer, self.case.reference) == 1.0
        from .text_reader import judge_correct

        return judge_correct(answer, self.case.reference)


def case_evaluator(case: BenchCase, mode: ReaderMode) -> ReaderEvaluator:
    """The evaluator of ``case`` under the reader of ``mode``.

    Args:
        case: The case.
        mode: ``simulated`` or ``text``.

    Returns:
        The evaluator.
    """
    return ReaderEvaluator(case, mode)


def _engine_row(
    case: BenchCase, evaluate: CountingEvaluator, overrides: dict[str, Any], seed: int
) -> dict[str, Any]:
    config = ClearanceConfig(
        **overrides, seed=case_seed(seed, case.case_id), failure=FailurePolicy(mode="closed")
    )
    report = MeClearEngine(config).clear(case.context(), evaluate)
    return {
        "identified": report.cleared_ids + report.carrier_ids,
        "flagged": [a.memory_id for a in report.attributions if a.harmful or a.answer_group],
        "deleted": report.removed_ids,
        "status": report.status_reason or report.status,
        "coalitions": evaluate.coalitions,
        "carrier_calls": report.cost.carrier_calls,
        "remaining": len(case.memories) - len(report.cleared),
    }


def _baseline_row(
    name: str, case: BenchCase, evaluate: CountingEvaluator, matched: int | None
) -> dict[str, Any]:
    settings = BenchSettings(methods=(name,))
    method = build_method(name, settings)
    out = method.run(
        MethodContext(case, evaluate, settings, matched_coalitions=matched, method=method.name)
    )
    return {
        "identified": list(out.flagged),
        "flagged": list(out.flagged),
        "deleted": list(out.cleared),
        "status": out.status_reason or out.status,
        "coalitions": evaluate.coalitions,
    }


def run_case(
    case: BenchCase, mode: ReaderMode, methods: Sequence[str], seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Every method on one case: what it identified, flagged and deleted, and its calls.

    Args:
        case: The case.
        mode: The reader.
        methods: Method names (:data:`REDUNDANCY_METHODS`).
        seed: The run's seed.

    Returns:
        Method -> its row (``identified``, ``flagged``, ``deleted``, ``calls``,
        ``recovered``, ``status``).
    """
    rows: dict[str, dict[str, Any]] = {}
    judge = case_evaluator(case, mode)
    ids = [m.id for m in case.memories]
    matched: int | None = None
    ordered = [m for m in methods if m in ENGINE_METHODS] + [
        m for m in methods if m not in ENGINE_METHODS
    ]
    for name in ordered:
        evaluate = CountingEvaluator(case_evaluator(case, mode))
        if name in ENGINE_METHODS:
            row = _engine_row(case, evaluate, ENGINE_METHODS[name], seed)
            if name == "meclear-complete" or matched is None:
                matched = evaluate.coalitions
        else:
            row = _baseline_row(name, case, evaluate, matched)
        deleted = set(row["deleted"])
        row["calls"] = evaluate.calls
        row["recovered"] = judge.correct(judge.read([i for i in ids if i not in deleted]))
        rows[name] = row
    return rows


def run_redundancy(
    cases: Sequence[BenchCase],
    mode: ReaderMode,
    methods: Sequence[str] = REDUNDANCY_METHODS,
    *,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every method on every case.

    Args:
        cases: The cases (:func:`~.redundancy.build_redundancy_cases`).
        mode: The reader.
        methods: The methods.
        seed: The run's seed.
        progress: Called with the cases done.

    Returns:
        One record per case: ids, structure, targets and each method's row.
    """
    records = []
    for n, case in enumerate(cases, 1):
        records.append(
            {
                "case_id": case.case_id,
                "structure": case.structure,
                "k": len(case.memories),
                "targets": list(case.targets),
                "methods": run_case(case, mode, methods, seed),
            }
        )
        if progress is not None:
            progress(n)
    return records


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method: carrier, flag and deletion recall / precision, recovery, background, calls.

    Recall and precision are pooled over cases (micro); precision counts what a method
    identified or deleted on the controls as false positives.

    Args:
        records: :func:`run_redundancy`'s records.

    Returns:
        Method -> metrics.
    """
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for record in records:
        targets = set(record["targets"])
        structure = record["structure"]
        for name, row in record["methods"].items():
            a = acc[name]
            identified, flagged, deleted = (
                set(row[k]) for k in ("identified", "flagged", "deleted")
            )
            a["identified"] += len(identified)
            a["identified_hit"] += len(identified & targets)
            a["flagged_hit"] += len(flagged & targets)
            a["deleted"] += len(deleted)
            a["deleted_hit"] += len(deleted & targets)
            a["targets"] += len(targets)
            a[f"calls_{structure}"] += row["calls"]
            a[f"cases_{structure}"] += 1
            a[f"recovered_{structure}"] += bool(row["recovered"])
            a[f"background_{structure}"] += len(deleted - targets)
            base = record["methods"].get("meclear")
            engine = "carrier_calls" in row
            if structure == "heavy" and base is not None and name != "meclear" and engine:
                extra = (row["calls"] - base["calls"]) / record["k"]
                a["extra_per_memory"] += extra
                a["max_extra_per_memory"] = max(a["max_extra_per_memory"], extra)
            if structure == "heavy" and engine:
                per = row["carrier_calls"] / max(1, row["remaining"])
                a["carrier_calls_per_remaining"] += per
                a["max_carrier_calls_per_remaining"] = max(
                    a["max_carrier_calls_per_remaining"], per
                )
            if structure == "heavy":
                a["all_copies_deleted"] += targets <= deleted
                a["max_background_heavy"] = max(a["max_background_heavy"], len(deleted - targets))
    out: dict[str, dict[str, Any]] = {}
    for name, a in acc.items():
        structures = sorted(k.removeprefix("cases_") for k in a if k.startswith("cases_"))
        out[name] = {
            "carrier_recall": _ratio(a["identified_hit"], a["targets"]),
            "carrier_precision": _ratio(a["identified_hit"], a["identified"]),
            "flag_recall": _ratio(a["flagged_hit"], a["targets"]),
            "deletion_recall": _ratio(a["deleted_hit"], a["targets"]),
            "deletion_precision": _ratio(a["deleted_hit"], a["deleted"]),
            "all_copies_deleted": _ratio(a["all_copies_deleted"], a.get("cases_heavy", 0)),
            "max_background_heavy": a["max_background_heavy"],
            **(
                {
                    "extra_calls_per_memory": _ratio(
                        a["extra_per_memory"], a.get("cases_heavy", 0)
                    ),
                    "max_extra_calls_per_memory": a["max_extra_per_memory"],
                }
                if "meclear" in acc and name != "meclear" and name in ENGINE_METHODS
                else {}
            ),
            **(
                {
                    "carrier_calls_per_remaining": _ratio(
                        a["carrier_calls_per_remaining"], a.get("cases_heavy", 0)
                    ),
                    "max_carrier_calls_per_remaining": a["max_carrier_calls_per_remaining"],
                }
                if name in ENGINE_METHODS
                else {}
            ),
            **{
                f"{key}_{s}": _ratio(a[f"{key}_{s}"], a[f"cases_{s}"])
                for s in structures
                for key in ("recovered", "background", "calls")
            },
            **{f"cases_{s}": int(a[f"cases_{s}"]) for s in structures},
        }
    return out
