#!/usr/bin/env python
r"""What importing an integration costs against importing the framework piece it extends.

Each import runs in a fresh interpreter under ``python -X importtime``; the figure is the
sum of the self times of every module it imported, the median over ``--runs`` runs, and
the ratio of the two medians (a ratio, not an absolute time: the machine's load cancels
out as long as both run under it, so the two imports alternate run by run). The median of
the run-by-run ratios and the ratio of the child processes' CPU seconds are printed too
(less sensitive to a shared machine's load). It also counts the modules each import
loads::

    python tools/import_cost.py                      # meclear_integrations.langchain
    python tools/import_cost.py --target meclear_integrations.llama_index \\
        --baseline llama_index.core.postprocessor.types
    python tools/import_cost.py --modules            # the package's own modules loaded
    python tools/import_cost.py --target meclear_integrations.langchain:ClearingRetriever

``MODULE:NAME`` imports one name (``from MODULE import NAME``): what the first use costs
once the package's names load lazily.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass

PAIRS = {
    "meclear_integrations.langchain": "langchain_core.retrievers",
    "meclear_integrations.llama_index": "llama_index.core.postprocessor.types",
}


@dataclass(frozen=True)
class ImportCost:
    """One import in a fresh interpreter: microseconds spent and modules loaded."""

    microseconds: int
    modules: tuple[str, ...]
    cpu_seconds: float = 0.0
    """User and system CPU time of the interpreter that imported it."""


def import_cost(module: str) -> ImportCost:
    """Import ``module`` in a fresh interpreter under ``-X importtime``.

    Args:
        module: The dotted module name, or ``MODULE:NAME`` for one name of it.

    Returns:
        The summed self times of the modules it imported and their names.
    """
    package, _, name = module.partition(":")
    statement = f"from {package} import {name}" if name else f"import {module}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    total, names = 0, []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line[12:].split("|"))
        total += int(self_us)
        names.append(name)
    return ImportCost(total, tuple(dict.fromkeys(names)), cpu)


@dataclass(frozen=True)
class Comparison:
    """``runs`` imports of a baseline and a target, alternating."""

    baseline: list[ImportCost]
    target: list[ImportCost]

    def median(self, side: str) -> float:
        """The median summed self time (microseconds) of one side."""
        return statistics.median(c.microseconds for c in getattr(self, side))

    @property
    def ratio(self) -> float:
        """The ratio of the two medians."""
        return self.median("target") / self.median("baseline")

    @property
    def paired_ratio(self) -> float:
        """The median of the run-by-run ratios (each pair ran back to back)."""
        return statistics.median(
            t.microseconds / b.microseconds for b, t in zip(self.baseline, self.target, strict=True)
        )

    @property
    def cpu_ratio(self) -> float:
        """The ratio of the median CPU seconds of the two sides' interpreters."""
        return statistics.median(c.cpu_seconds for c in self.target) / statistics.median(
            c.cpu_seconds for c in self.baseline
        )


def compare(baseline: str, target: str, runs: int) -> Comparison:
    """Import ``baseline`` and ``target`` ``runs`` times each, alternating."""
    pairs = [(import_cost(baseline), import_cost(target)) for _ in range(runs)]
    return Comparison([b for b, _ in pairs], [t for _, t in pairs])


def main(argv: list[str] | None = None) -> int:
    """Print both imports' median times, their ratio and module counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="meclear_integrations.langchain")
    parser.add_argument("--baseline", default=None, help="default: the target's framework piece")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--modules", action="store_true", help="list the package's own modules")
    args = parser.parse_args(argv)
    baseline = args.baseline or PAIRS[args.target.partition(":")[0]]
    runs = compare(baseline, args.target, args.runs)
    base, target = runs.baseline[-1], runs.target[-1]
    base_time, target_time = runs.median("baseline"), runs.median("target")
    own = sorted(n for n in target.modules if n.startswith("meclear_integrations"))
    extra = set(target.modules) - set(base.modules)
    print(f"{baseline}: {len(base.modules)} modules, median {base_time / 1000:.1f} ms")
    print(f"{args.target}: {len(target.modules)} modules, median {target_time / 1000:.1f} ms")
    print(f"ratio {runs.ratio:.2f}x; +{len(extra)} modules, {len(own)} of them the package's own")
    print(f"median run-by-run ratio {runs.paired_ratio:.2f}x; CPU-time ratio {runs.cpu_ratio:.2f}x")
    if args.modules:
        print("\n".join(own))
    return 0


if __name__ == "__main__":
    sys.exit(main())
