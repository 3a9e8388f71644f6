"""``meclear bench merge DIR... --out OUT``: one report from the shards of a run.

The output directories of the shards (``--shard i/n``) give a report equal to that of a
single run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["merge_outputs", "register_merge"]


def register_merge(bench: argparse.ArgumentParser) -> None:
    """Add the ``merge`` subcommand to the ``bench`` parser.

    Args:
        bench: The ``meclear bench`` parser.
    """
    sub = bench.add_subparsers(dest="bench_command", metavar="{merge}")
    p = sub.add_parser(
        "merge",
        help="combine the outputs of --shard runs into one report",
        description=(
            "Reads the run.json and journal.jsonl of every shard directory, checks that they "
            "are shards 1..n of one run, and writes results.json, report.md, outcomes.jsonl "
            "and the figures of the whole run (same cohort rule and bootstrap as one run)."
        ),
    )
    p.add_argument("dirs", nargs="+", type=Path, help="shard output directories")
    p.add_argument("--out", type=Path, required=True, help="output directory of the merge")
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    p.set_defaults(handler=_handle)


def merge_outputs(dirs: list[Path], out: Path, *, figures: bool = True) -> dict[str, Any]:
    """Merge the shard directories into ``out``; returns the merged results.

    Args:
        dirs: The shards' output directories.
        out: The merged run's output directory.
        figures: Draw the figures.

    Returns:
        The merged ``results.json`` document.

    Raises:
        ConfigurationError: The directories are not the shards of one run.
    """
    from ..outputs import write_outputs
    from ..results import build_results
    from ..shards import merge_runs
    from .bench_long import annotate_results

    merged = merge_runs(dirs)
    info = merged.manifest
    results = build_results(
        merged.run,
        funnel=info.get("funnel") or {},
        skipped_lines=info.get("skipped_lines") or [],
        source=info.get("source", ""),
    )
    models = info.get("models")
    mode = (info["identity"].get("mode") or {}).get("judge")
    annotate_results(
        results,
        merged.run,
        models=models,
        mode=mode,
        calls=info.get("calls"),
        merged_from=merged.shards,
    )
    command = f"meclear bench merge {' '.join(map(str, dirs))} --out {out}"
    written = write_outputs(out, merged.run, results, command=command, figures=figures)
    print(
        f"merged {len(dirs)} shards: {results['n_cases']} cases; "
        f"wrote {', '.join(str(p) for p in written.values())}"
    )
    return results


def _handle(args: argparse.Namespace) -> int:
    try:
        results = merge_outputs(args.dirs, args.out, figures=not args.no_figures)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from .bench_inputs import outcome_errors

    problems = outcome_errors(results)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 2
    return 3 if results.get("stopped") else 0
