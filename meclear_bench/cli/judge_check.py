"""``meclear judge-check``: can this model judge? Its agreement with the exact reference.

Builds labelled (question, answer, reference) triples from LoCoMo (and CLARK-News stale
values, with ``--clark``), asks the judge model (the package's reference-based LLM judge,
as ``ClearingRetriever`` and ``meclear bench`` use it) about each, and prints its agreement
with normalised containment of the gold answer, its false-accept and false-reject rates
(95% Wilson intervals) and the triples it gave no verdict on (:mod:`meclear_bench.judge_check`).
Every call goes through the benchmark's call gate: cached, retried, counted.
Exit status: 0, or 2 when the judge gave no verdict at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

__all__ = ["register", "run_judge_check"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear judge-check`` subcommand.

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "judge-check",
        help="a judge model's agreement with exact match on labelled LoCoMo / CLARK-News "
        "answers (false accepts, false rejects, no verdicts)",
        description=(
            "Asks the judge model whether each of a labelled set of answers is right "
            "(gold answers, gold answers in a sentence, another question's gold, a stale "
            "value) and reports its agreement with normalised containment of the gold "
            "answer. Run it before trusting clearance decided by that model's verdicts."
        ),
    )
    p.add_argument("--locomo", type=Path, default=None, help="LoCoMo directory or file")
    p.add_argument("--clark", type=Path, default=None, help="CLARK-News folder (stale values)")
    p.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="test",
        help="LoCoMo conversations and CLARK-News questions used (default test)",
    )
    p.add_argument("--questions", type=int, default=20, help="LoCoMo questions (4 triples each)")
    p.add_argument(
        "--clark-questions", type=int, default=10, help="CLARK-News questions (2 triples each)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the draw (0)")
    p.add_argument(
        "--judge-model",
        required=True,
        help="the judge: an OpenAI-compatible model name, module:Class of a LangChain chat "
        "model, meclear-text-reader (the offline stand-in), or exact (the reference itself)",
    )
    p.add_argument("--judge-kwargs", default=None, help="JSON keyword arguments of the judge")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint of the judge")
    p.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="variable holding the key (OPENAI_API_KEY)"
    )
    p.add_argument(
        "--judge-output",
        choices=["auto", "structured", "text"],
        default="auto",
        help="verdicts as structured output when supported (auto), always, or free text",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request (120)")
    p.add_argument("--retries", type=int, default=2, help="attempts per call (2)")
    p.add_argument("--concurrency", type=int, default=2, help="calls in flight (2)")
    p.add_argument("--cache", type=Path, default=None, help="response cache (SQLite)")
    p.add_argument("--no-cache", action="store_true", help="keep replies in memory only")
    p.add_argument("--out", type=Path, default=None, help="write judge_check.json and .md here")
    p.set_defaults(handler=_handle)


def _triples(args: argparse.Namespace) -> list[Any]:
    from ..judge_check import clark_triples, locomo_triples
    from ..split import split_conversations

    if args.locomo is None and args.clark is None:
        raise ConfigurationError("give --locomo DIR and/or --clark DIR (the labelled data)")
    triples = []
    if args.locomo is not None:
        triples += locomo_triples(
            args.locomo,
            conversations=split_conversations(args.split),
            questions=args.questions,
            seed=args.seed,
        )
    if args.clark is not None:
        triples += clark_triples(
            args.clark, questions=args.clark_questions, split=args.split, seed=args.seed
        )
    if not triples:
        raise ConfigurationError("no labelled triple could be built from the data given")
    return triples


def run_judge_check(args: argparse.Namespace) -> dict[str, Any]:
    """Build the triples, ask the judge, return the report's data (with the calls made).

    Args:
        args: The parsed ``meclear judge-check`` flags.

    Returns:
        :meth:`~meclear_bench.judge_check.CalibrationReport.as_dict` plus ``calls``.
    """
    from ..judge_check import calibrate

    triples = _triples(args)
    if args.judge_model == "exact":
        from meclear_integrations.judges import ExactMatchJudge

        from ..real_query import EXACT_LABEL

        rule = ExactMatchJudge(mode="contains")
        report = calibrate(
            triples,
            lambda t: rule.score(t.question, t.answer, reference=t.reference).score,
            label=EXACT_LABEL,
        )
        return {**report.as_dict(), "calls": None}
    from meclear_integrations.core.config import RetryPolicy
    from meclear_integrations.judges import ReferenceLLMJudge

    from ..cache import ResponseCache, default_cache_path
    from ..model_client import CallGate, ModelClient
    from ..model_spec import ModelSpec, json_kwargs

    if not 1 <= args.retries <= 20:
        raise ConfigurationError("--retries must be between 1 and 20")
    spec = ModelSpec(
        name=args.judge_model,
        kwargs=json_kwargs(args.judge_kwargs, "--judge-kwargs"),
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        temperature=0.0,
        seed=args.seed,
        timeout=args.timeout,
    )
    cache = ResponseCache() if args.no_cache else ResponseCache(args.cache or default_cache_path())
    gate = CallGate(
        cache,
        concurrency=max(1, args.concurrency),
        retry=RetryPolicy(max_attempts=args.retries, retry_unreadable=False),
    )
    structured = {"auto": None, "structured": True, "text": False}[args.judge_output]
    try:
        client = ModelClient("judge", spec, gate, structured_output=structured)
        judge = ReferenceLLMJudge(client.text_model())
        report = calibrate(
            triples,
            lambda t: judge.score(t.question, t.answer, reference=t.reference).score,
            label=f"{spec.label} (reference-based LLM judge)",
            workers=max(1, args.concurrency),
        )
        return {**report.as_dict(), "calls": gate.totals.as_dict()}
    finally:
        cache.close()


def _handle(args: argparse.Namespace) -> int:
    from ..judge_check import format_report

    data = run_judge_check(args)
    table = format_report(data)
    print(table)
    calls = data.get("calls")
    if calls:
        print(
            f"\nmodel calls: {calls['provider_calls']} ({calls['cache_hits']} from the cache); "
            f"tokens: {calls['prompt_tokens']} prompt + {calls['completion_tokens']} completion; "
            f"failed calls: {calls['failed_calls']}"
        )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "judge_check.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
        (args.out / "judge_check.md").write_text(table + "\n", encoding="utf-8")
        print(f"wrote {args.out / 'judge_check.json'}, {args.out / 'judge_check.md'}")
    if not data["verdicts"]:
        print("the judge gave no verdict on any triple: it cannot judge here", file=sys.stderr)
        return 2
    return 0
