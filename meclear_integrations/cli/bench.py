"""``meclear bench``: every method on the same frozen cases; results.json, report.md, figures.

Cases come from ``--cases FILE`` (the JSONL contract), from ``--locomo DIR`` (built from
LoCoMo, saved as ``cases.jsonl``) or, with neither, from the built-in set. Task values come
from the simulated evidence world: the figures are SIMULATED.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..bench.cli_args import add_engine_flags, builtin_cases, engine_config

__all__ = ["SETTINGS", "register", "run_bench"]

SETTINGS: dict[str, dict[str, Any]] = {
    "deterministic": {"temperature": None, "judge": "reference"},
    "noisy": {"temperature": 0.2, "judge": "noisy:0.05"},
}
"""The two standard settings: world temperature and judge signal."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "bench",
        help="benchmark MeClear against LOO, ContextCite, ProxySPEX, ... (simulated world)",
        description=(
            "Runs every method on the same frozen contexts with the same evaluator and the "
            "same cost counting, then writes results.json, report.md and PNG figures. "
            "Task values come from the simulated evidence world (SIMULATED figures)."
        ),
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--cases", type=Path, help="JSONL case file")
    source.add_argument("--locomo", type=Path, help="LoCoMo directory (locomo10 JSON files)")
    p.add_argument(
        "--methods",
        default=None,
        help="comma-separated methods (default: meclear,loo,contextcite,proxyspex,llm-direct,none;"
        " 'meclear:PRESET' runs an engine preset)",
    )
    add_engine_flags(p)
    p.add_argument(
        "--clearance",
        choices=["paper", "verified", "direct"],
        default="paper",
        help="what methods delete: paper (MeClear verified, baselines delete their flagged "
        "set), verified (Eq. 17-20 for every method), direct (every flagged set)",
    )
    p.add_argument(
        "--judge",
        default=None,
        help="success signal of every method: reference (default), full:Q, noisy:E, "
        "coalition (see meclear_integrations.simulation.judging)",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="world temperature for every case (default: each case's own)",
    )
    p.add_argument(
        "--setting",
        choices=sorted(SETTINGS),
        default=None,
        help="a standard setting: deterministic (each case's world, reference judge) or "
        "noisy (temperature 0.2 and 5%% judge flips: --temperature 0.2 --judge noisy:0.05); "
        "--judge / --temperature override it",
    )
    p.add_argument(
        "--recovery-trials",
        type=int,
        default=2,
        help="fresh trials behind unseen-trial Binary Task Recovery (default 2)",
    )
    p.add_argument("--budget", type=int, default=32, help="B ablations of the surrogates")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates (0: none)")
    p.add_argument("--reference", default=None, help="method compared pairwise (default meclear)")
    p.add_argument("--k", type=int, default=5, help="retrieval budget K (with --locomo)")
    p.add_argument("--conversations", default=None, help="comma-separated ids (with --locomo)")
    p.add_argument("--max-queries", type=int, default=None, help="per conversation (--locomo)")
    p.add_argument(
        "--rater-model",
        default=None,
        help="chat model for the llm-direct baseline (OpenAI-compatible; OPENAI_API_KEY)",
    )
    p.add_argument("--rater-base-url", default=None, help="OpenAI-compatible endpoint")
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    from .bench_stream import add_stream_flags

    add_stream_flags(p)
    p.set_defaults(handler=_handle)


def _command(args: argparse.Namespace) -> str:
    parts = ["meclear", "bench"]
    for flag in ("cases", "locomo", "methods", "preset", "estimator", "permutations", "trials"):
        value = getattr(args, flag, None)
        if value is not None:
            parts += [f"--{flag}", str(value)]
    for flag in ("setting", "judge", "temperature"):
        value = getattr(args, flag, None)
        if value is not None:
            parts += [f"--{flag}", str(value)]
    if args.recovery_trials != 2:
        parts += ["--recovery-trials", str(args.recovery_trials)]
    parts += ["--seed", str(args.seed), "--clearance", args.clearance]
    if args.budget != 32:
        parts += ["--budget", str(args.budget)]
    if args.bootstrap != 2000:
        parts += ["--bootstrap", str(args.bootstrap)]
    if args.locomo is not None:
        parts += ["--k", str(args.k)]
        if args.conversations:
            parts += ["--conversations", args.conversations]
        if args.max_queries is not None:
            parts += ["--max-queries", str(args.max_queries)]
    parts += ["--out", str(args.out)]
    return shlex.join(parts)


