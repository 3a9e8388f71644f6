"""``meclear bench-redundancy``: carriers of a harm under heavy redundancy (LoCoMo).

Builds the heavy-redundancy cases (``bench.redundancy``: one wrong claim in r = 3..10
copies of unequal strength, K = 10..20, with clean, double-gold and unexplained
controls), verifies them with the chosen reader and runs MeClear (default, with carriers
under ``minimal`` and ``complete``) against LOO, ContextCite and ProxySPEX at equal calls
(``bench.redundancy_run``). Writes ``redundancy.json`` (every case and the summary) and
``redundancy.md`` (the table of the docs' "Carriers" page) to ``--out``.

Readers: ``simulated`` (the SIMULATED evidence world) and ``text`` (the offline
text-reading model, ``bench.text_reader``: a deterministic stand-in, not an LLM).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "table"]

_COLUMNS = (
    ("carrier_recall", "carrier recall"),
    ("carrier_precision", "carrier precision"),
    ("flag_recall", "flag recall"),
    ("deletion_recall", "deletion recall"),
    ("deletion_precision", "deletion precision"),
    ("all_copies_deleted", "all copies deleted"),
    ("recovered_heavy", "recovery"),
    ("background_heavy", "deleted background / case"),
    ("calls_heavy", "calls / heavy case"),
    ("calls_unexplained", "calls / unexplained case"),
    ("extra_calls_per_memory", "extra calls / memory vs meclear (mean, max)"),
    ("carrier_calls_per_remaining", "carriers search calls / kept memory (mean, max)"),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear bench-redundancy`` subcommand.

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "bench-redundancy",
        help="carriers of a harm under heavy redundancy (LoCoMo; SIMULATED / text reader)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--locomo", type=Path, required=True, help="LoCoMo directory (locomo10)")
    p.add_argument("--reader", choices=["simulated", "text"], default="simulated")
    p.add_argument(
        "--questions", type=int, default=10, help="questions tried per conversation (default 10)"
    )
    p.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="all",
        help="LoCoMo conversations: dev (26, 30, 41: decide settings), test (report) or all",
    )
    p.add_argument("--conversations", type=int, default=None, help="conversations used")
    p.add_argument("--methods", default=None, help="comma-separated subset of the methods")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="quiet")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.set_defaults(handler=_handle)


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) <= 1.0 else f"{value:.1f}"
    return str(value)


def table(summary: dict[str, dict[str, Any]], reader: str, cases: dict[str, int]) -> str:
    """The Markdown table of a run's summary.

    Args:
        summary: Method -> metrics (``redundancy_run.summarize``).
        reader: The reader's name.
        cases: Cases per structure.

    Returns:
        The table, labelled with the reader.
    """
    label = "SIMULATED world" if reader == "simulated" else "offline text reader (not an LLM)"
    counts = ", ".join(f"{n} {s}" for s, n in sorted(cases.items()))
    lines = [
        f"Heavy redundancy, {label}: {counts} cases.",
        "",
        "| method | " + " | ".join(title for _, title in _COLUMNS) + " |",
        "|---|" + "---|" * len(_COLUMNS),
    ]
    for method, row in summary.items():
        cells = []
        for key, _ in _COLUMNS:
            cell = _cell(row.get(key))
            if row.get(f"max_{key}") is not None:
                cell = f"{cell} (max {_cell(row[f'max_{key}'])})"
            cells.append(cell)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _handle(args: argparse.Namespace) -> int:
    from ..redundancy import build_redundancy_cases
    from ..redundancy_run import REDUNDANCY_METHODS, run_redundancy, summarize

    methods = tuple(args.methods.split(",")) if args.methods else REDUNDANCY_METHODS
    unknown = sorted(set(methods) - set(REDUNDANCY_METHODS))
    if unknown:
        print(f"unknown methods {unknown}; known: {', '.join(REDUNDANCY_METHODS)}", file=sys.stderr)
        return 2
    build = build_redundancy_cases(
        args.locomo,
        mode=args.reader,
        seed=args.seed,
        per_conversation=args.questions,
        conversations=args.conversations,
        split=args.split,
    )
    if not build.cases:
        print("no verified case: nothing to run", file=sys.stderr)
        return 1

    def progress(done: int) -> None:
        if not args.no_progress:
            print(f"\r{done}/{len(build.cases)} cases", end="", file=sys.stderr, flush=True)

    records = run_redundancy(build.cases, args.reader, methods, seed=args.seed, progress=progress)
    if not args.no_progress:
        print(file=sys.stderr)
    summary = summarize(records)
    cases: dict[str, int] = {}
    for case in build.cases:
        cases[case.structure] = cases.get(case.structure, 0) + 1
    args.out.mkdir(parents=True, exist_ok=True)
    command = "meclear " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "meclear bench-redundancy"
    payload = {
        "command": command,
        "reader": args.reader,
        "funnel": build.funnel,
        "summary": summary,
        "cases": records,
    }
    (args.out / "redundancy.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    text = table(summary, args.reader, cases)
    (args.out / "redundancy.md").write_text(text, encoding="utf-8")
    print(text)
    return 0
