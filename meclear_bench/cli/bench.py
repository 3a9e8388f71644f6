"""``meclear bench``: every method on the same frozen cases; results.json, report.md, figures.

Cases come from ``--cases FILE`` (the JSONL contract), from ``--locomo DIR`` (built from
LoCoMo, saved as ``cases.jsonl``) or, with neither, from the built-in set. Task values come
from the simulated evidence world (the figures are SIMULATED) or, with ``--agent-model``,
from real chat models (:mod:`.bench_real`; the figures name the models).

Every run writes ``run.json`` and ``journal.jsonl`` (:mod:`meclear_bench.journal`)
as it goes: ``--resume`` continues an interrupted run, ``--shard i/n`` runs a part of the
cases and ``meclear bench merge DIR...`` assembles the parts into one run's report. Exit
status: 0 complete, 3 stopped by ``--max-calls`` / ``--max-tokens`` (partial results written),
2 an error: a provider refusing every call or an unreachable endpoint (partial results
written), no case left to run or finished (the funnel is written), a method excluded because
it failed where the reference did not (the other methods' results are written).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

from ..cli_args import add_engine_flags
from .bench_inputs import (
    SETTINGS,
    _load,
    _method_specs,
    _settings,
    _verifiers,
    outcome_errors,
    signal_settings,
)

__all__ = [
    "SETTINGS",
    "BenchFailed",
    "outcome_errors",
    "register",
    "run_bench",
    "signal_settings",
]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear bench`` subcommand (MeClear against the attribution baselines).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "bench",
        help="benchmark MeClear against LOO, ContextCite, ProxySPEX, ... (simulated world "
        "or real models)",
        description=(
            "Runs every method on the same frozen contexts with the same evaluator and the "
            "same cost counting, then writes results.json, report.md and PNG figures. "
            "Task values come from the simulated evidence world (SIMULATED figures) or, "
            "with --agent-model, from real chat models. 'meclear bench merge DIR...' "
            "combines the outputs of --shard runs."
        ),
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--cases", type=Path, help="JSONL case file")
    source.add_argument("--locomo", type=Path, help="LoCoMo directory (locomo10 JSON files)")
    p.add_argument(
        "--methods",
        default=None,
        help="comma-separated methods (default: oracle,meclear,loo,contextcite,proxyspex,none, "
        "plus llm-direct with --rater-model; 'meclear:PRESET' runs an engine preset)",
    )
    add_engine_flags(p)
    p.add_argument(
        "--clearance",
        choices=["paper", "verified", "direct"],
        default="verified",
        help="what methods delete: verified (default: the engine's Eq. 17-20 rule for every "
        "method), paper (MeClear verified, baselines delete their flagged set, the paper's "
        "Table 1), direct (every flagged set)",
    )
    p.add_argument(
        "--judge",
        default=None,
        help="success signal of every method: reference (default), full:Q, noisy:E, "
        "persistent:E, mixed:P:E, coalition (see meclear_integrations.simulation.judging); "
        "with --agent-model: reference (the judge model with the gold answer), exact "
        "(normalised containment of the gold answer, no model), coalition or full "
        "(the judge model, reference-free)",
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
        help="a standard setting: deterministic (each case's world, reference judge), "
        "noisy (temperature 0.2 and 5%% judge flips: --temperature 0.2 --judge noisy:0.05), "
        "persistent (a judge wrong on 5%% of answers on every call: persistent:0.05) or mixed "
        "(mixed:0.05:0.05); "
        "--judge / --temperature override it",
    )
    p.add_argument(
        "--recovery-trials",
        type=int,
        default=2,
        help="fresh trials behind unseen-trial Binary Task Recovery (default 2)",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        help="B distinct ablations of the surrogates (default: per case, as many distinct "
        "coalitions as MeClear evaluated: matched budgets)",
    )
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates (0: none)")
    p.add_argument("--reference", default=None, help="method compared pairwise (default meclear)")
    p.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="all",
        help="LoCoMo conversations: dev (26, 30, 41: where settings are tuned), test (the "
        "other seven: what the docs report) or all",
    )
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
    p.add_argument("--out", type=Path, default=None, help="output directory (required)")
    from .bench_real import add_real_flags
    from .bench_stream import add_stream_flags

    add_real_flags(p)
    add_stream_flags(p)
    p.set_defaults(handler=_handle)
    from .bench_merge import register_merge

    register_merge(p)


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
    if args.split != "all":
        parts += ["--split", args.split]
    parts += ["--seed", str(args.seed), "--clearance", args.clearance]
    if args.budget is not None:
        parts += ["--budget", str(args.budget)]
    if args.bootstrap != 2000:
        parts += ["--bootstrap", str(args.bootstrap)]
    if args.locomo is not None:
        parts += ["--k", str(args.k)]
        if args.conversations:
            parts += ["--conversations", args.conversations]
        if args.max_queries is not None:
            parts += ["--max-queries", str(args.max_queries)]
    from .bench_long import real_command_parts

    parts += real_command_parts(args)
    parts += ["--out", str(args.out)]
    return shlex.join(parts)


def _rater(args: argparse.Namespace) -> Any:
    """The llm-direct rater over a real chat model, when ``--rater-model`` names one."""
    if not getattr(args, "rater_model", None):
        return None
    from meclear_integrations.cli._openai import chat_openai

    from ..methods import prompt_rater

    chat = chat_openai(
        args.rater_model,
        base_url=args.rater_base_url,
        temperature=0.0,
        seed=args.seed,
        flag="--rater-model",
    )
    return prompt_rater(lambda prompt: str(chat.invoke(prompt).content))


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Load the cases, run the methods, write the outputs; returns results.json's content.

    Args:
        args: The parsed ``meclear bench`` flags.

    Returns:
        The content of ``results.json`` (a build-only run: the case count and funnel).

    Raises:
        ConfigurationError: ``--out`` is missing, or the flags ask for real models without
            ``--agent-model``.
        BenchFailed: No valid case is left to run (or, with ``--build-only``, none verified).
    """
    from .bench_real import real_mode, real_session

    if args.out is None:
        raise ConfigurationError("--out DIR is required")
    if args.dry_run:
        from .bench_dry_run import dry_run

        return dry_run(args)
    if (args.reverify or args.build_only) and not real_mode(args):
        raise ConfigurationError(
            "--reverify and --build-only verify with real models: add --agent-model"
        )
    real = None
    if real_mode(args):
        real = real_session(args, seed=args.seed, methods=_method_specs(args))
    try:
        return _run(args, real)
    finally:
        if real is not None:
            real.close()


