"""``meclear bench --stream``: methods x trigger policies over LoCoMo query streams, ledger on.

See :mod:`meclear_bench.stream_build` (how the streams and the recurring
faults are built), :mod:`~meclear_bench.stream_run` (methods, policies,
simulated feedback) and :mod:`~meclear_bench.stream_report` (metrics and the
targets). Figures are SIMULATED.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

__all__ = ["DEFAULT_POLICIES", "add_stream_flags", "run_stream_bench"]

DEFAULT_METHODS = "none,meclear,meclear+ledger"
DEFAULT_POLICIES = "always,judge,sample:0.3,every:4,feedback,known+feedback"


def add_stream_flags(p: argparse.ArgumentParser) -> None:
    """Add the ``--stream`` benchmark's flags to the ``meclear bench`` parser.

    Args:
        p: The ``meclear bench`` parser.
    """
    group = p.add_argument_group("stream benchmark (--stream)")
    group.add_argument(
        "--stream",
        action="store_true",
        help="run query streams over LoCoMo with persistent, recurring faults and the ledger "
        "on (needs --locomo); methods none, meclear, meclear+ledger",
    )
    group.add_argument(
        "--policies",
        default=DEFAULT_POLICIES,
        help=f"trigger policies (default {DEFAULT_POLICIES})",
    )
    group.add_argument(
        "--fault-share", type=float, default=0.2, help="share of questions given a fault (0.2)"
    )
    group.add_argument(
        "--feedback-rate",
        type=float,
        default=0.5,
        help="probability that the simulated user gives feedback on an answer (0.5)",
    )
    group.add_argument(
        "--review-min-queries", type=int, default=2, help="N of the final review (2)"
    )
    group.add_argument(
        "--mode",
        default=None,
        help="the production loop instead of methods x policies: comma-separated loop modes "
        "none,inline,background on a simulated clock (bench.stream_loop)",
    )
    group.add_argument(
        "--loop-policy", default="judge", help="trigger policy of the --mode runs (judge)"
    )
    group.add_argument(
        "--call-seconds", type=float, default=0.5, help="--mode: seconds per model call (0.5)"
    )
    group.add_argument(
        "--interval-seconds",
        type=float,
        default=2.0,
        help="--mode: seconds between two queries of a conversation (2)",
    )
    group.add_argument(
        "--audit-workers", type=int, default=4, help="--mode background: audit workers (4)"
    )
    group.add_argument(
        "--reask",
        type=int,
        default=0,
        help="--mode background: re-ask every query N more times within its interval (a "
        "re-ask storm); reports audits and audit model calls per question (0)",
    )
    group.add_argument(
        "--no-audit-bounds",
        action="store_true",
        help="--mode background: no per-question audit bounds (jobs.audit_gate), for comparison",
    )


def _command(args: argparse.Namespace, methods: str) -> str:
    parts = ["meclear", "bench", "--stream", "--locomo", str(args.locomo), "--k", str(args.k)]
    parts += ["--methods", methods, "--policies", args.policies]
    parts += ["--fault-share", f"{args.fault_share:g}"]
    parts += ["--feedback-rate", f"{args.feedback_rate:g}"]
    parts += ["--review-min-queries", str(args.review_min_queries), "--seed", str(args.seed)]
    for flag in ("setting", "judge", "temperature"):
        value = getattr(args, flag, None)
        if value is not None:
            parts += [f"--{flag}", str(value)]
    if args.conversations:
        parts += ["--conversations", args.conversations]
    if args.max_queries is not None:
        parts += ["--max-queries", str(args.max_queries)]
    if args.bootstrap != 2000:
        parts += ["--bootstrap", str(args.bootstrap)]
    parts += ["--out", str(args.out)]
    return shlex.join(parts)


def run_stream_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Build the streams, run every method x policy, write the outputs.

    Args:
        args: The parsed ``meclear bench --stream`` flags.

    Returns:
        The stream benchmark's results (also written to ``--out``).

    Raises:
        ConfigurationError: ``--locomo`` is missing.
    """
    from ..cli_args import engine_config
    from ..stream_build import build_streams
    from ..stream_report import stream_results, write_stream_outputs
    from ..stream_run import run_config

    if args.locomo is None:
        raise ConfigurationError("--stream needs --locomo DIR (the LoCoMo conversations)")
    if getattr(args, "mode", None):
        return run_loop_bench(args)
    methods = args.methods or DEFAULT_METHODS
    method_list = [m.strip() for m in methods.split(",") if m.strip()]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    build = build_streams(
        args.locomo,
        k=args.k,
        seed=args.seed,
        fault_share=args.fault_share,
        conversations=args.conversations.split(",") if args.conversations else None,
        max_queries_per_conversation=args.max_queries,
    )
    engine = engine_config(args)
    from .bench_inputs import signal_settings

    signals = signal_settings(args)
    configs = [("none", "-")] if "none" in method_list else []
    configs += [(m, p) for m in method_list if m != "none" for p in policies]
    total = sum(len(s.queries) for s in build.streams) * len(configs)
    bar = _progress(total, not args.no_progress)
    runs = []
    try:
        for method, policy in configs:
            if bar is not None:
                bar.set_description(f"{method} / {policy}")
            runs.append(
                run_config(
                    build,
                    method,  # type: ignore[arg-type]
                    policy,
                    engine=engine,
                    ledger_dir=Path(args.out) / "ledgers",
                    feedback_rate=args.feedback_rate,
                    review_min_queries=args.review_min_queries,
                    seed=args.seed,
                    judge=signals["judge"],
                    temperature=signals["temperature"],
                    progress=bar.update if bar is not None else None,
                )
            )
    finally:
        if bar is not None:
            bar.close()
    command = _command(args, methods)
    results = stream_results(
        build,
        runs,
        judge=str(signals["judge"]),
        temperature=signals["temperature"],
        replicates=args.bootstrap,
        seed=args.seed,
        review_min_queries=args.review_min_queries,
        command=command,
    )
    figures = not args.no_figures
    written = write_stream_outputs(Path(args.out), build, runs, results, figures=figures)
    from ..stream_report import render_stream_markdown

    print(render_stream_markdown(results))
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return results


