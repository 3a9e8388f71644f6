r"""Engine CPU per clearance at large K, against another source tree (SIMULATED games).

Runs the package default on scale games (``meclear_bench.scale_games``: one gold memory,
background about the same people and kinds of facts; the simulated evidence world answers,
every model call instant) and measures the engine's own thread CPU time per clearance
(``meclear budget scale``'s measure: the evaluator's time is subtracted). With
``--baseline DIR`` (a checkout of another commit, e.g. ``git archive <commit> | tar -x -C
DIR``) the same games run in both trees, alternating in fresh processes, so that a shared
machine's load weighs on both alike; the ratio is the figure to quote, the absolute time
only describes this machine at that moment.

Usage::

    python tools/scale_cpu.py --k 1000 --families direct,redundant3 --games 5 --rounds 3 \
        --baseline /tmp/base

Prints one line per tree and round, then the medians and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import asyncio, json, sys
from meclear_bench.cli.budget_scale import FAMILIES, PRESETS, _zero_latency
from meclear_bench.scale_games import scale_games

k, families, games, preset = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
cases = [c for f in families for c in scale_games(k, FAMILIES[f], games)]
config = PRESETS[preset]().updated(budget={"max_concurrency": 64, "max_memories": max(k, 1024)})


async def run():
    await _zero_latency(cases[0], config)  # warm-up (imports, caches of the first game)
    return [await _zero_latency(case, config) for case in cases]


out = asyncio.run(run())
print(json.dumps({
    "seconds": [s for _, _, s in out],
    "calls": [r.cost.evaluator_calls for r, _, _ in out],
    "recovered": [bool(r.recovered) for r, _, _ in out],
}))
"""


def _measure(tree: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(args.k), args.families, str(args.games), args.preset],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Measure, print, and exit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--families", default="direct,redundant3")
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None, help="another source tree")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    trees = {"this tree": here}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    seconds: dict[str, list[float]] = {name: [] for name in trees}
    for n in range(args.rounds):
        for name, tree in trees.items():
            got = _measure(tree, args)
            seconds[name] += got["seconds"]
            print(
                f"round {n + 1} {name}: median {1000 * statistics.median(got['seconds']):.1f} ms"
                f" per clearance, calls {statistics.fmean(got['calls']):.1f},"
                f" recovered {sum(got['recovered'])}/{len(got['recovered'])}"
            )
    medians = {name: 1000 * statistics.median(v) for name, v in seconds.items()}
    for name, ms in medians.items():
        print(f"{name}: median engine CPU {ms:.1f} ms per clearance (K={args.k}, SIMULATED)")
    if "baseline" in medians:
        print(f"ratio this tree / baseline: {medians['this tree'] / medians['baseline']:.2f}")


if __name__ == "__main__":
    main()