def _run(args: argparse.Namespace, real: Any) -> dict[str, Any]:
    from ..backend import SIMULATED
    from ..journal import RunJournal, run_identity
    from ..outputs import write_outputs
    from ..results import build_results
    from ..runner import run_benchmark
    from ..shards import parse_shard, select_shard, sum_calls
    from ..stopping import RunStopped
    from .bench_long import ProgressBar, annotate_results, manifest, reverify, write_build

    shard = parse_shard(args.shard) if args.shard else None
    try:
        cases, skipped, funnel, source, built = _load(args, real)
        given = len(cases)
        if real is not None and args.reverify:
            cases, funnel = reverify(cases, real.verifier(args.concurrency), _verifiers(real))
    except RunStopped as exc:
        if real is not None and (args.build_only or args.reverify):
            _stopped_funnel(args, real, exc)
        raise
    if args.build_only:
        files = write_build(Path(args.out), cases, funnel, source)
        print(_build_message(args, real, cases, given, source, built))
        print(f"wrote {', '.join(map(str, files))}")
        if not cases:
            raise BenchFailed(f"no case of {source} was verified (see {files[1]})")
        return {"cases": len(cases), "funnel": funnel}
    if not cases:
        where = ""
        if funnel:
            files = write_build(Path(args.out), cases, funnel, source)
            where = f" (funnel: {files[1]})"
        raise BenchFailed(f"no valid case to run from {source}{where}")
    settings = _settings(args, real is not None)
    run_cases = select_shard(cases, *shard) if shard else cases
    command = _command(args)
    models = real.models() if real is not None else None
    identity = run_identity(
        settings,
        run_cases,
        models=models,
        mode=real.mode_identity() if real is not None else None,
        shard=shard,
    )
    journal = RunJournal(args.out)
    completed = journal.start(
        manifest(
            identity=identity,
            settings=settings,
            case_order=[c.case_id for c in cases],
            shard=shard,
            source=source,
            funnel=funnel,
            skipped=skipped,
            command=command,
            models=models,
        ),
        resume=args.resume,
    )
    reused = len(completed)
    gate = real.gate if real is not None else None
    bar = ProgressBar(len(run_cases), enabled=not args.no_progress, gate=gate)
    try:
        run = run_benchmark(
            run_cases,
            settings,
            rater=real.rater() if real is not None and "rater" in real.clients else _rater(args),
            keeper=real.keeper() if real is not None and "rater" in real.clients else None,
            backend=real.backend if real is not None else SIMULATED,
            completed=completed,
            workers=args.concurrency if real is not None else 1,
            on_outcome=journal.record_outcome,
            on_failure=journal.record_failure,
            bar=bar,
        )
    finally:
        bar.close()
    calls = this_run = gate.totals.as_dict() if gate is not None else None
    if calls is not None and journal.previous.get("calls"):
        calls = sum_calls([journal.previous["calls"], calls])  # every invocation of the run
    results = build_results(run, funnel=funnel, skipped_lines=skipped, source=source)
    annotate_results(
        results, run, models=models, mode=real.mode if real else None, calls=calls, shard=shard
    )
    if this_run is not None:
        results["calls_this_invocation"] = this_run
    written = write_outputs(
        args.out,
        run,
        results,
        cases=cases if built or args.reverify else None,
        command=command,
        figures=not args.no_figures,
    )
    journal.finish(
        "stopped" if run.stopped else "complete",
        stopped=run.stopped,
        not_run=run.not_run,
        calls=calls,
        wall_seconds=run.wall_seconds,
        reused_outcomes=reused,
    )
    _print_summary(results, cases, skipped, source, written)
    return results


