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

``--from-equal-calls EQ_DIR`` first reruns a fixed-budget headline cell: it reads the
``equal-calls.json`` of a ``meclear bench-sweep equal-calls`` run (its reproducing command
and each baseline's fixed budget), runs MeClear, the oracle and the ``--against`` baseline
at that budget on the same cases with the same settings (:func:`rerun_fixed_budget`) and
writes their ``outcomes.jsonl`` to OUT_DIR: the diagnosis of exactly the headline's pairs.

Usage::

    python -m meclear_bench.gap OUT_DIR [--method meclear] [--against oracle|contextcite...]
    python -m meclear_bench.gap OUT_DIR --from-equal-calls EQ_DIR --against proxyspex-answers
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["gap_by_outcome", "losses_against", "main", "outcome_kind", "rerun_fixed_budget"]


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
        ``bg_against`` (deleted background per case on them), ``case_ids`` and
        ``structures`` (the cases' fault structures, e.g. ``redundant``: their counts);
        largest first.

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
        g = groups.setdefault(
            key, {"cases": 0, "loss": 0.0, "bg": 0.0, "bg_b": 0.0, "ids": [], "structures": {}}
        )
        structure = str(ours[cid].get("structure") or "?")
        g["structures"][structure] = g["structures"].get(structure, 0) + 1
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
            "structures": g["structures"],
        }
        for (mine, other), g in groups.items()
    ]
    return sorted(out, key=lambda r: -r["loss_pp"])


def _background(row: dict[str, Any]) -> float:
    return float(row.get("cleared_extra_background") or 0.0)


def rerun_fixed_budget(
    equal_calls_dir: Path, out: Path, against: str, locomo: Path | None = None
) -> dict[str, float]:
    """Rerun MeClear, the oracle and one baseline at its fixed budget of an equal-calls run.

    Args:
        equal_calls_dir: A ``meclear bench-sweep equal-calls`` output (``equal-calls.json``).
        out: Where ``outcomes.jsonl`` is written.
        against: The baseline family (e.g. ``proxyspex-answers``; ``oracle``: none).
        locomo: The LoCoMo directory, if not where the run's command found it.

    Returns:
        Per method, the mean E[recovery] of the rerun (to check against the run's table).

    Raises:
        ValueError: The run has no fixed budget for ``against``.
    """
    from .cli.bench_inputs import _load, signal_settings
    from .cli.bench_sweep import register
    from .cli_args import engine_config
    from .equal_calls import default_ladders
    from .methods.base import BenchMethod
    from .methods.meclear import MeClearMethod
    from .runner import run_benchmark
    from .settings import BenchSettings

    doc = json.loads((equal_calls_dir / "equal-calls.json").read_text(encoding="utf-8"))
    parser = argparse.ArgumentParser(prog="meclear")
    register(parser.add_subparsers())
    args = parser.parse_args(shlex.split(doc["command"])[1:])
    args.no_progress = True
    if locomo is not None:
        args.locomo = locomo
    cases = _load(args)[0]
    settings = BenchSettings(
        engine=engine_config(args), bootstrap_replicates=0, seed=args.seed, **signal_settings(args)
    ).model_copy(update={"match_budget": False})
    families = ["oracle"] + ([against] if against != "oracle" else [])
    if against != "oracle" and against not in doc["fixed_rungs"]:
        raise ValueError(f"{equal_calls_dir} has no fixed budget for {against!r}")
    ladders = default_ladders(settings, families)
    runs: list[tuple[BenchMethod, BenchSettings]] = [
        (MeClearMethod(settings.engine, name="meclear"), settings)
    ]
    for family in families:
        rung = next(r for r in ladders[family] if r.label == doc["fixed_rungs"][family])
        runs.append((rung.method, rung.settings))
    out.mkdir(parents=True, exist_ok=True)
    means: dict[str, float] = {}
    with open(out / "outcomes.jsonl", "w", encoding="utf-8") as handle:
        for method, run_settings in runs:
            outcomes = run_benchmark(cases, run_settings, methods=[method]).outcomes[method.name]
            for o in outcomes:
                row = {"method": method.name, **o.model_dump(mode="json")}
                handle.write(json.dumps(row) + "\n")
            values = [o.expected_recovery or 0.0 for o in outcomes]
            means[method.name] = sum(values) / len(values) if values else 0.0
    return means


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
    parser.add_argument(
        "--from-equal-calls",
        type=Path,
        default=None,
        metavar="EQ_DIR",
        help="first rerun this equal-calls run's MeClear, oracle and --against (at its fixed "
        "budget) into RUN",
    )
    parser.add_argument("--locomo", type=Path, default=None, help="with --from-equal-calls")
    args = parser.parse_args(argv)
    if args.from_equal_calls is not None:
        doc = json.loads((args.from_equal_calls / "equal-calls.json").read_text("utf-8"))
        means = rerun_fixed_budget(args.from_equal_calls, args.run, args.against, args.locomo)
        table = doc["results"]["methods"]
        for name, mean in means.items():
            was = table.get(name, {}).get("overall", {}).get("expected_recovery")
            shown = "n/a" if was is None else f"{100 * was:.1f}"
            budget = doc["fixed_rungs"].get(name, "default")
            print(f"rerun {name} ({budget}): {100 * mean:.1f} (equal-calls.json: {shown})")
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
                f"{r['bg_against']:.2f}  structures "
                + ", ".join(f"{k} {n}" for k, n in sorted(r["structures"].items()))
                + f"  e.g. {', '.join(r['case_ids'][:3])}"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
