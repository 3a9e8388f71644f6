"""A small stratified sample of A-MAC's LoCoMo turn candidates, for a run on a real model.

``python -m meclear_bench.real_admission_turns --locomo DIR --split test --per-label 1
--out OUT [meclear admission-bench flags]`` takes, for every conversation of the split,
``--per-label`` cited turns (Store) and as many uncited turns (Do-Not-Store) of A-MAC's
public protocol (:mod:`.admission_locomo_turns`: every dialogue turn a candidate, Store iff
a QA question cites it) and decides them with every method as ``meclear admission-bench
--cases`` does (journalled in ``OUT``, resumable, ``--agent-model`` / ``--base-url``; the
candidates keep their own reason type, ``not_needed_later``, which a case file cannot
carry). The turns of each label are taken evenly
spaced over the conversation (nothing random: the same data give the same file), so the
sample is half Store, spread over every test conversation, whatever the protocol's own
Store share (about one turn in four). A real call takes seconds on a small CPU, so a real
model decides a sample; the whole protocol is :mod:`.admission_locomo_headline`'s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .admission_locomo import BenchCandidate
from .admission_locomo_turns import turn_candidates
from .admission_sample import interleaved

if TYPE_CHECKING:
    from langchain_core.caches import BaseCache

if TYPE_CHECKING:
    from langchain_core.caches import BaseCache

__all__ = ["ReplyCache", "diagnosis", "main", "turn_sample"]


def _spread(group: Sequence[BenchCandidate], n: int) -> list[BenchCandidate]:
    """``n`` of ``group`` at evenly spaced positions (the middle of each of n equal parts)."""
    n = min(n, len(group))
    return [group[int((i + 0.5) * len(group) / n)] for i in range(n)]


def turn_sample(
    candidates: Sequence[BenchCandidate], split: str, per_label: int
) -> list[BenchCandidate]:
    """Per conversation of ``split``, ``per_label`` cited and ``per_label`` uncited turns.

    Args:
        candidates: A-MAC turn candidates (:func:`.admission_locomo_turns.turn_candidates`).
        split: ``dev``, ``test`` or ``all``.
        per_label: Turns of each label per conversation (at least 1).

    Returns:
        The sample, conversation by conversation, each in dialogue order.

    Raises:
        ValueError: ``per_label`` is below 1.
    """
    if per_label < 1:
        raise ValueError(f"per_label must be at least 1 (got {per_label})")
    groups: dict[tuple[str, str], list[BenchCandidate]] = defaultdict(list)
    for c in candidates:
        if split == "all" or c.split == split:
            groups[(c.source, c.label)].append(c)
    keep = {c.id for group in groups.values() for c in _spread(group, per_label)}
    return [c for c in candidates if c.id in keep]


class ReplyCache:
    """LangChain's LLM cache in one SQLite file: a rerun of the same prompt calls nothing.

    Set with ``langchain_core.globals.set_llm_cache`` for ``--llm-cache``: the run and the
    ``--diagnose`` pass that re-decides ConMem's journalled candidates to keep their whole
    evidence share the replies
    (the key is LangChain's: the prompt and the model's settings, never a key or endpoint).
    """

    def __init__(self, path: Path) -> None:
        import sqlite3
        import threading

        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS r (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(prompt: str, llm_string: str) -> str:
        return hashlib.sha256(json.dumps([prompt, llm_string]).encode()).hexdigest()

    def lookup(self, prompt: str, llm_string: str) -> Any:
        """The stored generations of ``(prompt, llm_string)``, or None (counted)."""
        from langchain_core.load import loads

        with self._lock:
            row = self._db.execute(
                "SELECT v FROM r WHERE k = ?", (self._key(prompt, llm_string),)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        with warnings.catch_warnings():  # loads is marked beta; its format is langchain's own
            warnings.simplefilter("ignore")
            return loads(row[0], allowed_objects="core")

    def update(self, prompt: str, llm_string: str, return_val: Any) -> None:
        """Store the generations of ``(prompt, llm_string)`` (committed at once)."""
        from langchain_core.load import dumps

        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO r VALUES (?, ?)",
                (self._key(prompt, llm_string), dumps(return_val)),
            )
            self._db.commit()

    async def alookup(self, prompt: str, llm_string: str) -> Any:
        """:meth:`lookup` (SQLite answers in microseconds: no thread)."""
        return self.lookup(prompt, llm_string)

    async def aupdate(self, prompt: str, llm_string: str, return_val: Any) -> None:
        """:meth:`update`."""
        self.update(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        """Forget every reply."""
        with self._lock:
            self._db.execute("DELETE FROM r")
            self._db.commit()


def diagnosis(decision: Any, label: str) -> dict[str, Any]:
    """Where one ConMem decision failed or went wrong, stage by stage.

    Args:
        decision: The ``AdmissionDecision``.
        label: The gold label.

    Returns:
        ``{id, label, decision, correct, stage, calls, calls_by_stage, detail}``: ``stage``
        is the failing stage (``probe_generation``, ``probe_validation``, ...) or, for a
        decision, ``tie_break`` (CMTE at zero) or ``cmte``; ``detail`` lists the probe
        validator's last issues, or per probe the judge's preference, the auditor's label
        and the resulting effect.
    """
    d = decision
    row: dict[str, Any] = {
        "id": d.candidate_id,
        "label": label,
        "decision": d.decision,
        "correct": d.decision == label,
        "calls": d.cost.model_calls,
        "calls_by_stage": d.cost.calls_by_stage,
    }
    if d.error is not None:
        row["stage"] = d.error.stage
        last = d.probe_rounds[-1] if d.probe_rounds else None
        row["detail"] = {
            "message": d.error.message[:300],
            "rounds": len(d.probe_rounds),
            "invalid": {
                r: c.issue[:160] for r, c in (last.checks if last else {}).items() if not c.valid
            },
        }
        return row
    row["stage"] = "tie_break" if d.tie_break_ran else "cmte"
    row["detail"] = {
        "cmte": d.cmte,
        "probes": [
            {
                "role": p.role,
                "judge": p.judge.preference if p.judge else None,
                "audit": p.audit.label if p.audit else None,
                "effect": p.effect,
                "contribution": p.contribution,
            }
            for p in d.probes
        ],
        "tie_break": d.tie_break.decision if d.tie_break else None,
    }
    return row


async def _redecide(sample: Sequence[BenchCandidate], model: Any, config: Any) -> list[Any]:
    from meclear_integrations.admission.engine import ConMemAdmitter

    admitter = ConMemAdmitter(model, config)
    return [
        await admitter.adecide(c.candidate_memory, c.historical_context, candidate_id=c.id)
        for c in sample
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Decide the sample (module docstring) with ``meclear admission-bench``'s machinery.

    Every flag but ``--per-label`` is ``meclear admission-bench``'s (``--locomo``,
    ``--split``, ``--out``, ``--methods``, ``--agent-model``, ``--base-url``,
    ``--agent-kwargs``, ``--bootstrap``, ``--retry-failed``, ``--report-only``, ...): the
    decisions go to ``journal.jsonl`` in ``--out`` as they finish, a rerun resumes, and
    ``results.json`` / ``report.md`` are rewritten after each case.

    Args:
        argv: Command-line arguments (default: ``sys.argv``).

    Returns:
        The exit status (2 on a configuration error, as ``meclear admission-bench``).
    """
    from meclear_integrations.cli import build_parser
    from meclear_integrations.core.errors import ConfigurationError

    from .admission_eval import METHODS
    from .cli.admission_bench import _journalled_run, _methods

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--per-label", type=int, default=1)
    own.add_argument("--llm-cache", type=Path, default=None)
    own.add_argument("--diagnose", action="store_true")
    mine, rest = own.parse_known_args(argv)
    args = build_parser().parse_args(["admission-bench", *rest])
    if args.locomo is None:
        print("error: --locomo is required", file=sys.stderr)
        return 2
    cache = None
    if mine.llm_cache is not None:
        from langchain_core.globals import set_llm_cache

        cache = ReplyCache(mine.llm_cache)
        set_llm_cache(cast("BaseCache", cache))  # duck-typed: langchain-core is optional
    try:
        sample = turn_sample(turn_candidates(args.locomo), args.split, mine.per_label)
        store = sum(c.label == "store" for c in sample)
        selection = (
            f"A-MAC's protocol (every dialogue turn a candidate, Store iff a QA question "
            f"cites it): {mine.per_label} cited and {mine.per_label} uncited turn(s) per "
            f"{args.split} conversation, evenly spaced ({len(sample)} turns, {store} Store)"
        )
        result = _journalled_run(
            args,
            sample,
            interleaved(sample, lambda c: c.label),
            _methods(args, METHODS),
            f"{args.locomo} (A-MAC turns, {args.split} split)",
            None,
            selection,
        )
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = "" if result.complete else f", PARTIAL: {result.n_finished} finished"
    print(f"A-MAC turn sample, {result.n_cases} candidates ({result.model}{done})")
    for m in result.methods:
        k = m.metrics
        print(
            f"  {m.method:<11} bal.acc {100 * k.balanced_accuracy:5.1f}%  macro-F1 "
            f"{100 * k.macro_f1:5.1f}%  errors {k.errors}  calls/case {m.calls_per_case:.2f}"
        )
    print(f"wrote {args.out / 'results.json'} and {args.out / 'report.md'}")
    if mine.diagnose:
        _diagnose(args, sample, cache)
    return 0


