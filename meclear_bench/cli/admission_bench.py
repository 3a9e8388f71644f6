"""``meclear admission-bench``: ConMem and the admission baselines on labelled cases."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from meclear_integrations.admission.cases import load_admission_cases, sample_cases_path
from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.model import TextModel
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli._openai import chat_openai
from meclear_integrations.cli._progress import Bar

from ..admission_eval import METHODS, AdmissionBenchResult, render_report, run_admission_bench

if TYPE_CHECKING:
    from ..admission_locomo_run import LocomoAdmissionResult

__all__ = ["register", "run", "run_locomo"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear admission-bench`` subcommand (ConMem's gate against the baselines).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "admission-bench",
        help="ConMem admission gate vs A-MAC / A-MEM / MemoryBank on labelled cases",
        description=(
            "Runs ConMem (counterfactual admission) and the paper's admission baselines on "
            "JSONL cases {id, candidate_memory, historical_context, label, reason_type} and "
            "writes results.json and report.md. Offline by default: the model is a SCRIPTED "
            "keyword-cue stand-in (not an LLM) and its figures are labelled as such. "
            "--openai-model runs a real chat model through langchain-openai."
        ),
    )
    p.add_argument(
        "--cases",
        type=Path,
        default=None,
        help="JSONL case file (default: the shipped 32-case sample)",
    )
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated subset of {','.join(METHODS)}",
    )
    p.add_argument(
        "--openai-model",
        default=None,
        help="use this OpenAI chat model (needs OPENAI_API_KEY and the "
        "'langchain' extra) instead of the scripted stand-in",
    )
    p.add_argument(
        "--openai-base-url", default=None, help="OpenAI-compatible endpoint (e.g. a local server)"
    )
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=42, help="A/B order seed (paper: 42)")
    p.add_argument("--max-concurrency", type=int, default=8, help="model calls in flight per case")
    p.add_argument("--concurrent-cases", type=int, default=4, help="cases in flight at once")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = p.add_argument_group(
        "LoCoMo admission benchmark",
        "labels from LoCoMo's QA evidence plus fault-builder and CLARK-News misaligned "
        "candidates; answered by the OFFLINE TEXT-READING stand-in unless a chat model is given",
    )
    g.add_argument(
        "--locomo",
        type=Path,
        default=None,
        help="LoCoMo directory or locomo10.json: run the LoCoMo admission benchmark "
        "instead of --cases",
    )
    g.add_argument(
        "--clark",
        type=Path,
        default=None,
        help="CLARK-News folder (questions.csv) for stale/current world-fact candidates "
        "(default: a clark_news folder next to the LoCoMo one, if present)",
    )
    g.add_argument(
        "--split",
        choices=("dev", "test", "all"),
        default="test",
        help="split measured (dev: conversations 26, 30, 41; test: the other seven)",
    )
    g.add_argument(
        "--limit",
        type=int,
        default=None,
        help="about this many candidates per source (conversation, CLARK-News), every kind kept",
    )
    g.add_argument(
        "--dev-limit",
        type=int,
        default=None,
        help="about this many dev candidates per source for choosing the cheap preset",
    )
    g.add_argument(
        "--no-presets", action="store_true", help="skip choosing the cheap preset on dev"
    )
    g.add_argument(
        "--faults-per-conversation",
        type=int,
        default=10,
        help="fault-builder candidates of each kind per conversation",
    )
    g.add_argument("--clark-pairs", type=int, default=100, help="CLARK-News (stale, current) pairs")
    p.set_defaults(handler=_handle)


def _openai_model(args: argparse.Namespace) -> TextModel:
    from meclear_integrations.langchain.model import as_text_model

    chat = chat_openai(
        args.openai_model,
        base_url=args.openai_base_url,
        temperature=args.temperature,
        seed=args.seed,
        flag="--openai-model",
    )
    return as_text_model(chat, structured_output=True)


def run(args: argparse.Namespace) -> AdmissionBenchResult:
    """Load the cases, run the methods, write results.json and report.md.

    Args:
        args: The parsed ``meclear admission-bench`` flags.

    Returns:
        The benchmark's result (also written to ``--out``).
    """
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise SystemExit(f"unknown methods {unknown}; choose from {list(METHODS)}")
    path = args.cases or sample_cases_path()
    parsed = load_admission_cases(path)
    if parsed.errors:
        for line, msg in parsed.errors:
            print(f"{path}:{line}: {msg}", file=sys.stderr)
        raise SystemExit(2)
    if args.openai_model:
        model, name, scripted = _openai_model(args), f"openai:{args.openai_model}", False
    else:
        model, name, scripted = ScriptedAdmissionModel(), "scripted", True
    total = len(parsed.cases) * len(methods)
    enabled = not getattr(args, "no_progress", False)
    with Bar(total, desc="admission bench", unit="decision", enabled=enabled) as bar:
        result = run_admission_bench(
            parsed.cases,
            model,
            methods=methods,
            config=AdmissionConfig(seed=args.seed, max_concurrency=args.max_concurrency),
            max_concurrent_cases=args.concurrent_cases,
            model_name=name,
            scripted=scripted,
            cases_file=str(path),
            on_case=bar.update,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    (args.out / "report.md").write_text(render_report(result), encoding="utf-8")
    return result


def run_locomo(args: argparse.Namespace) -> LocomoAdmissionResult:
    """Build the LoCoMo admission candidates, run everything, write the output folder.

    Args:
        args: The parsed ``meclear admission-bench --locomo`` flags.

    Returns:
        The result (also written to ``--out``: results.json, report.md, a figure).
    """
    import asyncio

    from meclear_integrations.admission.reader import AdmissionReader

    from ..admission_locomo import build_locomo_admission, select
    from ..admission_locomo_report import plot_result, render_locomo_report
    from ..admission_locomo_run import BASELINES, PRESETS, arun_locomo_admission

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - {"conmem", *BASELINES})
    if unknown:
        raise SystemExit(f"unknown methods {unknown}; choose from conmem,{','.join(BASELINES)}")
    clark = args.clark
    if clark is None and (args.locomo.parent / "clark_news" / "questions.csv").is_file():
        clark = args.locomo.parent / "clark_news"  # the shared data layout
    candidates = build_locomo_admission(
        args.locomo,
        clark=clark,
        faults_per_conversation=args.faults_per_conversation,
        clark_pairs=args.clark_pairs,
    )
    measured = select(candidates, args.split, args.limit)
    dev = (
        []
        if args.no_presets or "conmem" not in methods
        else select(candidates, "dev", args.dev_limit)
    )
    if args.openai_model:
        model, name, offline = _openai_model(args), f"openai:{args.openai_model}", False
    else:
        model, name, offline = AdmissionReader(), "offline-reader", True
    total = len(measured) * len(methods) + len(dev) * len(PRESETS) + (len(measured) if dev else 0)
    enabled = not getattr(args, "no_progress", False)
    with Bar(total, desc="admission bench", unit="decision", enabled=enabled) as bar:
        result = asyncio.run(
            arun_locomo_admission(
                measured,
                model,
                split=args.split,
                dev=dev,
                methods=methods,
                config=AdmissionConfig(seed=args.seed, max_concurrency=args.max_concurrency),
                concurrency=args.concurrent_cases,
                model_name=name,
                offline_reader=offline,
                on_done=bar.update,
            )
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    (args.out / "report.md").write_text(render_locomo_report(result), encoding="utf-8")
    plot_result(result, args.out / "admission_locomo.png")
    return result


def _handle_locomo(args: argparse.Namespace) -> int:
    result = run_locomo(args)
    label = "OFFLINE TEXT-READER, not an LLM" if result.offline_reader else result.model
    print(f"LoCoMo admission bench, {result.split} split ({label}): {result.counts}")
    ablations = {m.method for m in result.ablations}
    for m in [*result.methods, *result.ablations]:
        calls = "re-decided" if m.method in ablations else f"{m.calls_per_decision:.2f}"
        print(
            f"  {m.method:<26} bal.acc {100 * m.balanced_accuracy:5.1f}%  macro-F1 "
            f"{100 * m.macro_f1:5.1f}%  Store P/R {100 * m.precision['store']:5.1f}/"
            f"{100 * m.recall['store']:5.1f}%  DNS recall (misaligned) "
            f"{100 * (m.misaligned_do_not_store_recall or 0):5.1f}%  calls/decision {calls}"
        )
    if result.cheap_test is not None:
        t = result.cheap_test
        print(
            f"  cheap preset {t.name}: macro-F1 {100 * t.score.macro_f1:.1f}% "
            f"({100 * t.macro_f1_delta:+.1f} pp), calls/decision {t.score.calls_per_decision:.2f}"
        )
    print(f"wrote {args.out}/results.json, report.md, admission_locomo.png")
    return 0


def _handle(args: argparse.Namespace) -> int:
    if args.locomo is not None:
        return _handle_locomo(args)
    result = run(args)
    label = "SCRIPTED stand-in, not an LLM" if result.scripted else result.model
    print(f"admission bench on {result.n_cases} cases ({label})")
    for m in result.methods:
        k = m.metrics
        print(
            f"  {m.method:<11} acc {100 * k.accuracy:5.1f}%  bal.acc "
            f"{100 * k.balanced_accuracy:5.1f}%  macro-F1 {100 * k.macro_f1:5.1f}%  "
            f"errors {k.errors}  calls/case {m.calls_per_case:.2f}"
        )
    print(f"wrote {args.out / 'results.json'} and {args.out / 'report.md'}")
    return 0
