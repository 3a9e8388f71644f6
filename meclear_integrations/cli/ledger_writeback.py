"""``meclear ledger accept / reject / decisions-from / apply / tombstones``, ``restore --store``.

A person accepts (or rejects) a review proposal; ``apply`` retires the accepted memories
from the store as soft deletes (``meclear_integrations.writeback``), ``--dry-run`` first
lists what would be retired; ``restore MEMORY_ID --store SPEC`` puts a retired memory back
from its tombstone; ``tombstones`` prints the audit trail; ``decisions-from`` records
reviewers' marks made in LangSmith, Phoenix or Langfuse (``writeback.annotations``).

The store is named by ``--store module:attribute`` (or ``path/to/file.py:attribute``): a
LangChain ``VectorStore``, a LangGraph ``BaseStore``, a LlamaIndex ``VectorStoreIndex``, a
``StoreAdapter``, or a function of no argument returning one. A LangGraph store also needs
``--store-namespace '["users", "ana"]'`` (a JSON list: labels may hold any character).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..core.errors import ConfigurationError

__all__ = ["add_store_flags", "register_writeback", "restore_from_store"]


def add_store_flags(p: argparse.ArgumentParser, *, required: bool) -> None:
    """The ``--store`` and ``--store-namespace`` flags.

    Args:
        p: The subcommand's parser.
        required: Whether ``--store`` is required.
    """
    p.add_argument(
        "--store",
        required=required,
        default=None,
        help="module:attribute (or file.py:attribute) of your store, adapter or factory",
    )
    p.add_argument(
        "--store-namespace",
        default=None,
        help='a LangGraph store\'s namespace as a JSON list, e.g. \'["users", "ana"]\'',
    )


def register_writeback(
    commands: argparse._SubParsersAction, guarded: Any, open_ledger: Any
) -> None:
    """Add ``accept``, ``reject``, ``apply`` and ``tombstones`` to ``meclear ledger``.

    Args:
        commands: The ``meclear ledger`` subparsers.
        guarded: Wraps a handler so that lookup and input errors exit 2 with one line.
        open_ledger: Opens the ledger the parsed ``--ledger`` / ``--namespace`` name.
    """
    for name, verb in (("accept", "accepts"), ("reject", "rejects")):
        p = commands.add_parser(
            name,
            help=f"record that a person {verb} a memory's review proposal",
            description=(
                f"Records that a person {verb} the review proposal of each MEMORY_ID, with "
                "the proposal's evidence (content hash, runs, questions). Nothing changes in "
                "the store: `meclear ledger apply` retires the accepted ones."
            ),
        )
        p.add_argument("memory_ids", nargs="+", metavar="MEMORY_ID")
        p.add_argument("--actor", required=True, help="who decides")
        p.add_argument("--reason", default=None)
        if name == "accept":
            p.add_argument("--min-queries", type=int, default=2, help="as review (2)")
            p.add_argument(
                "--without-proposal",
                action="store_true",
                help="accept a memory review does not propose (no content-hash check)",
            )
        p.set_defaults(
            handler=guarded(_accept if name == "accept" else _reject), open_ledger=open_ledger
        )

    apply = commands.add_parser(
        "apply",
        help="retire the accepted memories from your store (soft delete, reversible)",
        description=(
            "Applies the pending accepted reviews to the store: each memory is kept whole in "
            "a tombstone in the ledger (who, when, why, the evidence runs), then removed "
            "from the store. A memory already retired, already deleted upstream or edited "
            "since the review is reported and left alone. Undo with `meclear ledger "
            "restore MEMORY_ID --store ...`."
        ),
    )
    apply.add_argument("memory_ids", nargs="*", metavar="MEMORY_ID", help="default: all pending")
    add_store_flags(apply, required=True)
    apply.add_argument("--actor", default=None, help="who applies them")
    apply.add_argument("--dry-run", action="store_true", help="list what would be retired")
    apply.set_defaults(handler=guarded(_apply), open_ledger=open_ledger)

    marks = commands.add_parser(
        "decisions-from",
        help="record reviewers' accept / reject marks from LangSmith, Phoenix or Langfuse",
        description=(
            "Reads reviewers' marks (LangSmith feedback meclear.review_decision, Phoenix span "
            "annotations 'meclear review decision', Langfuse scores meclear_review_decision) "
            "and records each once as a decision on a current proposal; marks that name no "
            "proposed memory are listed as skipped. Clients from the environment."
        ),
    )
    marks.add_argument("tool", choices=["langsmith", "phoenix", "langfuse"])
    marks.add_argument("--min-queries", type=int, default=2, help="as review (2)")
    marks.add_argument(
        "--span",
        action="append",
        default=[],
        metavar="SPAN_ID=RUN_ID",
        help="phoenix: a span and the ledger run it traced (repeat)",
    )
    marks.add_argument("--project", default=None, help="phoenix: the project")
    marks.set_defaults(handler=guarded(_decisions_from), open_ledger=open_ledger)

    trail = commands.add_parser("tombstones", help="the audit trail of reviews written back")
    trail.add_argument("memory_id", nargs="?", default=None)
    trail.add_argument("--format", choices=["table", "json"], default="table")
    trail.set_defaults(handler=guarded(_tombstones), open_ledger=open_ledger)


def _open(args: argparse.Namespace) -> Any:
    return args.open_ledger(args)


def _import_target(spec: str) -> Any:
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"--store {spec!r}: expected module:attribute")
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            raise ConfigurationError(f"--store {spec!r}: no file {path}")
        loaded = importlib.util.spec_from_file_location(path.stem, path)
        if loaded is None or loaded.loader is None:
            raise ConfigurationError(f"--store {spec!r}: cannot load {path}")
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise ConfigurationError(f"--store {spec!r}: no module {exc.name!r}") from exc
    try:
        return getattr(module, attribute)
    except AttributeError as exc:
        raise ConfigurationError(f"--store {spec!r}: {module_name} has no {attribute!r}") from exc


def _store(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    target = _import_target(args.store)
    if callable(target) and not hasattr(target, "fetch") and not _is_store(target):
        target = target()
    options: dict[str, Any] = {}
    if args.store_namespace is not None:
        try:
            namespace = json.loads(args.store_namespace)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"--store-namespace: not JSON ({exc})") from exc
        if not isinstance(namespace, list):
            raise ConfigurationError("--store-namespace: expected a JSON list of strings")
        options["namespace"] = tuple(namespace)
    return target, options


def _is_store(value: Any) -> bool:
    names = {c.__name__ for c in type(value).__mro__}
    return bool(names & {"VectorStore", "BaseStore", "BaseIndex"})


def _accept(args: argparse.Namespace) -> int:
    from ..writeback import accept_review

    with _open(args) as ledger:
        for memory_id in args.memory_ids:
            decision = accept_review(
                ledger,
                memory_id,
                actor=args.actor,
                reason=args.reason,
                source="cli",
                require_proposal=not args.without_proposal,
                min_queries=args.min_queries,
            )
            print(
                f"accepted {decision.memory_id} (decision {decision.decision_id[:8]}, "
                f"{len(decision.run_ids)} evidence runs); retire with `meclear ledger apply`"
            )
    return 0


def _reject(args: argparse.Namespace) -> int:
    from ..writeback import reject_review

    with _open(args) as ledger:
        for memory_id in args.memory_ids:
            decision = reject_review(
                ledger, memory_id, actor=args.actor, reason=args.reason, source="cli"
            )
            print(f"rejected {decision.memory_id} (decision {decision.decision_id[:8]})")
    return 0


def _decisions_from(args: argparse.Namespace) -> int:
    from ..writeback import annotations

    with _open(args) as ledger:
        if args.tool == "phoenix":
            if not args.project or not args.span:
                raise ConfigurationError("phoenix needs --project and --span SPAN_ID=RUN_ID")
            spans = dict(_pair(s) for s in args.span)
            result = annotations.phoenix_decisions(
                ledger, spans, project=args.project, min_queries=args.min_queries
            )
        elif args.tool == "langsmith":
            result = annotations.langsmith_decisions(ledger, min_queries=args.min_queries)
        else:
            result = annotations.langfuse_decisions(ledger, min_queries=args.min_queries)
    for d in result.recorded:
        print(f"{d.decision} {d.memory_id} by {d.actor or '-'} ({d.source} {d.source_id})")
    for mark, why in result.skipped:
        print(f"skipped {mark}: {why}")
    print(
        f"{len(result.recorded)} decisions recorded, {len(result.skipped)} marks skipped; "
        "retire the accepted ones with `meclear ledger apply`"
    )
    return 0


def _pair(text: str) -> tuple[str, str]:
    span, sep, run = text.partition("=")
    if not sep or not span or not run:
        raise ConfigurationError(f"--span {text!r}: expected SPAN_ID=RUN_ID")
    return span, run


def _apply(args: argparse.Namespace) -> int:
    from ..writeback import apply_reviews

    store, options = _store(args)
    with _open(args) as ledger:
        outcomes = apply_reviews(
            ledger,
            store,
            args.memory_ids or None,
            actor=args.actor,
            dry_run=args.dry_run,
            **options,
        )
    if not outcomes:
        print("no accepted review is pending (meclear ledger accept MEMORY_ID first)")
        return 0
    for outcome in outcomes:
        print(outcome.message)
    changed = sum(o.changed for o in outcomes)
    if args.dry_run:
        would = sum(o.action == "would_retire" for o in outcomes)
        print(f"dry run: {would} would be retired; nothing changed")
    else:
        print(f"{changed} retired")
    return 2 if any(o.action == "failed" for o in outcomes) else 0


def restore_from_store(args: argparse.Namespace, open_ledger: Any) -> int:
    """``meclear ledger restore MEMORY_ID --store SPEC``: back from its tombstone.

    Args:
        args: The parsed arguments (``memory_id``, ``store``, ``reason``, ``actor``).
        open_ledger: Opens the ledger the arguments name.

    Returns:
        0 when restored, 2 when nothing was restored.
    """
    from ..writeback import restore_memory

    store, options = _store(args)
    with open_ledger(args) as ledger:
        outcome = restore_memory(
            ledger,
            store,
            args.memory_id,
            actor=args.actor,
            reason=args.reason,
            dry_run=getattr(args, "dry_run", False),
            **options,
        )
    print(outcome.message)
    return 0 if outcome.action in ("restored", "would_restore") else 2


def _tombstones(args: argparse.Namespace) -> int:
    from ..ledger.tombstones import decisions, tombstone_events

    with _open(args) as ledger:
        events = tombstone_events(ledger, args.memory_id)
        made = decisions(ledger, args.memory_id)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "decisions": [d.model_dump(mode="json") for d in made],
                    "tombstones": [e.model_dump(mode="json", exclude={"payload"}) for e in events],
                },
                indent=2,
            )
        )
        return 0
    rows = [
        (
            d.created_at,
            f"{d.decision.upper():<9} {d.memory_id} by {d.actor or '-'} via {d.source}"
            f"{': ' + d.reason if d.reason else ''}",
        )
        for d in made
    ]
    rows += [
        (
            e.created_at,
            f"{e.event.upper():<9} {e.memory_id} tombstone {e.tombstone_id[:8]} by "
            f"{e.actor or '-'} in {e.store}{' (' + e.detail + ')' if e.detail else ''}",
        )
        for e in events
    ]
    if not rows:
        print("no review decision or tombstone recorded")
        return 0
    for at, text in sorted(rows, key=lambda r: r[0]):
        print(f"  {at.isoformat(timespec='seconds')}  {text.replace(chr(10), ' ')}")
    return 0
