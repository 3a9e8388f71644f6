"""``meclear ledger``: review, inspect, restore and give feedback on the harm ledger.

The ledger is ``--ledger URL_OR_PATH`` (else ``MECLEAR_LEDGER_URL``, else
``./meclear-ledger.db``). Every subcommand only reads or appends to the ledger; ``review``
writes proposals for a person. Only ``apply`` changes a memory store, for the reviews a
person accepted (``accept``), as soft deletes a ``restore --store`` undoes
(:mod:`.ledger_writeback`).

``review`` shows each proposal with its memory's text (redacted) and the questions it was
proven harmful on (:mod:`.ledger_review`; texts exist when the ledger keeps them). Every id
the commands print in short (8 characters) is accepted back by ``show``, ``feedback`` and
``replay``. ``replay`` replays pending negative feedback with a model given on the command
line (the same model flags as ``meclear bench``), then re-verifies challenged settlements
(``ledger.reverify``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..core.errors import ConfigurationError
from ._safe import framed_lines, safe_text
from .ledger_writeback import add_store_flags, register_writeback, restore_from_store

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear ledger`` subcommand (review, show, restore, feedback).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "ledger",
        help="review, show, restore and give feedback on the harm ledger",
        description=(
            "The harm ledger records every clearance decision (SQLite file or PostgreSQL). "
            "Review writes proposals for a person; accept records a person's decision; only "
            "apply changes a store, as soft deletes kept in tombstones (restore undoes them)."
        ),
    )
    p.add_argument(
        "--ledger",
        default=None,
        help="SQLAlchemy URL or SQLite path (default: $MECLEAR_LEDGER_URL or ./meclear-ledger.db)",
    )
    p.add_argument("--namespace", default="default", help="ledger namespace (default: default)")
    commands = p.add_subparsers(dest="ledger_command", metavar="SUBCOMMAND", required=True)

    review = commands.add_parser(
        "review",
        help="memories harmful across at least N distinct queries, ranked (proposals)",
        description=(
            "Lists memories that verified clearances removed for at least --min-queries "
            "distinct queries with consistent evidence, ranked by the Wilson lower "
            "confidence bound of that consistency. Proposals only: nothing is deleted."
        ),
    )
    review.add_argument("--min-queries", type=int, default=2, help="N distinct queries (2)")
    review.add_argument("--min-consistency", type=float, default=0.8, help="h/(h+b) (0.8)")
    review.add_argument("--confidence", type=float, default=0.95, help="bound level (0.95)")
    review.add_argument("--limit", type=int, default=None, help="at most this many proposals")
    review.add_argument(
        "--format",
        choices=["table", "json", "csv"],
        default="table",
        help="table: one block per proposal with its text and questions (default)",
    )
    review.add_argument(
        "--carrier-min-queries",
        type=int,
        default=1,
        help="also list carriers of verified harms on at least N queries (1; 0: none)",
    )
    review.add_argument(
        "--single-query",
        choices=["show", "hide"],
        default="show",
        help="show (default) the memories verified harmful on fewer than --min-queries "
        "questions as their own tier (the first verified clearance), not proposed",
    )
    review.add_argument(
        "--texts",
        type=Path,
        default=None,
        help="JSON file {memory id: text} of your store (shown when it still has the "
        "evidence's content hash)",
    )
    review.add_argument(
        "--get-documents",
        default=None,
        metavar="MODULE:FUNCTION",
        help="your store's reader: FUNCTION(ids) -> {id: text} or documents/nodes "
        "(imported from the current folder first, e.g. myapp.store:get_by_ids)",
    )
    review.add_argument("--out", type=Path, default=None, help="write to a file")
    review.set_defaults(handler=_guarded(_review))

    show = commands.add_parser("show", help="the history of one memory")
    show.add_argument("memory_id")
    show.add_argument("--format", choices=["table", "json"], default="table")
    show.set_defaults(handler=_guarded(_show))

    restore = commands.add_parser(
        "restore",
        help="mark a memory as wrongly suppressed; with --store, put a retired one back",
    )
    restore.add_argument("memory_id")
    restore.add_argument("--reason", default=None)
    restore.add_argument("--actor", default=None, help="who restores it")
    add_store_flags(restore, required=False)  # with --store: back from its tombstone
    restore.add_argument("--dry-run", action="store_true", help="with --store: only report")
    restore.set_defaults(handler=_guarded(_restore))
    register_writeback(commands, _guarded, _open)  # accept, reject, apply, tombstones

    feedback = commands.add_parser(
        "feedback", help="record whether a query's answer was correct (by run, trace or query id)"
    )
    feedback.add_argument("run_or_query_id")
    verdict = feedback.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--correct", dest="correct", action="store_true")
    verdict.add_argument("--incorrect", dest="correct", action="store_false")
    feedback.add_argument("--correction", default=None, help="the right answer")
    feedback.add_argument(
        "--memory-id", action="append", default=[], help="a memory the feedback names (repeat)"
    )
    feedback.add_argument("--comment", default=None, help="why (kept with the feedback)")
    feedback.add_argument(
        "--authority",
        choices=["end_user", "reviewer", "operator"],
        default="end_user",
        help="who gives it: an end user's replay is history only; a reviewer's or an "
        "operator's acts (shares, settles, restores) (end_user)",
    )
    feedback.add_argument("--by", default=None, help="who gives it (kept with the feedback)")
    feedback.set_defaults(handler=_guarded(_feedback))

    pending = commands.add_parser("pending", help="negative feedback waiting for a replay")
    pending.set_defaults(handler=_guarded(_pending))

    replay = commands.add_parser(
        "replay",
        help="replay pending negative feedback with a model (the correction as reference)",
        description=(
            "Reruns clearance on the recorded context of each negative feedback with its "
            "correction as the judge's reference, verified, and records the replay; memories "
            "the original run cleared that the verified replay keeps are restored. Without "
            "feedback ids it then re-verifies every challenged settlement (a settled harm the "
            "live judge did not confirm) against its own evidence, upholding or lifting it. Needs "
            "the ledger's texts (kept unless store_text=False) or --texts, and the 'langchain' "
            "extra."
        ),
    )
    replay.add_argument(
        "feedback_ids", nargs="*", help="feedback ids or printed prefixes (default: all pending)"
    )
    replay.add_argument("--query", default=None, help="the question, when the ledger has no text")
    replay.add_argument(
        "--texts",
        type=Path,
        default=None,
        help="JSON file {memory id: text} of your store (checked against the recorded hashes)",
    )
    replay.add_argument(
        "--reverify-quiet",
        type=float,
        default=None,
        metavar="SECONDS",
        help="after an upheld settlement, challenges of the same context within this many "
        "seconds are covered by it (default: the ledger's, 86400; 0: re-verify every pass)",
    )
    add_model_flags(replay)
    replay.set_defaults(handler=_guarded(_replay))

    export = commands.add_parser(
        "langsmith",
        help="write per-memory scores (and review proposals) as LangSmith feedback",
        description=(
            "Writes each recorded clearance's per-memory harm scores and verdicts as feedback "
            "on its traced LangSmith run (meclear.memory_harm, meclear.clearance) and, with "
            "--proposals, the review proposals on the runs holding their evidence "
            "(meclear.review_proposal). LangSmith from the environment: LANGSMITH_API_KEY, "
            "LANGSMITH_ENDPOINT. Memory texts are never sent."
        ),
    )
    export.add_argument(
        "run_ids", nargs="*", help="ledger run, tracing run or query ids (or printed prefixes)"
    )
    export.add_argument("--latest", type=int, default=None, help="the N latest traced runs")
    export.add_argument("--proposals", action="store_true", help="also the review proposals")
    export.add_argument("--min-queries", type=int, default=2, help="proposals: N queries (2)")
    export.add_argument(
        "--project-id", default=None, help="the LangSmith project (session) id of the runs"
    )
    export.set_defaults(handler=_guarded(_langsmith))

    stats = commands.add_parser("stats", help="runs per mode, model calls, feedback")
    stats.set_defaults(handler=_guarded(_stats))

    migrate = commands.add_parser("migrate", help="create or upgrade the ledger's schema")
    migrate.set_defaults(handler=_guarded(_migrate))


def add_model_flags(p: argparse.ArgumentParser) -> None:
    """The model flags of ``meclear ledger replay`` (named as in ``meclear bench``).

    Args:
        p: The subcommand's parser.
    """
    g = p.add_argument_group("models (any OpenAI-compatible endpoint or LangChain model)")
    g.add_argument(
        "--agent-model",
        required=True,
        help="task agent: an OpenAI-compatible model name or module:Class of a chat model",
    )
    g.add_argument("--agent-kwargs", default=None, help="JSON keyword arguments of the agent")
    g.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint of the models")
    g.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key"
    )
    g.add_argument("--judge-model", default=None, help="judge model (default: the agent's)")
    g.add_argument("--judge-base-url", default=None, help="endpoint of the judge model")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per request (120)")


def _open(args: argparse.Namespace, *, create: bool = False) -> Any:
    from ..ledger import HarmLedger
    from ..ledger.database import ledger_url

    url = ledger_url(args.ledger)
    if not create and url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            raise ConfigurationError(
                f"no ledger at {path} (pass --ledger or set MECLEAR_LEDGER_URL)"
            )
    return HarmLedger(url, namespace=args.namespace, create=create)


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        print(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    text = safe_text(text)  # the file may be printed to a terminal later
    out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    print(f"wrote {out}")


def _store_reader(args: argparse.Namespace) -> Any:
    """The ``get_documents`` hook of ``--texts`` / ``--get-documents`` (None: neither)."""
    if args.texts is not None:
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        if not isinstance(texts, dict):
            raise ConfigurationError(f"{args.texts}: expected a JSON object {{id: text}}")
        return lambda ids: {i: texts[i] for i in ids if i in texts}
    if args.get_documents is None:
        return None
    from .worker import import_target

    reader = import_target(args.get_documents, "--get-documents")
    if not callable(reader):
        raise ConfigurationError(f"--get-documents {args.get_documents} is not callable")
    return reader


def _review(args: argparse.Namespace) -> int:
    from ..ledger.review import proposals_json
    from .ledger_review import carrier_entries, carrier_lines, entries_csv, review_entries

    get_documents = _store_reader(args)
    with _open(args) as ledger:
        proposals = ledger.review(
            min_queries=args.min_queries,
            min_consistency=args.min_consistency,
            confidence=args.confidence,
            limit=args.limit,
        )
        entries = review_entries(ledger, proposals, get_documents=get_documents)
        single = (
            review_entries(
                ledger,
                ledger.single_query_review(
                    min_queries=args.min_queries,
                    min_consistency=args.min_consistency,
                    confidence=args.confidence,
                )[: args.limit],
                get_documents=get_documents,
            )
            if args.single_query == "show"
            else []
        )
        carriers = (
            carrier_entries(
                ledger,
                ledger.carrier_review(min_queries=args.carrier_min_queries),
                get_documents=get_documents,
            )
            if args.carrier_min_queries > 0
            else []
        )
        framed = ledger.review_interactions(
            min_queries=args.min_queries,
            min_consistency=args.min_consistency,
            confidence=args.confidence,
        )
    if args.format == "json":
        text = proposals_json(
            proposals,
            namespace=args.namespace,
            min_queries=args.min_queries,
            min_consistency=args.min_consistency,
            confidence=args.confidence,
            set_aside=[f.model_dump(mode="json") for f in framed],
        )
        document = json.loads(text)
        for item, entry in zip(document["proposals"], entries, strict=True):
            item.update(_texts_of(entry))
        document["single_query"] = [{**e.proposal, **_texts_of(e)} for e in single]
        document["carriers"] = [{**c.proposal, **_texts_of(c)} for c in carriers]
        text = json.dumps(document, indent=2, default=str)
    elif args.format == "csv":
        text = entries_csv([*entries, *single])  # the proposals' tiers (carriers: table, json)
    else:
        text = _proposal_table(entries, args.min_queries) + framed_lines(framed)
        if args.single_query == "show":
            text += "\n\n" + _single_query_table(single, args.min_queries)
        if args.carrier_min_queries > 0:
            text += "\n\n" + carrier_lines(carriers)
    _emit(text, args.out)
    return 0


def _texts_of(entry: Any) -> dict[str, Any]:
    return {
        "memory_text": entry.memory_text,
        "text_source": entry.text_source,
        "text_note": entry.text_note,
        "questions": entry.questions,
    }


def _entry_lines(entry: Any, label: str) -> list[str]:
    from .ledger_review import text_line

    p = entry.proposal
    psi = f"{p['mean_shapley']:+.3f}" if p["mean_shapley"] is not None else "-"
    lines = [
        f"{label}  memory {_line(p['memory_id'])}  (hash {p['content_hash'][:12]})",
        f"    harmful on {p['harmful_queries']} queries, helpful on "
        f"{p['beneficial_queries']}; bound {p['lower_bound']:.3f}; mean psi {psi}",
        text_line(entry, 300),
        "    proven harmful on:",
    ]
    for query_id, question in entry.questions.items():
        shown = _clip(question, 160) if question is not None else "(question text not kept)"
        lines.append(f"      {query_id[:8]}  {shown}")
    runs = ", ".join(r[:8] for r in p["run_ids"]) or "-"
    lines.append(f"    evidence runs: {runs}  (meclear ledger show MEMORY_ID for each)")
    return [*lines, ""]


def _single_query_table(entries: list[Any], n: int) -> str:
    if not entries:
        return f"single-query clearances: none (every verified harm is on {n}+ questions)"
    lines = [
        f"single-query clearances: verified harmful on fewer than {n} questions, withheld "
        "there by the ledger; not proposed for deletion until another question proves it"
    ]
    for entry in entries:
        lines.extend(_entry_lines(entry, f"~{entry.proposal['rank']}"))
    return "\n".join(lines).rstrip()


def _proposal_table(entries: list[Any], n: int) -> str:
    if not entries:
        return f"no memory was verified harmful for at least {n} distinct queries"
    lines: list[str] = []
    for entry in entries:
        lines.extend(_entry_lines(entry, f"#{entry.proposal['rank']}"))
    lines.append(
        "proposals only: nothing was deleted; act on them in your store after review "
        "(meclear ledger show MEMORY_ID for the history, restore to keep one)"
    )
    return "\n".join(lines)


def _line(text: str) -> str:
    return text.replace("\n", " ").replace("\r", " ")


def _clip(text: str, width: int) -> str:
    text = _line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _show(args: argparse.Namespace) -> int:
    with _open(args) as ledger:
        history = ledger.history(args.memory_id)
    if args.format == "json":
        print(history.model_dump_json(indent=2))
        return 0
    if not (history.observations or history.feedback or history.events):
        print(f"memory {args.memory_id!r}: nothing recorded in namespace {args.namespace!r}")
        return 1
    print(f"memory {args.memory_id!r} (namespace {args.namespace!r})")
    rows: list[tuple[Any, str]] = []
    for o in history.observations:
        m = o.memory
        psi = f"psi {m.shapley:+.3f}" if m.shapley is not None else "psi -"
        flags = ("CLEARED " if m.cleared else "") + ("harmful " if m.harmful else "")
        rows.append(
            (
                o.created_at,
                f"{o.mode:<15} query {o.query_id[:8]} {psi} {flags}"
                f"recovered={o.recovered} signal={o.success_signal} run {o.run_id[:8]}",
            )
        )
    for f in history.feedback:
        verdict = "correct" if f.correct else "INCORRECT"
        named = " names it" if args.memory_id in f.memory_ids else ""
        rows.append((f.created_at, f"feedback {verdict}{named} on run {f.run_id[:8]}"))
    for e in history.events:
        rows.append((e.created_at, f"{e.event.upper()} by {e.actor or '-'}: {e.reason or ''}"))
    for at, text in sorted(rows, key=lambda r: r[0]):
        print(f"  {at.isoformat(timespec='seconds')}  {text}")
    print(f"restored now: {'yes' if history.restored else 'no'}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    if args.store is not None:
        return restore_from_store(args, _open)
    with _open(args) as ledger:
        event = ledger.restore(args.memory_id, reason=args.reason, actor=args.actor)
    print(f"restored {event.memory_id!r} at {event.created_at.isoformat(timespec='seconds')}")
    return 0


def _feedback(args: argparse.Namespace) -> int:
    from .ledger_review import resolve_run_ref

    with _open(args) as ledger:
        record = ledger.feedback(
            resolve_run_ref(ledger, args.run_or_query_id),
            correct=args.correct,
            correction=args.correction,
            memory_ids=args.memory_id,
            source="cli",
            source_id=args.by,
            comment=args.comment,
            authority=args.authority,
        )
    print(json.dumps(record.model_dump(mode="json"), indent=2))
    return 0


def _pending(args: argparse.Namespace) -> int:
    with _open(args) as ledger:
        pending = ledger.pending_replays()
    for f in pending:
        named = f"  names {', '.join(f.memory_ids)}" if f.memory_ids else ""
        print(f"{f.feedback_id}  run {f.run_id[:8]}  query {f.query_id[:8]}{named}")
    print(f"{len(pending)} feedback waiting for a replay (meclear ledger replay ID...)")
    return 0


def _replay(args: argparse.Namespace) -> int:
    from ..ledger import ReplayError, replay_feedback
    from .ledger_replay import replay_models
    from .ledger_review import resolve_feedback_ref

    texts = None
    if args.texts is not None:
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        if not isinstance(texts, dict):
            raise ConfigurationError(f"{args.texts}: expected a JSON object {{id: text}}")
    evaluator_for, models = replay_models(args)
    failed = 0
    with _open(args) as ledger:
        if args.feedback_ids:
            todo: list[Any] = [resolve_feedback_ref(ledger, f) for f in args.feedback_ids]
        else:
            todo = list(ledger.pending_replays())
        resolve = (
            (lambda ids: {i: texts[i] for i in ids if i in texts}) if texts is not None else None
        )
        if not todo:
            print("no feedback waiting for a replay")
        for item in todo:
            fid = item if isinstance(item, str) else item.feedback_id
            try:
                result = replay_feedback(
                    ledger,
                    item,
                    evaluator_for=evaluator_for,
                    query=args.query,
                    resolve=resolve,
                    **models,
                )
            except ReplayError as exc:
                failed += 1
                print(f"{fid[:8]}  not replayed: {exc}")
                continue
            report = result.report
            cleared = ", ".join(report.cleared_ids) or "nothing"
            print(
                f"{fid[:8]}  replay run {result.run.run_id[:8]}: {report.status}, "
                f"recovered={report.recovered}; cleared {cleared}; "
                f"restored {', '.join(result.restored) or 'nothing'}"
            )
        if not args.feedback_ids:  # the routine pass: challenged settlements too
            failed += _reverify(ledger, evaluator_for, resolve, args.reverify_quiet)
    return 2 if failed else 0


def _reverify(ledger: Any, evaluator_for: Any, resolve: Any, quiet: float | None = None) -> int:
    """Re-verify the pending challenged settlements (``ledger.reverify``); the failures."""
    from ..ledger.reverify import reverify_pending

    failed = 0
    found = reverify_pending(
        ledger, evaluator_for=evaluator_for, resolve=resolve, quiet_seconds=quiet
    )
    for verdict in found:
        if isinstance(verdict, Exception):
            failed += 1
            print(f"challenge not re-verified: {verdict}")
            continue
        upheld = ", ".join(verdict.upheld) or "nothing"
        lifted = ", ".join(verdict.lifted) or "nothing"
        print(f"challenge {verdict.challenge.run_id[:8]}: upheld {upheld}; lifted {lifted}")
    return failed


def _langsmith(args: argparse.Namespace) -> int:
    from ..exports.langsmith import langsmith_proposals, langsmith_scores
    from .ledger_review import resolve_run_ref

    if not (args.run_ids or args.latest or args.proposals):
        raise ConfigurationError("name runs, or give --latest N or --proposals")
    project = {"session_id": args.project_id} if args.project_id else {}
    with _open(args) as ledger:
        runs = [ledger.find_run(resolve_run_ref(ledger, ref)) for ref in args.run_ids]
        if args.latest:
            traced = [r for r in ledger.runs(limit=10 * args.latest) if r.trace_run_id]
            runs += traced[: args.latest]
        written = 0
        for run in runs:
            if not run.trace_run_id or run.trace_system not in (None, "langchain"):
                print(f"run {run.run_id[:8]}: no LangSmith run recorded (skipped)")
                continue
            written += len(langsmith_scores(run, **project))
            print(f"run {run.run_id[:8]} -> LangSmith run {run.trace_run_id}")
        if args.proposals:
            proposals = ledger.review(min_queries=args.min_queries)
            sent = langsmith_proposals(ledger, proposals, **project)
            written += len(sent)
            print(f"{len(proposals)} proposals -> {len(sent)} feedback on their runs")
    print(f"{written} feedback written")
    return 0


def _stats(args: argparse.Namespace) -> int:
    with _open(args) as ledger:
        print(json.dumps(ledger.stats(), indent=2))
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from ..ledger.database import display_url
    from ..ledger.migrations import SCHEMA_VERSION

    with _open(args, create=True) as ledger:
        print(f"{display_url(ledger.url)}: schema version {SCHEMA_VERSION}")
    return 0


def _guarded(handler: Any) -> Any:
    """Lookup, input and missing-extra errors become a message and exit status 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            from ..ledger import LedgerLookupError, SchemaVersionError
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        try:
            return int(handler(args) or 0)
        except (LedgerLookupError, SchemaVersionError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    return run
