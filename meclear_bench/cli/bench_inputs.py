"""What ``meclear bench`` and its sibling commands read from their flags: cases, settings.

Shared by ``bench``, ``bench dry-run``, ``bench merge``, ``bench stream`` and ``bench-sweep``
(each imports this module, none imports another command).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

from ..cli_args import builtin_cases, engine_config

__all__ = ["SETTINGS", "outcome_errors", "signal_settings"]

SETTINGS: dict[str, dict[str, Any]] = {
    "deterministic": {"temperature": None, "judge": "reference"},
    "noisy": {"temperature": 0.2, "judge": "noisy:0.05"},
    "persistent": {"temperature": 0.2, "judge": "persistent:0.05"},
    "mixed": {"temperature": 0.2, "judge": "mixed:0.05:0.05"},
}
"""The standard settings: world temperature and judge signal (``persistent``: a judge that
repeats its mistakes; ``mixed``: persistent and per-call errors)."""


def _load(
    args: argparse.Namespace, real: Any = None
) -> tuple[list, list[dict], dict[str, Any], str, bool]:
    """(cases, skipped lines, funnel, source label, built here).

    ``real`` (a :class:`~.bench_real.RealSession`) verifies LoCoMo cases with the real models.
    """
    if args.cases is not None:
        from .. import load_cases
        from ..split import split_cases

        parsed = load_cases(args.cases)
        skipped = [e.model_dump() for e in parsed.errors]
        for e in parsed.errors:
            print(f"{args.cases}: line {e.line}: {e.error} (skipped)", file=sys.stderr)
        cases = split_cases(parsed.cases, args.split)
        return cases, skipped, {}, str(args.cases), False
    if args.locomo is not None:
        from .. import build_locomo_cases
        from ..split import split_conversations

        conversations = args.conversations.split(",") if args.conversations else None
        if args.split != "all":
            if conversations is not None:
                raise ConfigurationError("give --split or --conversations, not both")
            conversations = split_conversations(args.split)
        verification: dict[str, Any] = {}
        if real is not None:
            verification = {
                "verify": real.verifier(args.concurrency),
                "batch": 2 * args.concurrency,
                "verified_with": _verifiers(real),
            }
        build = build_locomo_cases(
            args.locomo,
            k=args.k,
            seed=args.seed,
            conversations=conversations,
            max_queries_per_conversation=args.max_queries,
            progress=not args.no_progress,
            **verification,
        )
        funnel = build.funnel
        funnel = funnel.model_dump(mode="json") if hasattr(funnel, "model_dump") else dict(funnel)
        return list(build.cases), [], funnel, f"LoCoMo {args.locomo}", True
    from ..split import split_cases

    return split_cases(builtin_cases(), args.split), [], {}, "built-in case set", False


def signal_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``judge`` and ``temperature`` of the run from --setting, --judge, --temperature.

    Args:
        args: The parsed ``meclear bench`` flags.

    Returns:
        ``{"judge": ..., "temperature": ...}`` for the run's settings.
    """
    from meclear_integrations.simulation import JudgeSignal

    base = dict(SETTINGS[args.setting]) if getattr(args, "setting", None) else {}
    judge = args.judge if args.judge is not None else base.get("judge", "reference")
    temperature = args.temperature if args.temperature is not None else base.get("temperature")
    return {"judge": JudgeSignal.parse(judge), "temperature": temperature}


def _method_specs(args: argparse.Namespace) -> tuple[str, ...]:
    """``--methods``, else the defaults (with ``llm-direct`` when ``--rater-model`` is given)."""
    from ..settings import DEFAULT_METHODS, RATED_DEFAULT

    if args.methods:
        return tuple(m.strip() for m in args.methods.split(","))
    if getattr(args, "rater_model", None):
        return (*DEFAULT_METHODS[:-1], RATED_DEFAULT, DEFAULT_METHODS[-1])  # before "none"
    return DEFAULT_METHODS


def _settings(args: argparse.Namespace, real: bool) -> Any:
    from ..settings import BenchSettings

    engine = engine_config(args)
    methods = _method_specs(args)
    signal = {} if real else signal_settings(args)
    return BenchSettings(
        methods=methods,
        engine=engine,
        match_budget=args.budget is None,
        surrogate_budget=args.budget or 32,
        clearance=args.clearance,
        seed=args.seed,
        bootstrap_replicates=args.bootstrap,
        reference_method=args.reference,
        recovery_trials=args.recovery_trials,
        **signal,
    )


def _verifiers(real: Any) -> str:
    """The models that verify cases (agent and grader), for messages and funnels."""
    labels = real.labels()
    if getattr(real, "grade", "model") == "exact":
        from ..real_query import EXACT_LABEL

        labels = {**labels, "judge": EXACT_LABEL}
    return ", ".join(f"{role} {labels[role]}" for role in ("agent", "judge") if role in labels)


def outcome_errors(results: dict[str, Any]) -> list[str]:
    """Why a finished run's results are not usable in full (empty: they are).

    Args:
        results: The run's ``results.json`` content.

    Returns:
        One message per problem: no case in the cohort, a method excluded by its failures.
    """
    problems: list[str] = []
    if results.get("stopped"):
        return problems  # reported as stopped (exit 3, or 2 when fatal)
    if not results.get("n_cases"):
        failures = results.get("failures") or []
        first = ""
        if failures:
            first = f"; first failure: {failures[0]['method']}: {failures[0]['error']}"
        problems.append(
            f"no case finished by every method ({len(failures)} method failures){first}"
        )
    for name, block in results.get("methods", {}).items():
        if block.get("status") == "failed":
            problems.append(f"{name}: {block['reason']}")
    return problems
