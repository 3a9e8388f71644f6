"""``meclear worker``: run background job workers outside the application process.

The application builds its component with ``mode="background"`` and
``loop=Loop(audit_workers=0)``; ``meclear worker --component myapp.meclear:retriever``
imports the same component (an object, or a function that returns one), takes its audit
queue (the job table beside its ledger, or the ``ProcrastinateQueue`` it was given) and runs
``--concurrency`` workers until SIGINT/SIGTERM, or until no job is due with
``--until-idle``. Run as many of these as you like, on as many machines as share the ledger
database: a job is claimed by one worker at a time and taken over by another when its worker
dies (leases, at-least-once delivery, idempotent ledger writes).

Every job kind on the queue runs here: ``--component`` may be given several times (a
background retriever for ``audit`` jobs, a ``BackgroundAdmissionGate`` /
``BackgroundAdmissionWriter`` built with ``workers=0`` for ``admission`` jobs) when they
share one queue; a job of a kind none of them runs goes to the dead letters with its reason.

``module`` is imported as ``python -m`` would: from the current folder first, then the
installed packages. The queue's tables are created on first use (``--migrate`` creates them
and exits, for deployments whose application user has no DDL rights).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading
from typing import Any

from ..core.errors import ConfigurationError

__all__ = ["import_target", "load_component", "register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear worker`` subcommand.

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "worker", help="run background audit workers for a component", description=__doc__
    )
    p.add_argument(
        "--component",
        action="append",
        help="module:attribute of a background component (or of a function returning it); "
        "repeat it for components sharing one queue (audits and admissions)",
    )
    p.add_argument("--concurrency", type=int, default=1, help="worker threads (default 1)")
    p.add_argument(
        "--until-idle", action="store_true", help="exit once no job is due (drain the queue)"
    )
    p.add_argument("--max-jobs", type=int, default=None, help="exit after this many jobs")
    p.add_argument(
        "--lease-seconds", type=float, default=180.0, help="how long a claimed job is held"
    )
    p.add_argument(
        "--migrate",
        action="store_true",
        help="create the queue's tables (procrastinate's schema, the dead letters) if "
        "missing, then exit (idempotent; workers also create them on first use)",
    )
    measure = p.add_argument_group("measurements (--measure; no --component needed)")
    measure.add_argument(
        "--measure",
        action="store_true",
        help="time the background request path against the plain retriever, and the audit "
        "throughput of 1 vs --concurrency workers on a latency-bound stub",
    )
    measure.add_argument("--k", type=int, default=20, help="documents per query (20)")
    measure.add_argument("--queries", type=int, default=300, help="queries timed (300)")
    measure.add_argument(
        "--ledger-runs", type=int, default=1000, help="clearances in the ledger first (1000)"
    )
    measure.add_argument(
        "--ledger",
        default=None,
        help="ledger server: a PostgreSQL URL gets a scratch database, dropped afterwards "
        "(default: a temporary SQLite file)",
    )
    measure.add_argument("--jobs", type=int, default=40, help="stub audits drained (40)")
    measure.add_argument(
        "--audit-seconds", type=float, default=0.2, help="the stub audit's latency (0.2)"
    )
    p.set_defaults(handler=_run)


def load_component(spec: str) -> Any:
    """The component named by ``module:attribute`` (called when it is a factory).

    Args:
        spec: ``package.module:name``.

    Returns:
        The component.

    Raises:
        ConfigurationError: The spec is malformed, or the object has no audit queue.
    """
    target = import_target(spec, "--component")
    runs_jobs = hasattr(target, "audit") or hasattr(target, "job_handlers")
    component = target() if callable(target) and not runs_jobs else target
    if component_queue(component) is None:
        raise ConfigurationError(
            f'{spec} is not a component in mode="background" (ClearingRetriever, '
            "MeClearCompressor or MeClearPostprocessor with a ledger) nor a background "
            "admission writer (BackgroundAdmissionGate, BackgroundAdmissionWriter)"
        )
    return component


def import_target(spec: str, flag: str) -> Any:
    """The object named by ``module:attribute``, imported as ``python -m`` would.

    Args:
        spec: ``package.module:name``.
        flag: The command-line flag it came from (for the messages).

    Returns:
        The object.

    Raises:
        ConfigurationError: Malformed, no such module in the current folder nor on the
            import path, or no such attribute.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"{flag} must be module:attribute, got {spec!r}")
    _import_from_current_folder()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise  # the module was found; something it imports is missing
        raise ConfigurationError(
            f"{flag} {spec}: no module {exc.name!r} in the current folder "
            f"({os.getcwd()}) nor on the import path; run meclear from the folder "
            "holding it or add that folder to PYTHONPATH"
        ) from exc
    try:
        return getattr(module, attribute)
    except AttributeError as exc:
        raise ConfigurationError(f"{flag} {spec}: {module_name} has no {attribute!r}") from exc