def _print_summary(
    results: dict[str, Any], cases: list, skipped: list, source: str, written: dict
) -> None:
    from ..labels import run_label
    from ..report import table_accuracy, table_by_group, table_overall

    label = run_label(results)
    if results.get("simulated", True):
        print("SIMULATED evidence world (a stand-in for an LLM; not real-model results)")
    else:
        print(f"Real models: {label}")
    print(f"{len(cases)} cases from {source}; {len(skipped)} bad lines skipped")
    if results.get("shard"):
        print(f"shard {results['shard'][0]}/{results['shard'][1]}: {results['n_cases']} cases")
    print(table_overall(results))
    print()
    print(table_accuracy(results))
    print()
    print(table_by_group(results, "by_structure"))
    for name, block in results["methods"].items():
        if block.get("status") != "ok":
            print(f"{name}: {block['reason']}")
    if results.get("calls"):
        c = results.get("calls_this_invocation") or results["calls"]
        print(
            f"model calls made by this invocation: {c['provider_calls']} ({c['cache_hits']} "
            f"answered from the cache); tokens: {c['prompt_tokens']} prompt + "
            f"{c['completion_tokens']} completion"
        )
        if results["calls"] != c:  # a resumed run: the earlier invocations too
            t = results["calls"]
            print(
                f"model calls of the whole run (every invocation): {t['provider_calls']} "
                f"({t['cache_hits']} from the cache); tokens: {t['prompt_tokens']} prompt + "
                f"{t['completion_tokens']} completion"
            )
    if results.get("failures"):
        print(f"{len(results['failures'])} method failures (see report.md)")
    if results.get("stopped"):
        print(
            f"STOPPED: {results['stopped']}; partial results for {results['n_cases']} cases "
            f"({len(results['incomplete'])} unfinished); --resume continues (cached calls "
            "are free)"
        )
    print(f"wrote {', '.join(str(p) for p in written.values())}")


class BenchFailed(RuntimeError):
    """The run produced no results to report (exit status 2, with the reason)."""


def _stopped_funnel(args: argparse.Namespace, real: Any, exc: Exception) -> None:
    """``funnel.json`` of a build or re-verification that stopped before its end."""
    import json

    source = str(args.cases) if args.cases is not None else f"LoCoMo {args.locomo}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    funnel = {
        "source": source,
        "stopped": str(exc),
        "verified_with": _verifiers(real),
        "calls": real.gate.totals.as_dict(),
        "note": "the build stopped before its end: no case was written",
    }
    (out / "funnel.json").write_text(json.dumps(funnel, indent=2) + "\n", encoding="utf-8")
    print(f"build stopped: {exc}; wrote {out / 'funnel.json'}", file=sys.stderr)


def _build_message(
    args: argparse.Namespace, real: Any, cases: list, given: int, source: str, built: bool
) -> str:
    """What ``--build-only`` verified, with which models, at what cost."""
    if real is None or not (built or args.reverify):
        return (
            f"{len(cases)} cases from {source}, written as given: NOT verified by this run "
            "(add --reverify to verify them with the run's models)"
        )
    c = real.gate.totals.as_dict()
    cost = f"{c['provider_calls']} model calls, {c['cache_hits']} answered from the cache"
    if args.reverify:
        what = f"re-verified {given} cases from {source}: {len(cases)} kept"
    else:
        what = f"built and verified {len(cases)} cases from {source}"
    return f"{what}, verified with {_verifiers(real)} ({cost})"


def _handle(args: argparse.Namespace) -> int:
    from ..stopping import RunStopped

    try:
        if args.stream:
            from .bench_stream import run_stream_bench

            if args.out is None:
                raise ConfigurationError("--out DIR is required")
            run_stream_bench(args)
            return 0
        results = run_bench(args)
    except RunStopped as exc:
        print(f"{'error' if exc.fatal else 'stopped'}: {exc}", file=sys.stderr)
        return 2 if exc.fatal else 3
    except (ValueError, ImportError, BenchFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if "methods" in results:
        problems = outcome_errors(results)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            return 2
    if results.get("stopped"):
        print(f"{'error' if _fatal(results) else 'stopped'}: {results['stopped']}", file=sys.stderr)
        return 2 if _fatal(results) else 3
    return 0


def _fatal(results: dict[str, Any]) -> bool:
    return bool(results.get("stopped_fatal"))