def _load(args: argparse.Namespace) -> tuple[list, list[dict], dict[str, Any], str, bool]:
    """(cases, skipped lines, funnel, source label, built here)."""
    if args.cases is not None:
        from ..bench import load_cases

        parsed = load_cases(args.cases)
        skipped = [e.model_dump() for e in parsed.errors]
        for e in parsed.errors:
            print(f"{args.cases}: line {e.line}: {e.error} (skipped)", file=sys.stderr)
        return parsed.cases, skipped, {}, str(args.cases), False
    if args.locomo is not None:
        from ..bench import build_locomo_cases  # type: ignore[attr-defined]

        conversations = args.conversations.split(",") if args.conversations else None
        build = build_locomo_cases(
            args.locomo,
            k=args.k,
            seed=args.seed,
            conversations=conversations,
            max_queries_per_conversation=args.max_queries,
            progress=not args.no_progress,
        )
        funnel = build.funnel
        funnel = funnel.model_dump(mode="json") if hasattr(funnel, "model_dump") else dict(funnel)
        return list(build.cases), [], funnel, f"LoCoMo {args.locomo}", True
    return builtin_cases(), [], {}, "built-in case set", False


def _rater(args: argparse.Namespace) -> Any:
    """The llm-direct rater over a real chat model, when ``--rater-model`` names one."""
    if not getattr(args, "rater_model", None):
        return None
    from ..bench.methods import prompt_rater
    from ._openai import chat_openai

    chat = chat_openai(
        args.rater_model,
        base_url=args.rater_base_url,
        temperature=0.0,
        seed=args.seed,
        flag="--rater-model",
    )
    return prompt_rater(lambda prompt: str(chat.invoke(prompt).content))


def signal_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``judge`` and ``temperature`` of the run from --setting, --judge, --temperature."""
    from ..simulation import JudgeSignal

    base = dict(SETTINGS[args.setting]) if getattr(args, "setting", None) else {}
    judge = args.judge if args.judge is not None else base.get("judge", "reference")
    temperature = args.temperature if args.temperature is not None else base.get("temperature")
    return {"judge": JudgeSignal.parse(judge), "temperature": temperature}


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Load the cases, run the methods, write the outputs; returns results.json's content."""
    from ..bench.outputs import write_outputs
    from ..bench.results import build_results
    from ..bench.runner import run_benchmark
    from ..bench.settings import DEFAULT_METHODS, BenchSettings

    cases, skipped, funnel, source, built = _load(args)
    if not cases:
        raise SystemExit("error: no valid cases to run")
    engine = engine_config(args)
    methods = tuple(m.strip() for m in args.methods.split(",")) if args.methods else DEFAULT_METHODS
    settings = BenchSettings(
        methods=methods,
        engine=engine,
        trials=args.trials if args.trials is not None else engine.trials,
        loo_tolerance=engine.loo_tolerance,
        harm_tolerance=engine.harm_tolerance,
        surrogate_budget=args.budget,
        clearance=args.clearance,
        seed=args.seed,
        bootstrap_replicates=args.bootstrap,
        reference_method=args.reference,
        recovery_trials=args.recovery_trials,
        **signal_settings(args),
    )
    run = run_benchmark(cases, settings, rater=_rater(args), progress=not args.no_progress)
    results = build_results(run, funnel=funnel, skipped_lines=skipped, source=source)
    command = _command(args)
    written = write_outputs(
        args.out,
        run,
        results,
        cases=cases if built else None,
        command=command,
        figures=not args.no_figures,
    )
    from ..bench.report import table_accuracy, table_by_group, table_overall

    print("SIMULATED evidence world (a stand-in for an LLM; not real-model results)")
    print(f"{len(cases)} cases from {source}; {len(skipped)} bad lines skipped")
    print(table_overall(results))
    print()
    print(table_accuracy(results))
    print()
    print(table_by_group(results, "by_structure"))
    for name, block in results["methods"].items():
        if block.get("status") != "ok":
            print(f"{name}: {block['reason']}")
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return results


def _handle(args: argparse.Namespace) -> int:
    try:
        if args.stream:
            from .bench_stream import run_stream_bench

            run_stream_bench(args)
            return 0
        run_bench(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