def _import_from_current_folder() -> None:
    """Put the current folder first on the import path, as ``python -m`` does.

    The ``meclear`` console script's path starts with the script's own folder, so
    ``--component app:retriever`` would not find ``./app.py`` otherwise.
    """
    cwd = os.getcwd()
    if not any(entry in ("", cwd) for entry in sys.path):
        sys.path.insert(0, cwd)


def component_queue(component: Any) -> Any:
    """The durable queue a component's jobs go to (None: it runs no background jobs).

    Args:
        component: A background clearance component or admission writer.

    Returns:
        Its queue, or None.
    """
    if callable(getattr(component, "job_handlers", None)):
        return getattr(component, "job_queue", None)
    if callable(getattr(component, "audit", None)):
        return getattr(component, "_queue", None)
    return None


def _run(args: argparse.Namespace) -> int:
    if args.measure:
        return _measure(args)
    if not args.component:
        raise ConfigurationError("meclear worker needs --component module:attribute")
    from ..jobs.kinds import JobKinds

    components = [load_component(spec) for spec in args.component]
    for component in components:
        component.close()  # its own in-process workers, if it started any
    queue = component_queue(components[0])
    if args.migrate:
        return _migrate(queue)
    kinds = JobKinds.of(*components)
    if args.until_idle or args.max_jobs is not None:
        return _drain(queue, kinds, args)
    run_worker = getattr(queue, "run_worker", None)
    if run_worker is not None:  # a distributed queue runs its own worker loop
        run_worker(kinds, concurrency=args.concurrency)
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    pool = queue.start_workers(
        kinds,
        concurrency=args.concurrency,
        lease_seconds=args.lease_seconds,
        only_known_kinds=False,  # the queue's worker: an unknown kind is dead-lettered
    )
    print(f"meclear worker: {args.concurrency} worker(s) on {queue!r}", flush=True)
    stop.wait()
    pool.stop()
    print(json.dumps(queue.stats()), flush=True)
    return 0


def _migrate(queue: Any) -> int:
    """Create the queue's tables if missing (a ``JobStore`` made them when it opened)."""
    apply_schema = getattr(queue, "apply_schema", None)
    created = bool(apply_schema()) if apply_schema is not None else False
    print(json.dumps({"queue": repr(queue), "schema_created": created}), flush=True)
    return 0


def _drain(queue: Any, component: Any, args: argparse.Namespace) -> int:
    """Run due jobs until none is due (``component``: the workers' ``JobKinds``)."""
    from ..jobs.worker import AuditWorker

    run_worker = getattr(queue, "run_worker", None)
    if run_worker is not None:  # a distributed queue drains with its own worker
        run_worker(component, concurrency=args.concurrency, wait=False)
        print(json.dumps({"queue": queue.stats()}), flush=True)
        return 0

    worker = AuditWorker(queue, component, lease_seconds=args.lease_seconds, only_known_kinds=False)
    done = worker.run_until_idle(limit=args.max_jobs)
    states: dict[str, int] = {}
    for _, outcome in done:
        states[outcome.state] = states.get(outcome.state, 0) + 1
    print(json.dumps({"ran": len(done), "outcomes": states, "queue": queue.stats()}), flush=True)
    return 0


def _measure(args: argparse.Namespace) -> int:
    from .plugins import load_harness

    perf = load_harness("meclear_bench.background_perf")
    workers = max(2, args.concurrency)
    overhead = perf.request_overhead(
        k=args.k, queries=args.queries, ledger_runs=args.ledger_runs, ledger_url=args.ledger
    )
    throughput = perf.audit_throughput(
        jobs=args.jobs, audit_seconds=args.audit_seconds, workers=workers
    )
    print(json.dumps({"request_overhead": overhead, "audit_throughput": throughput}, indent=2))
    return 0
