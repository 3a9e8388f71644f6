"""The redundancy settings on the ordinary benchmark, as a command.

``python -m meclear_bench.cli.bench_redundancy_defaults --locomo DIR --out OUT``.

Runs :func:`~meclear_bench.redundancy_defaults.defaults_sweep` with
``meclear bench-sweep``'s case and engine flags (dev split by default). SIMULATED.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..redundancy_defaults import defaults_sweep
from ..settings import BenchSettings
from ..variants import variants_table

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep with ``meclear bench-sweep``'s case and engine flags.

    Args:
        argv: The flags (default: the command line).

    Returns:
        The exit status.
    """
    from . import bench_sweep
    from .bench import _load, signal_settings

    parser = argparse.ArgumentParser(prog="redundancy_defaults")
    bench_sweep.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench-sweep", "variants", *(sys.argv[1:] if argv is None else argv)])
    if args.split is None:
        args.split = "dev"
    cases, *_ = _load(args)
    if not cases:
        print("error: no valid cases to run", file=sys.stderr)
        return 2
    base = BenchSettings(
        engine=bench_sweep.engine_config(args), seed=args.seed, **signal_settings(args)
    )
    doc = defaults_sweep(cases, base=base)
    doc["split"] = args.split
    doc["command"] = "python -m meclear_bench.cli.bench_redundancy_defaults " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "redundancy-defaults.json").write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
    table = variants_table(doc)
    (out / "redundancy-defaults.md").write_text(table + "\n", "utf-8")
    print("SIMULATED evidence world (a stand-in for an LLM; not real-model results)")
    print(f"split {args.split}, {doc['n_cases']} cases")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