def _loop_command(args: argparse.Namespace) -> str:
    parts = ["meclear", "bench", "--stream", "--locomo", str(args.locomo), "--k", str(args.k)]
    parts += ["--mode", args.mode, "--loop-policy", args.loop_policy]
    parts += ["--call-seconds", f"{args.call_seconds:g}"]
    parts += ["--interval-seconds", f"{args.interval_seconds:g}"]
    parts += ["--audit-workers", str(args.audit_workers)]
    if getattr(args, "reask", 0):
        parts += ["--reask", str(args.reask)]
    if getattr(args, "no_audit_bounds", False):
        parts += ["--no-audit-bounds"]
    parts += ["--fault-share", f"{args.fault_share:g}", "--seed", str(args.seed)]
    parts += ["--review-min-queries", str(args.review_min_queries)]
    if args.conversations:
        parts += ["--conversations", args.conversations]
    if args.max_queries is not None:
        parts += ["--max-queries", str(args.max_queries)]
    parts += ["--out", str(args.out)]
    return shlex.join(parts)


def run_loop_bench(args: argparse.Namespace) -> dict[str, Any]:
    """``--stream --mode``: the production loop (none / inline / background) over the streams.

    Args:
        args: The parsed flags.

    Returns:
        The loop results (also written to ``--out``).

    Raises:
        ConfigurationError: An unknown mode.
    """
    from ..cli_args import engine_config
    from ..stream_build import build_streams
    from ..stream_loop import LOOP_MODES, LoopSettings, run_loop
    from ..stream_loop_report import loop_results, render_loop_markdown, write_loop_outputs
    from .bench_inputs import signal_settings

    modes = [m.strip() for m in args.mode.split(",") if m.strip()]
    unknown = [m for m in modes if m not in LOOP_MODES]
    if unknown:
        raise ConfigurationError(f"unknown --mode {unknown}; choose from {', '.join(LOOP_MODES)}")
    build = build_streams(
        args.locomo,
        k=args.k,
        seed=args.seed,
        fault_share=args.fault_share,
        conversations=args.conversations.split(",") if args.conversations else None,
        max_queries_per_conversation=args.max_queries,
    )
    settings = LoopSettings(
        args.call_seconds,
        args.interval_seconds,
        args.audit_workers,
        reask=getattr(args, "reask", 0),
        audit_bounds=not getattr(args, "no_audit_bounds", False),
    )
    signals = signal_settings(args)
    total = sum(len(s.queries) for s in build.streams) * len(modes)
    bar = _progress(total, not args.no_progress)
    runs = []
    try:
        for mode in modes:
            runs.append(
                run_loop(
                    build,
                    mode,
                    args.loop_policy,
                    engine=engine_config(args),
                    ledger_dir=Path(args.out) / "ledgers",
                    settings=settings,
                    seed=args.seed,
                    judge=signals["judge"],
                    temperature=signals["temperature"],
                    progress=bar.update if bar is not None else None,
                    review_min_queries=args.review_min_queries,
                )
            )
    finally:
        if bar is not None:
            bar.close()
    results = loop_results(runs, command=_loop_command(args))
    written = write_loop_outputs(Path(args.out), runs, results, figures=not args.no_figures)
    print(render_loop_markdown(results))
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return results


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the bench extra
        return None
    return tqdm(total=total, unit="query", disable=None)  # no bar when stderr is no TTY
