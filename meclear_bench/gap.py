"""Where a method's expected recovery falls short of the oracle's (or a baseline's), by kind.

Reads the ``outcomes.jsonl`` of a ``meclear bench`` run that includes the method and the
``oracle`` and sorts the method's cases by outcome: clean, exact (deleted the targets),
partial (some targets, not all), superset (the targets and more), wrong memories,
nothing deleted, abstained (``unverified``: the verdicts kept disagreeing), early stop
(``skipped``: an early stop decided before attribution that no clearance could help) and
failed (``failed``: the run could not finish, an error or the budget, and failed open).
For each kind: its cases, the method's and the
oracle's mean E[recovery], and its share of the gap in percentage points over all cases.
With ``--against BASELINE`` the comparator is that baseline instead, and
:func:`losses_against` lists the cases the method loses (by more than 0.005 of E[recovery]),
each kind with what the baseline did on those cases.

Usage::

    python -m meclear_bench.gap OUT_DIR [--method meclear] [--against oracle|contextcite...]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["gap_by_outcome", "losses_against", "main", "outcome_kind"]


_STATUS_KINDS = {"unverified": "abstained", "skipped": "early stop", "failed": "failed"}
"""The kind of a faulty case whose run did not complete, by its ``status``."""


def outcome_kind(row: dict[str, Any]) -> str:
    """The kind of one outcome (module docstring).

    Args:
        row: One line of ``outcomes.jsonl``.

    Returns:
        The kind.
    """
    targets, deleted = set(row["targets"]), set(row["cleared"])
    if not targets:
        return "clean"
    status = row.get("status", "complete")
    if status != "complete":
        return _STATUS_KINDS.get(status, status)
    if deleted == targets:
        return "exact"
    if not deleted:
        return "nothing deleted"
    if targets <= deleted:
        return "superset"
    return "partial" if deleted & targets else "wrong memories"


def _by_method(
    rows: Iterable[dict[str, Any]], method: str, against: str
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    by_method: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_method.setdefault(row["method"], {})[row["case_id"]] = row
    if method not in by_method or against not in by_method:
        raise ValueError(f"the run needs both {method!r} and {against!r} outcomes")
    return by_method[method], by_method[against]


def gap_by_outcome(
    rows: Iterable[dict[str, Any]], method: str = "meclear", against: str = "oracle"
) -> list[dict[str, Any]]:
    """Per outcome kind: cases, mean E[recovery] of the method and the comparator, gap share.

    Args:
        rows: The lines of ``outcomes.jsonl``.
        method: The method compared.
        against: The comparator (the oracle by default; its mean is under ``oracle``).

    Returns:
        One entry per kind, largest gap first.

    Raises:
        ValueError: The run lacks the method or the comparator.
    """
    ours, oracle = _by_method(rows, method, against)
    common = [cid for cid in ours if cid in oracle]
    kinds: dict[str, list[float]] = {}
    for cid in common:
        acc = kinds.setdefault(outcome_kind(ours[cid]), [0.0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += ours[cid]["expected_recovery"]
        acc[2] += oracle[cid]["expected_recovery"]
    total = len(common) or 1
    out = [
        {
            "kind": kind,
            "cases": int(n),
            "method": mine / n,
            "oracle": best / n,
            "gap_pp": 100 * (best - mine) / total,
        }
        for kind, (n, mine, best) in kinds.items()
    ]
    return sorted(out, key=lambda r: -r["gap_pp"])


def losses_against(
    rows: Iterable[dict[str, Any]], method: str, against: str, margin: float = 0.005
) -> list[dict[str, Any]]:
    """The cases ``method`` loses to ``against``, grouped by both methods' outcome kinds.

    Args:
        rows: The lines of ``outcomes.jsonl``.
        method: The method diagnosed.
        against: The baseline it is compared with.
        margin: A loss is a difference in E[recovery] larger than this.

    Returns:
        One entry per (method's kind, baseline's kind) with ``cases``, ``loss_pp`` (its
        share of the difference over all common cases, positive: lost), ``bg_method`` and
        ``bg_against`` (deleted background per case on them) and ``case_ids``; largest
        first.

    Raises:
        ValueError: The run lacks either method.
    """
    ours, theirs = _by_method(rows, method, against)
    common = [cid for cid in ours if cid in theirs]
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for cid in common:
        delta = theirs[cid]["expected_recovery"] - ours[cid]["expected_recovery"]
        if delta <= margin:
            continue
        key = (outcome_kind(ours[cid]), outcome_kind(theirs[cid]))
        g = groups.setdefault(key, {"cases": 0, "loss": 0.0, "bg": 0.0, "bg_b": 0.0, "ids": []})
        g["cases"] += 1
        g["loss"] += delta
        g["bg"] += _background(ours[cid])
        g["bg_b"] += _background(theirs[cid])
        g["ids"].append(cid)
    total = len(common) or 1
    out = [
        {
            "kind": mine,
            "against_kind": other,
            "cases": g["cases"],
            "loss_pp": 100 * g["loss"] / total,
            "bg_method": g["bg"] / g["cases"],
            "bg_against": g["bg_b"] / g["cases"],
            "case_ids": g["ids"],
        }
        for (mine, other), g in groups.items()
    ]
    return sorted(out, key=lambda r: -r["loss_pp"])


def _background(row: dict[str, Any]) -> float:
    return float(row.get("cleared_extra_background") or 0.0)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the breakdown of a run directory's ``outcomes.jsonl``.

    Args:
        argv: The command line (None: ``sys.argv``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description="gap to the oracle by outcome kind")
    parser.add_argument("run", type=Path, help="a meclear bench output directory")
    parser.add_argument("--method", default="meclear")
    parser.add_argument("--against", default="oracle", help="the comparator (default oracle)")
    args = parser.parse_args(argv)
    with open(args.run / "outcomes.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for r in gap_by_outcome(rows, args.method, args.against):
        print(
            f"{r['kind']:16s} {r['cases']:5d} cases  {args.method} {100 * r['method']:5.1f}  "
            f"{args.against} {100 * r['oracle']:5.1f}  gap {r['gap_pp']:+.1f} pp"
        )
    if args.against != "oracle":
        print(f"\ncases {args.method} loses to {args.against} (by its kind / theirs):")
        for r in losses_against(rows, args.method, args.against):
            print(
                f"{r['kind']:16s} / {r['against_kind']:16s} {r['cases']:4d} cases  "
                f"{r['loss_pp']:+.2f} pp  deleted bg {r['bg_method']:.2f} vs "
                f"{r['bg_against']:.2f}  e.g. {', '.join(r['case_ids'][:3])}"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
