"""``meclear bench-sweep KIND``: dev tuning, cost curve, L sensitivity, judge signals, presets.

SIMULATED figures, written to ``--out``.

- ``tune``: every method's tunable settings chosen on the dev split by one grid
  (:mod:`..tuning`; noisy and persistent settings, deterministic as a check), written to
  ``tuning.json`` / ``tuning.md`` and the regenerated module to ``tuned.py`` (``--write``:
  over ``meclear_bench/tuned.py``, the one command that regenerates it);
- ``budget``: recovery and Exact against model calls per case over a budget grid
  (``budget.json``, ``budget.md``, ``budget.png``);
- ``permutations``: the paper's configuration at L = 4, 8, 16 (``permutations.*``);
- ``judges``: MeClear and no clearance under every success signal (``judges.*``), the
  table of the docs' "Without a reference answer" (benchmark) page;
- ``cheap``: the cheap preset's grid on the dev split at K = 5, 10, 20 (``--locomo``) and
  its choice (``cheap.json``, ``cheap.md``);
- ``cost``: model calls per clean and per faulty query for the default, cheap and paper
  presets (``cost.json``, ``cost.md``), the docs' "Cost" table;
- ``equal-calls``: every baseline at (at least) MeClear's model calls per case, paired
  differences with intervals, quality-versus-calls curves (``equal-calls.*``), the
  benchmark page's headline tables;
- ``variants``: MeClear's configuration against variants without escalation, without the
  minimal-subset search, with the point or the interval flag rule, with two trials
  everywhere (``variants.json``, ``variants.md``): the dev evidence behind the defaults.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ..cli_args import add_engine_flags, engine_config
from .bench_inputs import SETTINGS, signal_settings

__all__ = ["register", "run_sweep"]

KINDS = ("tune", "budget", "permutations", "judges", "cheap", "cost", "equal-calls", "variants")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``meclear bench-sweep`` subcommand (dev tuning and the SIMULATED sweeps).

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    p = sub.add_parser(
        "bench-sweep",
        help="benchmark sweeps: dev tuning, quality vs cost, L sensitivity, judge signals",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kind", choices=KINDS)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--cases", type=Path, help="JSONL case file")
    source.add_argument("--locomo", type=Path, help="LoCoMo directory (locomo10 JSON files)")
    p.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default=None,
        help="LoCoMo split (default: dev for tune and cheap, test otherwise)",
    )
    p.add_argument(
        "--k", type=int, default=5, help="retrieval budget K (with --locomo; cheap: 5, 10, 20)"
    )
    add_engine_flags(p)
    p.add_argument("--judge", default=None, help="success signal (not for tune / judges)")
    p.add_argument("--temperature", type=float, default=None, help="world temperature")
    p.add_argument("--setting", choices=sorted(SETTINGS), default=None)
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates")
    p.add_argument(
        "--max-queries",
        type=int,
        default=None,
        help="at most this many questions per conversation (with --locomo; bounded runs)",
    )
    p.add_argument(
        "--passes", type=int, default=1, help="tune: coordinate-search passes per method (1)"
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="tune: also regenerate meclear_bench/tuned.py (always written to OUT/tuned.py)",
    )
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figure")
    p.add_argument("--no-progress", action="store_true", help="quiet")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.set_defaults(handler=_handle, conversations=None)


_COMMAND_FLAGS = (
    "cases",
    "locomo",
    "split",
    "preset",
    "estimator",
    "permutations",
    "trials",
    "setting",
    "judge",
    "temperature",
    "max_queries",
)
"""Flags that change a sweep's figures, in the order the reproducing command gives them."""


def _command(args: argparse.Namespace) -> str:
    """The command that reproduces the sweep (every flag that changes its figures)."""
    parts = ["meclear", "bench-sweep", args.kind]
    for flag in _COMMAND_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            parts += [f"--{flag.replace('_', '-')}", str(value)]
    if args.locomo is not None and args.kind != "cheap":
        parts += ["--k", str(args.k)]
    parts += ["--seed", str(args.seed), "--out", str(args.out)]
    if args.kind == "tune" and getattr(args, "passes", 1) != 1:
        parts += ["--passes", str(args.passes)]
    if args.kind == "tune" and getattr(args, "write", False):
        parts.append("--write")
    return shlex.join(parts)


