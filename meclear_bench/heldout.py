"""Held-out structures: redundant pairs and mixed faults at K = 8, on a seed never tuned on.

The package default (``ClearanceConfig()``, the ``meclear`` method) against ContextCite and
ContextCite with the answer-backed flag rule (``contextcite-answers``) at a fixed budget per
method, on structures built from the LoCoMo test conversations with a seed
(:data:`HELDOUT_SEED`) that no tuning, sweep or figure of the project used (they use 0 and
1). SIMULATED: the reader is the simulated evidence world, never a model.

Structures (all from :mod:`.locomo`'s builder: BM25 top-K after injection, the same
simulated world, the same causal verification, :mod:`.verify`):

- ``redundant``: two paraphrases of one wrong claim, each of which alone outweighs the
  gold evidence, so either copy masks the other: leaving out either one alone does not
  recover, leaving out both does (verified per case);
- ``mixed``: a stale record (a ``precise_temporal`` / ``precise_factual`` fault dated in the
  session before the gold record) and a conflicting one (an ``explicit_conflict`` dated
  after it) stating two *different* wrong answers; verified like a redundant pair (either
  alone keeps the answer wrong, both removed recover);
- ``direct``: one fault (the control: a single fault);
- ``unexplained`` (item 5 of issue 37): the clean context of a query whose reader does not
  read the answer out of its gold record (the gold memories' claims are dropped from the
  world) and reads what the background weakly supported as one wrong answer of the same
  kind (or nothing, then it abstains): no memory supports the reference, so no clearance
  recovers it and every deletion is a background deletion. Kept when the full context
  fails in both verification trials. Reported for its calls against leave-one-out (the
  ladder's T = 1 rung, and ``loo-once``: K + 1 calls).

The run (``noisy`` by default: temperature 0.2 and a judge that flips 5% of verdicts) gives
each baseline one budget over the set: the first rung of its ladder
(:func:`~.equal_calls.default_ladders`) whose mean model calls over the faulted cases reach
the default's (else its largest rung), as the headline of :mod:`.equal_calls`. LOO runs
once at T = 1 (its cheapest rung) and as ``loo-once`` for the unexplained cases' calls.
Per structure and method: E[recovery], Binary Task Recovery, abstentions (``unverified``), partial
clearances (some targets deleted, not all), background deletions per case and model calls
per case, with paired two-level cluster-bootstrap intervals (:mod:`.bootstrap`) of the
default minus each baseline.

Usage::

    python -m meclear_bench.heldout --locomo DIR --out OUT [--setting noisy]
        [--max-queries 12] [--k 8] [--seed 3737]

Writes ``heldout.json`` (every outcome and the tables' numbers) and ``heldout.md``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from meclear_integrations.core import ClearanceConfig
from meclear_integrations.simulation import Claim, JudgeSignal

from .cases import BenchCase
from .faults import fault_texts
from .gap import outcome_kind
from .locomo import _ConversationBuilder, _Funnel, _rng, _select
from .locomo_data import LocomoQuestion, load_locomo
from .split import SplitName, split_conversations
from .verify import Verification, verify_case

__all__ = [
    "HELDOUT_SEED",
    "HELDOUT_STRUCTURES",
    "build_heldout_cases",
    "heldout_table",
    "main",
    "run_heldout",
    "verify_heldout",
]

HELDOUT_SEED = 3737
"""The build's seed: never used by the project's tuning (``tuned.py``: seed 0) or figures."""
HELDOUT_STRUCTURES = ("redundant", "mixed", "direct", "unexplained")
"""The structures built (module docstring)."""
FAULTED = ("redundant", "mixed", "direct")
"""The structures a clearance can recover (the fixed budgets are matched over these)."""
_SETTINGS: dict[str, dict[str, Any]] = {
    "deterministic": {"temperature": None, "judge": "reference"},
    "noisy": {"temperature": 0.2, "judge": "noisy:0.05"},
    "persistent": {"temperature": 0.2, "judge": "persistent:0.05"},
}
_MIXED_WEIGHT = (0.8, 2.0)
"""Weights of the two mixed faults, as multiples of the reference's support (redundant's)."""


class _HeldoutBuilder(_ConversationBuilder):
    """The LoCoMo builder with the ``mixed`` and ``unexplained`` structures."""

    def propose(
        self,
        q: LocomoQuestion,
        structure: str,
        gold: set[int],
        gold_weight: dict[int, float],
        funnel: _Funnel,
    ) -> BenchCase | None:
        if structure == "mixed":
            return self._mixed(q, gold, gold_weight, funnel)
        if structure == "unexplained":
            return self._unexplained(q, gold, gold_weight, funnel)
        return super().propose(q, structure, gold, gold_weight, funnel)

    def _unexplained(
        self, q: LocomoQuestion, gold: set[int], gold_weight: dict[int, float], funnel: _Funnel
    ) -> BenchCase | None:
        rng = _rng(self.seed, self.cid, q.index, "unexplained")
        wrong = self._distractor(q, self.kinds[q.index][1], rng)
        if wrong is None:
            funnel.dropped["no_distractor"]["unexplained"] += 1
            return None
        ranked = self.retriever.top_k(q.question, self.k)
        clean = self._case(q, "unexplained", None, ranked, gold_weight, [], None)
        gold_ids = {f"c{self.cid}-m{i:04d}" for i in gold}
        # the reader does not read the answer out of the gold records, and what the
        # background weakly supported reads to it as one wrong answer: no memory supports
        # the reference, so no clearance can recover it
        claims = {
            k: Claim(answer=wrong, weight=v.weight)
            for k, v in clean.world.claims.items()
            if k not in gold_ids
        }
        return clean.model_copy(update={"world": clean.world.model_copy(update={"claims": claims})})

    def _mixed(
        self, q: LocomoQuestion, gold: set[int], gold_weight: dict[int, float], funnel: _Funnel
    ) -> BenchCase | None:
        rng = _rng(self.seed, self.cid, q.index, "mixed")
        temporal = self.kinds[q.index][1]
        stale_type = "precise_temporal" if temporal else "precise_factual"
        stale = self._distractor(q, temporal, rng)
        conflict = None
        for _ in range(4):
            drawn = self._distractor(q, temporal, rng)
            if drawn is not None and stale is not None and drawn.lower() != stale.lower():
                conflict = drawn
                break
        if stale is None or conflict is None:
            funnel.dropped["no_two_distractors"]["mixed"] += 1
            return None
        speaker, other = self._speakers(q)
        common = {"question": q.question, "reference": q.answer, "speaker": speaker, "other": other}
        texts = [
            *fault_texts(stale_type, "direct", wrong=stale, **common),
            *fault_texts("explicit_conflict", "direct", wrong=conflict, **common),
        ]
        ranked = self.retriever.extended(texts).top_k(q.question, self.k)
        n = len(self.texts)
        if sum(1 for i, _ in ranked if i >= n) < len(texts):
            funnel.dropped["fault_not_retrieved"]["mixed"] += 1
            return None
        present_gold = [i for i, _ in ranked if i in gold]
        if not present_gold:
            funnel.dropped["gold_displaced"]["mixed"] += 1
            return None
        total = self.reference_support(q, ranked, gold_weight)
        sessions = [self.conv.facts[i].session for i in present_gold]
        faults = [
            (
                text,
                round(total * float(rng.uniform(*_MIXED_WEIGHT)), 3),
                self._fault_meta(speaker, rng, kind, sessions),
            )
            for text, kind in zip(texts, (stale_type, "explicit_conflict"), strict=True)
        ]
        case = self._case(q, "mixed", "stale+conflict", ranked, gold_weight, faults, stale)
        # _case orders targets as the faults: the second states the conflicting answer
        claims = dict(case.world.claims)
        second = case.targets[1]
        claims[second] = Claim(answer=conflict, weight=claims[second].weight)
        return case.model_copy(update={"world": case.world.model_copy(update={"claims": claims})})


def verify_heldout(case: BenchCase) -> Verification:
    """The causal signature of a held-out case (module docstring), in its simulated world.

    Args:
        case: The case.

    Returns:
        The verification (``mixed`` is checked as a redundant pair: either fault alone
        keeps the answer wrong; ``unexplained``: the full context fails in both trials).
    """
    if case.structure == "mixed":
        return verify_case(case.model_copy(update={"structure": "redundant"}))
    if case.structure == "unexplained":
        evaluate = case.evaluator()
        context = tuple(case.context())
        if any(evaluate(context, t) for t in range(2)):
            return Verification(ok=False, reason="unexplained_answers_right")
        return Verification(ok=True)
    return verify_case(case)


def build_heldout_cases(
    path: str | Path,
    *,
    k: int = 8,
    seed: int = HELDOUT_SEED,
    split: SplitName = "test",
    max_queries: int | None = 12,
    structures: Sequence[str] = HELDOUT_STRUCTURES,
    conversations: Sequence[str] | None = None,
) -> tuple[list[BenchCase], dict[str, Any]]:
    """Build and verify the held-out cases (module docstring).

    Args:
        path: The LoCoMo release.
        k: The retrieval budget K.
        seed: The build's seed.
        split: The LoCoMo conversations (``test`` by default).
        max_queries: Clean-correct queries used per conversation.
        structures: Which of :data:`HELDOUT_STRUCTURES` to build.
        conversations: The first of the split's conversations used (None: all).

    Returns:
        The verified cases and the funnel.
    """
    chosen = split_conversations(split)
    convs = _select(load_locomo(path), list(chosen) if chosen is not None else None)
    if conversations is not None:
        convs = [c for c in convs if c.conversation_id in set(conversations)]
    funnel = _Funnel()
    cases: list[BenchCase] = []

    def verify(batch: Sequence[BenchCase]) -> list[Verification]:
        return [verify_heldout(c) for c in batch]

    for conv in convs:
        builder = _HeldoutBuilder(conv, k=k, seed=seed, structures=tuple(structures))
        cases.extend(builder.build(funnel, max_queries, verify))
    summary = funnel.as_dict(tuple(structures))
    summary.update(k=k, seed=seed, split=split, cases=len(cases), simulated=True)
    return cases, summary


def _settings(setting: str, seed: int, replicates: int) -> Any:
    from .settings import BenchSettings

    spec = _SETTINGS[setting]
    return BenchSettings(
        judge=JudgeSignal.parse(str(spec["judge"])),
        temperature=spec["temperature"],
        seed=seed,
        bootstrap_replicates=replicates,
        match_budget=False,
    )


def _row(outcomes: Sequence[Any]) -> dict[str, Any]:
    n = len(outcomes)
    if not n:
        return {"cases": 0}
    kinds = [outcome_kind(o.model_dump()) for o in outcomes]
    return {
        "cases": n,
        "expected_recovery": float(np.mean([o.expected_recovery for o in outcomes])),
        "recovered": sum(bool(o.recovered) for o in outcomes),
        "abstained": kinds.count("abstained"),
        "partial": kinds.count("partial"),
        "early_stop": kinds.count("early stop"),
        "exact": kinds.count("exact"),
        "background_per_case": float(np.mean([o.cleared_extra_background for o in outcomes])),
        "calls_per_case": float(np.mean([o.model_calls for o in outcomes])),
    }


def run_heldout(
    cases: Sequence[BenchCase],
    *,
    setting: str = "noisy",
    seed: int = 0,
    families: Sequence[str] = ("contextcite", "contextcite-answers"),
    replicates: int = 2000,
    progress: Callable[[str], None] | None = None,
    engine: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The default against each baseline at a fixed budget (module docstring).

    Args:
        cases: The held-out cases.
        setting: ``noisy`` (default), ``persistent`` or ``deterministic``.
        seed: The run's seed (samplers; each case mixes it with its id).
        families: The baselines matched at a fixed budget.
        replicates: Bootstrap replicates.
        progress: Called with a line per run.
        engine: Settings over ``ClearanceConfig()`` for the ``meclear`` row (an opt-in
            measured against the same baselines; None: the package default).

    Returns:
        The document: per structure and method the :func:`_row` metrics, paired
        differences with intervals, the fixed rungs, the curve points run, and the
        per-case outcomes.
    """
    from .equal_calls import default_ladders
    from .methods.loo import LooMethod, LooOnceMethod
    from .methods.meclear import MeClearMethod
    from .results import build_results
    from .runner import assemble_run, run_benchmark

    say = progress or (lambda _: None)
    base = _settings(setting, seed, replicates)
    if engine:
        base = base.model_copy(update={"engine": ClearanceConfig.model_validate(dict(engine))})
    faulted = [c for c in cases if c.structure in FAULTED]
    unexplained = [c for c in cases if c.structure == "unexplained"]
    default = MeClearMethod(base.engine, name="meclear")
    per_case: dict[str, dict[str, Any]] = {}
    ref = run_benchmark(cases, base, methods=[default]).outcomes["meclear"]
    per_case["meclear"] = {o.case_id: o for o in ref}
    faulted_ids = {c.case_id for c in faulted}
    target = float(np.mean([o.model_calls for o in ref if o.case_id in faulted_ids]))
    say(f"meclear: {target:.1f} calls / faulted case")
    ladders = default_ladders(base, families)
    fixed: dict[str, str] = {}
    curves: dict[str, list[dict[str, Any]]] = {}
    for family in families:
        rungs = ladders[family]
        for index, rung in enumerate(rungs):
            out = run_benchmark(faulted, rung.settings, methods=[rung.method]).outcomes
            outcomes = out[rung.method.name]
            calls = float(np.mean([o.model_calls for o in outcomes]))
            curves.setdefault(family, []).append(
                {"budget": rung.label, "calls": calls, **_row(outcomes)}
            )
            say(f"{family} @ {rung.label}: {calls:.1f} calls")
            if calls >= target or index == len(rungs) - 1:
                fixed[family] = rung.label
                per_case[family] = {o.case_id: o for o in outcomes}
                break
    loo, once = LooMethod(), LooOnceMethod()
    loo.name, once.name = "loo", "loo-once"
    loo_run = run_benchmark(unexplained, base, methods=[loo, once]) if unexplained else None
    methods = ["meclear", *families]
    named = base.model_copy(update={"methods": tuple(methods)})
    tables: dict[str, Any] = {}
    for structure in (*FAULTED, "all faulted"):
        ids = [c.case_id for c in faulted if structure == "all faulted" or c.structure == structure]
        if not ids:
            continue
        run = assemble_run(named, ids, methods, per_case)
        results = build_results(run)
        paired = {
            name: results["paired"].get(name, {}).get("expected_recovery") for name in families
        }
        tables[structure] = {
            "methods": {m: _row(run.outcomes.get(m, [])) for m in methods},
            "paired_expected_recovery": paired,
        }
    unexplained_rows: dict[str, Any] = {}
    if unexplained:
        un_ids = {c.case_id for c in unexplained}
        unexplained_rows["meclear"] = _row([o for o in ref if o.case_id in un_ids])
        for name in ("loo", "loo-once"):
            unexplained_rows[name] = _row(loo_run.outcomes[name] if loo_run else [])
        statuses: dict[str, int] = {}
        for o in ref:
            if o.case_id in un_ids:
                statuses[o.status] = statuses.get(o.status, 0) + 1
        unexplained_rows["meclear_statuses"] = statuses
    return {
        "label": "SIMULATED",
        "setting": setting,
        "judge": str(base.judge),
        "temperature": base.temperature,
        "meclear_calls_per_faulted_case": target,
        "fixed_rungs": fixed,
        "curves": curves,
        "structures": tables,
        "unexplained": unexplained_rows,
        "outcomes": {
            m: [o.model_dump(mode="json") for o in per_case[m].values()] for m in per_case
        },
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def heldout_table(doc: dict[str, Any]) -> str:
    """The Markdown tables of a :func:`run_heldout` document (SIMULATED).

    Args:
        doc: The document.

    Returns:
        The tables.
    """
    rungs = ", ".join(f"{k} at {v}" for k, v in doc["fixed_rungs"].items())
    lines = [
        f"Held-out structures, SIMULATED, judge {doc['judge']}, temperature "
        f"{doc['temperature']}; fixed budgets: {rungs} (default: "
        f"{doc['meclear_calls_per_faulted_case']:.1f} calls / faulted case).",
        "",
        "| structure | method | cases | E[recovery] | default - method [95% CI] | recovered "
        "| abstained | partial | deleted bg / case | calls / case |",
        "|" + "---|" * 10,
    ]
    for structure, block in doc["structures"].items():
        for method, row in block["methods"].items():
            cell = block["paired_expected_recovery"].get(method)
            if cell and cell.get("delta") is not None:
                ci = cell.get("ci")
                delta = f"{100 * cell['delta']:+.1f}"
                if ci:
                    delta += f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
            else:
                delta = "-"
            lines.append(
                f"| {structure} | {method} | {row['cases']} | {_pct(row['expected_recovery'])}"
                f" | {delta} | {row['recovered']}/{row['cases']} | {row['abstained']}"
                f" | {row['partial']} | {row['background_per_case']:.3f}"
                f" | {row['calls_per_case']:.1f} |"
            )
    un = doc.get("unexplained") or {}
    if un:
        m, loo, once = un["meclear"], un["loo"], un["loo-once"]

        def ratio(row: dict[str, Any]) -> str:
            calls = row.get("calls_per_case")
            return f"{m['calls_per_case'] / calls:.2f}x" if calls else "n/a"

        lines += [
            "",
            "| unexplained | cases | default calls / case | LOO (T = 1 rung) | default / LOO "
            "| LOO once (K + 1) | default / LOO once | default's statuses | default's "
            "deleted bg / case |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| held-out K = 8 | {m['cases']} | {m['calls_per_case']:.1f}"
            f" | {loo['calls_per_case']:.1f} | {ratio(loo)} | {once['calls_per_case']:.1f}"
            f" | {ratio(once)} | {json.dumps(un['meclear_statuses'], sort_keys=True)}"
            f" | {m['background_per_case']:.3f} |",
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m meclear_bench.heldout``: build, run, write ``heldout.json`` / ``.md``.

    Args:
        argv: The arguments (None: ``sys.argv``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.heldout",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo (locomo10)")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--setting", choices=sorted(_SETTINGS), default="noisy")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--seed", type=int, default=HELDOUT_SEED, help="the build's seed")
    parser.add_argument("--run-seed", type=int, default=0, help="the samplers' seed")
    parser.add_argument("--split", choices=["dev", "test", "all"], default="test")
    parser.add_argument("--max-queries", type=int, default=12, help="queries per conversation")
    parser.add_argument("--replicates", type=int, default=2000, help="bootstrap replicates")
    parser.add_argument(
        "--baselines", default="contextcite,contextcite-answers", help="comma-separated"
    )
    parser.add_argument(
        "--engine",
        type=json.loads,
        default=None,
        help="JSON settings over ClearanceConfig() for the meclear row, e.g. "
        '\'{"stops": {"pooled_verdicts": true}}\' (default: the package default)',
    )
    args = parser.parse_args(argv)
    cases, funnel = build_heldout_cases(
        args.locomo, k=args.k, seed=args.seed, split=args.split, max_queries=args.max_queries
    )
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.structure] = counts.get(c.structure, 0) + 1
    print(f"cases: {counts}", file=sys.stderr)
    doc = run_heldout(
        [c for c in cases if c.structure in HELDOUT_STRUCTURES],
        setting=args.setting,
        seed=args.run_seed,
        families=tuple(args.baselines.split(",")),
        replicates=args.replicates,
        progress=lambda line: print(line, file=sys.stderr),
        engine=args.engine,
    )
    doc["funnel"] = funnel
    doc["cases_per_structure"] = counts
    doc["command"] = shlex.join(["python", "-m", "meclear_bench.heldout", *(argv or sys.argv[1:])])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "heldout.json").write_text(json.dumps(doc, indent=1, default=str))
    table = heldout_table(doc)
    (args.out / "heldout.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
