#!/usr/bin/env python
"""Whether two ``meclear bench`` output folders hold the same figures and call counts.

Wall-clock fields (any key with ``wall`` or ``seconds`` in it) are left out; everything else in
``results.json`` and ``outcomes.jsonl`` (scores, metrics, model calls, cache hits) must be
equal::

    python tools/compare_runs.py BEFORE_DIR AFTER_DIR

Two JSON files (e.g. ``meclear demo --json`` outputs) are compared the same way::

    python tools/compare_runs.py before.json after.json

A configuration recorded before the table-evidence add-ons moved from the exact estimator's
settings to ``ClearanceConfig.verification.table_evidence`` is read in the new spelling (same
values), so a run before and after that move compares setting by setting.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

_MOVED = {"exact": "", "auto": "exact_"}
_TABLE_EVIDENCE = {"answer_flags": False, "residual_z": None, "answer_residual_z": None}


def _moved(value: dict[str, Any]) -> dict[str, Any]:
    """A recorded configuration in today's spelling (add-ons in its verification)."""
    verification = value.get("verification")
    if "harm_tolerance" not in value or not isinstance(verification, dict):
        return value  # not a configuration
    if "table_evidence" in verification:
        return value  # today's spelling
    estimator = value.get("estimator")
    prefix = _MOVED.get(str(estimator.get("name"))) if isinstance(estimator, dict) else None
    found = dict(_TABLE_EVIDENCE)
    if isinstance(estimator, dict) and prefix is not None:
        found = {k: estimator.get(prefix + k, default) for k, default in _TABLE_EVIDENCE.items()}
        estimator = {
            k: v for k, v in estimator.items() if k.removeprefix(prefix) not in _TABLE_EVIDENCE
        }
    return {
        **value,
        "estimator": estimator,
        "verification": {**verification, "table_evidence": found},
    }


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _timeless(v)
            for k, v in _moved(value).items()
            if "wall" not in k and "seconds" not in k and k not in {"started", "finished"}
        }
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(set(a) | set(b))
            for d in _differences(a.get(k), b.get(k), f"{path}/{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main(argv: list[str]) -> int:
    """Compare the runs; exit 1 when a figure or a count differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a bench output folder or a JSON file")
    parser.add_argument("after", type=Path, help="the same kind of path, after the change")
    args = parser.parse_args(argv)
    before, after = args.before, args.after
    if before.is_file() and after.is_file():
        found = _differences(
            _timeless(json.loads(before.read_text())), _timeless(json.loads(after.read_text()))
        )
        for line in found[:20]:
            print(line)
        print(f"{len(found)} differences ({before.name}; wall times left out)")
        return 1 if found else 0
    found = _differences(
        _timeless(json.loads((before / "results.json").read_text())),
        _timeless(json.loads((after / "results.json").read_text())),
        "results.json",
    )
    outcomes = [
        [_timeless(json.loads(line)) for line in (d / "outcomes.jsonl").read_text().splitlines()]
        for d in (before, after)
    ]
    found += _differences(outcomes[0], outcomes[1], "outcomes.jsonl")
    for line in found[:20]:
        print(line)
    print(f"{len(found)} differences ({len(outcomes[0])} outcomes compared; wall times left out)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