def _diagnose(args: argparse.Namespace, sample: Sequence[BenchCandidate], cache: Any) -> None:
    """Re-decide ConMem's journalled candidates (from the reply cache); write their evidence.

    Only the candidates whose ConMem decision is in the journal are re-decided, so a stopped
    run is diagnosed as far as it went; their replies come from ``--llm-cache`` (a miss,
    e.g. a reply not cached by the run, calls the model and is counted).
    """
    import asyncio

    journal = args.out / "journal.jsonl"
    decided: set[str] = set()
    for line in journal.read_text(encoding="utf-8").splitlines() if journal.exists() else []:
        record = json.loads(line)
        if record.get("method") == "conmem":
            decided.add(str(record["outcome"]["id"]))
    sample = [c for c in sample if c.id in decided]

    from meclear_integrations.admission.config import AdmissionConfig

    from .cli.admission_bench import _model

    before = cache.misses if cache is not None else 0
    config = AdmissionConfig(seed=args.seed, max_concurrency=args.max_concurrency)
    decisions = asyncio.run(
        _redecide(sample, _model(args, not args.openai_model and not args.locomo), config)
    )
    label = {c.id: c.label for c in sample}
    with (args.out / "conmem_decisions.jsonl").open("w", encoding="utf-8") as f:
        for d in decisions:
            f.write(d.model_dump_json() + "\n")
    rows = [diagnosis(d, label[d.candidate_id]) for d in decisions]
    with (args.out / "diagnosis.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    new = (cache.misses - before) if cache is not None else None
    print(f"ConMem re-decided for its evidence ({new} uncached calls): {args.out}/diagnosis.jsonl")
    for r in rows:
        made = str(r["decision"])
        print(f"  {r['id']:<18} {r['label']:<13} {made:<13} {r['stage']:<17} {r['calls']} calls")


if __name__ == "__main__":
    raise SystemExit(main())
