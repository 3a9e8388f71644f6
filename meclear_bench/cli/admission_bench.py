"""``meclear admission-bench``: ConMem and the admission baselines on labelled cases."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meclear_integrations.admission.cases import load_admission_cases, sample_cases_path
from meclear_integrations.admission.config import AdmissionConfig
from meclear_integrations.admission.model import TextModel
from meclear_integrations.admission.scripted import ScriptedAdmissionModel
from meclear_integrations.cli._openai import chat_openai
from meclear_integrations.cli._progress import Bar
from meclear_integrations.core.errors import ConfigurationError

from ..admission_eval import (
    METHODS,
    AdmissionBenchResult,
    BenchCase,
    MethodName,
    arun_admission_bench,
    build_result,
    pending_decisions,
    render_report,
)
from ..admission_journal import JOURNAL_NAME, AdmissionJournal, JournalHeader
from ..admission_sample import interleaved, stratified_subset
from ..model_spec import _SECRET, json_kwargs, with_token_cap

if TYPE_CHECKING:
    from ..admission_locomo_run import LocomoAdmissionResult

__all__ = ["register", "run", "run_locomo", "run_measured_locomo"]


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
            "--agent-model runs a real chat model through langchain-openai. Every decision "
            "is written to journal.jsonl in --out as it finishes; a rerun with the same --out "
            "skips the journalled decisions, and results.json / report.md are rewritten from "
            "the finished cases after each case, so a stopped run keeps its figures."
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
        "'langchain' extra) instead of the scripted stand-in; it plays every role (probe "
        "writer, responder, blind judge, auditor, the baselines' feature extractor)",
    )
    p.add_argument(
        "--openai-base-url",
        default=None,
        help="OpenAI-compatible endpoint (e.g. a local server)",
    )
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument(
        "--agent-kwargs",
        default=None,
        help="JSON keyword arguments of the chat model, e.g. '{\"max_tokens\": 64}' "
        "(as in meclear bench)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="with --cases (or the sample): measure a deterministic subset of N cases, "
        "shared among the labels in proportion (every label kept) and spread over the reason "
        "types; with --locomo: about N candidates per source (conversation, CLARK-News), "
        "every kind kept",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="case resamples for the 95%% intervals of balanced accuracy, Macro-F1 and "
        "ConMem minus each baseline (0: none)",
    )
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="on a rerun, make the journalled decisions that ended in an error again",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="call no model: rebuild results.json and report.md from the journal in --out",
    )
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
        "--kinds",
        default=None,
        help="with --measured-only: measure only these candidate kinds (comma-separated of "
        "useful,unused (labels from LoCoMo's QA evidence), false_claim,wrong_correction "
        "(written by our builder), clark_stale,clark_current)",
    )
    g.add_argument(
        "--measured-only",
        action="store_true",
        help="decide only the measured split's candidates with --methods, journalled and "
        "resumable like --cases (no cheap-preset choice on dev, no ablations); the report "
        "shows LoCoMo labels, builder-written (ours) and CLARK-News candidates apart",
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


def _agent_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return json_kwargs(getattr(args, "agent_kwargs", None), "--agent-kwargs")


def _openai_model(args: argparse.Namespace) -> TextModel:
    from meclear_integrations.langchain.model import as_text_model

    chat = chat_openai(
        args.openai_model,
        base_url=args.openai_base_url,
        temperature=args.temperature,
        seed=args.seed,
        flag="--openai-model",
        # no SDK retries: every role's calls retry on their own (max_parse_attempts); a
        # format the server refuses (HTTP 500) is a rejection to remember, not to repeat
        extra=with_token_cap({"max_retries": 0, **_agent_kwargs(args)}, args.openai_base_url),
    )
    return as_text_model(chat, structured_output=True)


def _digest(cases: Sequence[BenchCase]) -> str:
    h = hashlib.sha256()
    for c in cases:
        context = c.historical_context
        if not isinstance(context, str):
            context = [t.model_dump() for t in context]
        row = [c.id, c.candidate_memory, context, c.label, c.reason_type]
        h.update(json.dumps(row, sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def _header(args: argparse.Namespace, name: str, every: Sequence[BenchCase], source: str):
    identity: dict[str, Any] = {}
    if args.openai_model:
        identity = {k: v for k, v in _agent_kwargs(args).items() if not _SECRET.search(k)}
        identity["temperature"] = args.temperature
    return JournalHeader(
        model=name,
        seed=args.seed,
        model_kwargs=identity,
        cases_digest=_digest(every),
        cases_file=source,
    )


def _write(out: Path, result: AdmissionBenchResult) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("results.json", result.model_dump_json(indent=2)),
        ("report.md", render_report(result)),
    ):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out / name)  # a reader never sees half a file


def _journalled_run(
    args: argparse.Namespace,
    every: Sequence[BenchCase],
    measured: Sequence[BenchCase],
    methods: list[MethodName],
    source: str,
    limit: int | None,
    selection: str,
) -> AdmissionBenchResult:
    """Run (or resume, or only report) ``measured`` with the journal in ``--out``."""
    if args.openai_model:
        name, scripted = f"openai:{args.openai_model}", False
    elif args.locomo is not None:
        name, scripted = "offline-reader", False
    else:
        name, scripted = "scripted", True
    header = _header(args, name, every, source)
    journal = AdmissionJournal(args.out / JOURNAL_NAME, header)
    config = AdmissionConfig(seed=args.seed, max_concurrency=args.max_concurrency)
    common: dict[str, Any] = {
        "methods": methods,
        "config": config,
        "model_name": name,
        "scripted": scripted,
        "cases_file": source,
        "limit": limit,
        "selection": selection,
    }
    if args.report_only:
        done = {
            key: outcome for key, outcome in _done_outcomes(journal).items() if key[0] in methods
        }
        result = build_result(measured, done, bootstrap=args.bootstrap, **common)
        _write(args.out, result)
        return result
    model = _model(args, scripted)
    todo = pending_decisions(measured, methods, journal, retry_failed=args.retry_failed)
    if todo < len(measured) * len(methods):
        print(
            f"resuming {args.out / JOURNAL_NAME}: {len(measured) * len(methods) - todo} "
            f"decisions journalled, {todo} to make",
            file=sys.stderr,
        )
    enabled = not getattr(args, "no_progress", False)
    with Bar(todo, desc="admission bench", unit="decision", enabled=enabled) as bar:
        try:
            result = asyncio.run(
                arun_admission_bench(
                    measured,
                    model,
                    max_concurrent_cases=args.concurrent_cases,
                    on_case=bar.update,
                    journal=journal,
                    retry_failed=args.retry_failed,
                    bootstrap=args.bootstrap,
                    on_progress=lambda partial: _write(args.out, partial),
                    **common,
                )
            )
        except KeyboardInterrupt:
            done = _done_outcomes(journal)
            _write(args.out, build_result(measured, done, bootstrap=args.bootstrap, **common))
            print(f"interrupted; partial figures in {args.out}/report.md", file=sys.stderr)
            raise SystemExit(130) from None
    _write(args.out, result)
    return result


def _done_outcomes(journal: AdmissionJournal) -> dict:
    from ..admission_eval import CaseOutcome

    return {k: CaseOutcome.model_validate(v) for k, v in journal.done.items()}


def _model(args: argparse.Namespace, scripted: bool) -> TextModel:
    if args.openai_model:
        return _openai_model(args)
    if scripted:
        return ScriptedAdmissionModel()
    from meclear_integrations.admission.reader import AdmissionReader

    return AdmissionReader()


def _methods(args: argparse.Namespace, allowed: Sequence[str]) -> list[Any]:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(allowed))
    if unknown:
        raise SystemExit(f"unknown methods {unknown}; choose from {list(allowed)}")
    return methods


def run(args: argparse.Namespace) -> AdmissionBenchResult:
    """Load the cases, run the methods (journalled, resumable), write results.json and report.md.

    Args:
        args: The parsed ``meclear admission-bench`` flags.

    Returns:
        The benchmark's result (also written to ``--out``).
    """
    methods = _methods(args, METHODS)
    path = args.cases or sample_cases_path()
    parsed = load_admission_cases(path)
    if parsed.errors:
        for line, msg in parsed.errors:
            print(f"{path}:{line}: {msg}", file=sys.stderr)
        raise SystemExit(2)
    limit = getattr(args, "limit", None)
    measured = interleaved(stratified_subset(parsed.cases, limit), lambda c: c.label)
    selection = f"`--limit {limit}`: a label-stratified subset" if limit else ""
    return _journalled_run(args, parsed.cases, measured, methods, str(path), limit, selection)


def run_measured_locomo(args: argparse.Namespace) -> AdmissionBenchResult:
    """``--locomo --measured-only``: the measured split's candidates, journalled and resumable.

    Args:
        args: The parsed ``meclear admission-bench`` flags.

    Returns:
        The result (also written to ``--out``), with the label sources apart.
    """
    from ..admission_locomo import build_locomo_admission, select

    methods = _methods(args, METHODS)
    candidates = build_locomo_admission(
        args.locomo,
        clark=_clark(args),
        faults_per_conversation=args.faults_per_conversation,
        clark_pairs=args.clark_pairs,
    )
    kinds = _kinds(args.kinds)
    pool = [c for c in candidates if kinds is None or c.kind in kinds]
    measured = interleaved(select(pool, args.split, args.limit), lambda c: c.kind)
    source = f"{args.locomo} ({args.split} split)"
    rule = [f"`--limit {args.limit}` per source, every kind kept"] if args.limit else []
    rule += [f"kinds {', '.join(sorted(kinds))}"] if kinds else []
    if kinds is None or kinds & {"false_claim", "wrong_correction"}:
        rule += [f"{args.faults_per_conversation} builder faults of each kind per conversation"]
    rule += [f"{args.clark_pairs} CLARK-News pairs"] if _clark(args) is not None else []
    selection = "; ".join(rule)
    return _journalled_run(args, candidates, measured, methods, source, args.limit, selection)


def _kinds(text: str | None) -> set[str] | None:
    from ..admission_locomo import KINDS

    if not text:
        return None
    kinds = {k.strip() for k in text.split(",") if k.strip()}
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise ConfigurationError(f"--kinds: unknown {unknown}; choose from {list(KINDS)}")
    return kinds


def _clark(args: argparse.Namespace) -> Path | None:
    if args.clark is None and (args.locomo.parent / "clark_news" / "questions.csv").is_file():
        return args.locomo.parent / "clark_news"  # the shared data layout
    return args.clark


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
    candidates = build_locomo_admission(
        args.locomo,
        clark=_clark(args),
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
    if args.locomo is not None and not args.measured_only:
        return _handle_locomo(args)
    try:
        result = run(args) if args.locomo is None else run_measured_locomo(args)
    except ConfigurationError as exc:  # bad --agent-kwargs / --limit, a foreign journal
        print(f"error: {exc}", file=sys.stderr)
        return 2
    label = "SCRIPTED stand-in, not an LLM" if result.scripted else result.model
    done = "" if result.complete else f", PARTIAL: {result.n_finished} finished"
    print(f"admission bench on {result.n_cases} cases ({label}{done})")
    for m in result.methods:
        k = m.metrics
        print(
            f"  {m.method:<11} acc {100 * k.accuracy:5.1f}%  bal.acc "
            f"{100 * k.balanced_accuracy:5.1f}%  macro-F1 {100 * k.macro_f1:5.1f}%  "
            f"errors {k.errors}  calls/case {m.calls_per_case:.2f}"
        )
    print(f"wrote {args.out / 'results.json'} and {args.out / 'report.md'}")
    return 0
