"""``meclear bench ... --dry-run``: what a real-model run would cost, before spending any.

It estimates the calls and tokens.

The dry run replaces every model by the offline text-reading stand-in
(:mod:`meclear_bench.text_reader`, served on 127.0.0.1, in-memory cache), runs
the requested methods with the requested settings on a sample of the cases and scales what
they asked for to the whole run: per method, the calls and tokens one case costs a user of
that method; for the run, the provider calls and tokens per case with every method sharing
the response cache (what ``meclear bench`` pays), times the number of cases. A LoCoMo build
is estimated from the simulated build's counts (queries to check, fault proposals to
verify) times the stand-in's calls per verification: an upper bound, since a real model
drops queries whose clean context it answers wrongly. A real model's answers change the
counts (adaptive trials, deduplication of identical answers): an estimate, not a quote.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

__all__ = ["dry_run"]


def _sample(cases: list[Any], size: int) -> list[Any]:
    """``size`` cases spread evenly over the list (all of them when it is short)."""
    if size <= 0 or len(cases) <= size:
        return list(cases)
    step = len(cases) / size
    return [cases[int(i * step)] for i in range(size)]


def _build_counts(funnel: dict[str, Any]) -> tuple[int, int]:
    """(clean checks, fault proposals) a LoCoMo build verifies."""
    dropped = funnel.get("dropped_queries", {})
    checks = int(funnel.get("queries_with_gold_memories", 0)) - int(
        dropped.get("gold_not_retrieved", 0)
    )
    candidates = int(funnel.get("candidates", {}).get("all", 0))
    lost = sum(
        int(row.get("all", 0))
        for reason, row in funnel.get("dropped", {}).items()
        if reason in ("no_distractor", "fault_not_retrieved", "gold_displaced")
    )
    return max(0, checks), max(0, candidates - lost)


def _verification_cost(session: Any, cases: list[Any]) -> dict[str, float]:
    """Provider calls and tokens per verified clean case and per verified fault case."""
    verify = session.verifier(1)
    out: dict[str, float] = {}
    for label, group in (
        ("clean", [c for c in cases if not c.targets][:4]),
        ("fault", [c for c in cases if c.targets][:4]),
    ):
        if not group:
            continue
        before = session.gate.totals.as_dict()
        verify(group)
        after = session.gate.totals.as_dict()
        out[f"{label}_calls"] = (after["provider_calls"] - before["provider_calls"]) / len(group)
        tokens = (
            after["prompt_tokens"]
            + after["completion_tokens"]
            - before["prompt_tokens"]
            - before["completion_tokens"]
        )
        out[f"{label}_tokens"] = tokens / len(group)
    return out


def _tokens(outcome: Any) -> int:
    return (outcome.prompt_tokens or 0) + (outcome.completion_tokens or 0)


def dry_run(args: argparse.Namespace) -> dict[str, Any]:
    """Estimate the run's calls and tokens (module docstring).

    Prints and writes ``dry_run.json`` into ``--out``.

    Args:
        args: The parsed ``meclear bench ... --dry-run`` flags.

    Returns:
        The estimate written to ``dry_run.json``.

    Raises:
        ConfigurationError: No ``--agent-model`` is given.
    """
    from ..runner import run_benchmark
    from ..shards import parse_shard, select_shard
    from .bench_inputs import _load, _method_specs, _settings
    from .bench_real import real_mode, real_session

    if not real_mode(args):
        raise ConfigurationError("--dry-run estimates a real-model run: add --agent-model")
    session = real_session(args, seed=args.seed, stand_in=True, methods=_method_specs(args))
    try:
        cases, _, funnel, source, built = _load(args)  # simulated build: counts only
        if args.shard:
            cases = select_shard(cases, *parse_shard(args.shard))
        if not cases:
            raise SystemExit("error: no valid cases to estimate")
        settings = _settings(args, True)
        sample = _sample(cases, args.dry_run_cases)
        build = _verification_cost(session, sample) if built else {}
        before = session.gate.totals.as_dict()
        run = run_benchmark(
            sample,
            settings,
            rater=session.rater() if "rater" in session.clients else None,
            backend=session.backend,
            workers=args.concurrency,
        )
        after = session.gate.totals.as_dict()
    finally:
        session.close()
    n, m = len(cases), max(1, len(sample))
    calls = (after["provider_calls"] - before["provider_calls"]) / m
    tokens = (
        after["prompt_tokens"]
        + after["completion_tokens"]
        - before["prompt_tokens"]
        - before["completion_tokens"]
    ) / m
    per_method = {
        name: {
            "model_calls_per_case": sum(o.model_calls for o in outs) / max(1, len(outs)),
            "tokens_per_case": sum(_tokens(o) for o in outs) / max(1, len(outs)),
        }
        for name, outs in run.outcomes.items()
    }
    estimate: dict[str, Any] = {
        "estimated_with": "meclear-text-reader (offline stand-in; real models differ)",
        "source": source,
        "cases": n,
        "sample": len(sample),
        "per_method": per_method,
        "run_calls_per_case": calls,
        "run_tokens_per_case": tokens,
        "run_calls": round(calls * n),
        "run_tokens": round(tokens * n),
    }
    if built:
        checks, proposals = _build_counts(funnel)
        estimate["build"] = {
            "clean_checks": checks,
            "fault_proposals": proposals,
            "calls_at_most": round(
                checks * build.get("clean_calls", 0) + proposals * build.get("fault_calls", 0)
            ),
            "tokens_at_most": round(
                checks * build.get("clean_tokens", 0) + proposals * build.get("fault_tokens", 0)
            ),
        }
    _print(estimate)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dry_run.json").write_text(json.dumps(estimate, indent=2) + "\n", encoding="utf-8")
    return estimate


def _print(e: dict[str, Any]) -> None:
    print(
        f"DRY RUN: no model called. Estimated with the offline text-reading stand-in on "
        f"{e['sample']} of {e['cases']} cases ({e['source']}); a real model's answers change "
        "the counts."
    )
    print("| method | model calls / case | tokens / case |")
    print("|---|---|---|")
    for name, row in e["per_method"].items():
        print(f"| {name} | {row['model_calls_per_case']:.1f} | {row['tokens_per_case']:.0f} |")
    print(
        f"run (methods share the response cache): {e['run_calls_per_case']:.1f} calls and "
        f"{e['run_tokens_per_case']:.0f} tokens per case -> about {e['run_calls']} calls and "
        f"{e['run_tokens']} tokens for {e['cases']} cases"
    )
    if "build" in e:
        b = e["build"]
        print(
            f"LoCoMo build with real verification: at most {b['calls_at_most']} calls and "
            f"{b['tokens_at_most']} tokens ({b['clean_checks']} clean checks, "
            f"{b['fault_proposals']} fault proposals)"
        )
