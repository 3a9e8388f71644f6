"""``meclear explain``: one case's decision as a figure and the engine's report table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli_args import add_engine_flags, builtin_cases, engine_config

__all__ = ["register", "run_explain"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear explain`` subcommand (the figure of one case's decision).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "explain",
        help="draw one benchmark case's decision (LOO vs Shapley, candidates)",
        description=(
            "Runs the engine on one case and draws, per memory, the LOO effect beside the "
            "Shapley estimate with its interval (harmful and cleared marked) and the "
            "clearance candidates with their values; prints the report table. Task values "
            "come from the simulated evidence world (SIMULATED)."
        ),
    )
    p.add_argument("--cases", type=Path, default=None, help="JSONL case file (default: built-in)")
    p.add_argument("--case-id", required=True, help="case to explain")
    p.add_argument("--out", type=Path, required=True, help="PNG path")
    add_engine_flags(p)
    p.set_defaults(handler=_handle)


def run_explain(args: argparse.Namespace) -> Path:
    """Run the engine on one benchmark case and draw its decision.

    Args:
        args: The parsed ``meclear explain`` flags.

    Returns:
        The path of the written figure.

    Raises:
        KeyError: No case has the id ``--case-id``.
    """
    from .. import load_cases
    from ..counting import CountingEvaluator
    from ..explain_figure import draw_decision
    from ..methods import MeClearMethod, MethodContext
    from ..settings import BenchSettings

    if args.cases is not None:
        parsed = load_cases(args.cases)
        for e in parsed.errors:
            print(f"{args.cases}: line {e.line}: {e.error} (skipped)", file=sys.stderr)
        cases = parsed.cases
    else:
        cases = builtin_cases()
    by_id = {c.case_id: c for c in cases}
    if args.case_id not in by_id:
        known = ", ".join(list(by_id)[:20])
        raise KeyError(f"no case {args.case_id!r}; known ids include: {known}")
    case = by_id[args.case_id]
    config = engine_config(args)
    method = MeClearMethod(config)
    settings = BenchSettings(engine=config, seed=args.seed)
    report = method.report(
        MethodContext(case=case, evaluate=CountingEvaluator(case.evaluator()), settings=settings)
    )
    print("SIMULATED evidence world (a stand-in for an LLM; not a real-model result)")
    print(f"case {case.case_id} [{case.structure}, {case.fault_type or 'no fault'}]: {case.query}")
    print(f"reference: {case.reference}; verified targets: {', '.join(case.targets) or '(none)'}")
    print(report.to_table())
    out = draw_decision(
        report,
        args.out,
        targets=case.targets,
        title=f"{case.case_id} ({case.structure}) — SIMULATED evidence world",
    )
    print(f"wrote {out}")
    return out


def _handle(args: argparse.Namespace) -> int:
    try:
        run_explain(args)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    return 0