def run_sweep(args: argparse.Namespace) -> dict[str, Any]:
    """Load the cases, run the sweep, write ``KIND.json``, ``KIND.md`` and the figure.

    Args:
        args: The parsed ``meclear bench-sweep`` flags.

    Returns:
        The sweep's document (also written to ``KIND.json``).
    """
    from .. import cost_sweep, sweeps
    from ..settings import BenchSettings
    from ..sweep_report import render_sweep, write_sweep_figure
    from .bench_inputs import _load

    if args.split is None:
        args.split = "dev" if args.kind in ("tune", "cheap", "variants") else "test"
    if args.kind == "cheap" and args.locomo is None:
        raise ValueError("bench-sweep cheap builds cases at K = 5, 10, 20: give --locomo DIR")
    if args.kind == "tune" and args.preset is None:
        # tuning starts from the package default, not from what an earlier tuning chose
        # (its grid's "auto" estimator then means what it means for a user)
        args.preset = "default"
    if args.cases is None and args.locomo is None and args.split != "all":
        args.split = "all"  # the built-in cases are not LoCoMo: no split applies
    by_k = {}
    for k in cost_sweep.CHEAP_KS if args.kind == "cheap" else (args.k,):
        args.k = k
        by_k[k], _, _, source, _ = _load(args)
    cases = by_k[args.k]
    if not cases:
        raise SystemExit("error: no valid cases to run")
    base = BenchSettings(
        engine=engine_config(args),
        bootstrap_replicates=args.bootstrap,
        seed=args.seed,
        **signal_settings(args),
    )
    say = None if args.no_progress else (lambda text: print(text, file=sys.stderr, flush=True))
    if args.kind == "tune":
        from ..tuning import tune

        doc = tune(cases, base=base, passes=args.passes, progress=say)
    elif args.kind == "budget":
        doc = sweeps.budget_sweep(cases, base=base, progress=say)
    elif args.kind == "permutations":
        doc = sweeps.permutation_sweep(cases, base=base, progress=say)
    elif args.kind == "cheap":
        doc = cost_sweep.cheap_sweep(by_k, base=base, progress=say)
    elif args.kind == "cost":
        doc = cost_sweep.preset_costs(cases, base=base, progress=say)
    elif args.kind == "equal-calls":
        from ..equal_calls import equal_calls

        doc = equal_calls(cases, base=base, progress=say)
    elif args.kind == "variants":
        from ..variants import variant_sweep

        doc = variant_sweep(cases, base=base, progress=say)
    else:
        doc = sweeps.judge_sweep(cases, base=base, progress=say)
    doc["source"] = source
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "tuning" if args.kind == "tune" else args.kind
    command = _command(args)
    doc["command"] = command
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    report = render_sweep(args.kind, doc, command=command)
    (out / f"{name}.md").write_text(report, encoding="utf-8")
    if not args.no_figures:
        write_sweep_figure(args.kind, doc, out / f"{args.kind}.png")
    if args.kind == "tune":
        _write_tuned(doc, command, out, write=args.write)
    print("SIMULATED evidence world (a stand-in for an LLM; not real-model results)")
    print(report)
    return doc


def _write_tuned(doc: dict[str, Any], command: str, out: Path, *, write: bool) -> None:
    """Write the regenerated ``tuned.py`` to ``out`` (and over the package's with --write)."""
    from datetime import UTC, datetime

    from .. import tuned
    from ..tuned_module import render_tuned_module

    date = datetime.now(UTC).date().isoformat()
    text = render_tuned_module(doc, command=command, date=date)
    (out / "tuned.py").write_text(text, encoding="utf-8")
    if write:
        Path(tuned.__file__).write_text(text, encoding="utf-8")
        print(f"wrote {tuned.__file__}", file=sys.stderr)


def _handle(args: argparse.Namespace) -> int:
    try:
        run_sweep(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
