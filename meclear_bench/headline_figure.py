"""The benchmark headline's curves: E[recovery] against mean model calls, every rung (SIMULATED).

Reads the ``equal-calls.json`` of several ``meclear bench-sweep equal-calls`` runs (one per
K and judge) and draws one panel per run: each method's whole ladder (every budget's mean
model calls per case and its expected recovery), MeClear's package default as one point,
the oracle as a horizontal line. Each panel's title names K, the judge and the number of
cases; the figure's title says what produced the numbers. Written as PNG and SVG. Also
prints the summary table of the runs (:func:`headline_table`): per K and judge, the package
default's E[recovery], deleted background, harm and calls, and each surrogate and LOO at its
fixed budget (MeClear minus it, with its interval), the best of them and the oracle.

Usage::

    python -m meclear_bench.headline_figure OUT_STEM RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .figures import load_pyplot

__all__ = ["BASELINES", "headline_table", "main", "targets_table", "write_headline_figure"]

BASELINES: tuple[str, ...] = (
    "contextcite",
    "contextcite-answers",
    "proxyspex",
    "proxyspex-answers",
    "loo",
)
"""The budgeted baselines of the summary table (the fixed-cost ones cannot spend more)."""

_STYLE = {
    "meclear": {"marker": "*", "markersize": 14, "color": "black", "linestyle": "none"},
}


def _k_of(doc: dict[str, Any]) -> str:
    command = doc.get("command", "")
    parts = command.split()
    return parts[parts.index("--k") + 1] if "--k" in parts else "?"


def write_headline_figure(docs: Sequence[dict[str, Any]], stem: str | Path) -> list[Path]:
    """One panel per equal-calls run: E[recovery] against mean calls per method.

    Args:
        docs: The runs' ``equal-calls.json`` documents (a K and a judge each).
        stem: The output path without extension (``.png`` and ``.svg`` are written).

    Returns:
        The files written.

    Raises:
        ValueError: No run given.
    """
    if not docs:
        raise ValueError("give at least one equal-calls run")
    plt = load_pyplot()
    cols = min(3, len(docs))
    rows = math.ceil(len(docs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
    for ax, doc in zip(axes.flat, docs, strict=False):
        for name, points in doc["curves"].items():
            if name in ("none", "oracle"):
                continue
            pts = sorted(
                (p["model_calls_per_case"] or 0.0, 100 * (p["expected_recovery"] or 0.0))
                for p in points
                if p.get("expected_recovery") is not None
            )
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            style = _STYLE.get(name, {"marker": "o", "markersize": 3})
            ax.plot(
                xs, ys, label=f"{name} (package default)" if name == "meclear" else name, **style
            )
        oracle = doc["curves"].get("oracle")
        if oracle and oracle[0].get("expected_recovery") is not None:
            ax.axhline(100 * oracle[0]["expected_recovery"], color="grey", ls="--", lw=1)
        ax.set_title(f"K = {_k_of(doc)}, judge {doc['judge']}, {doc['n_cases']} cases", fontsize=9)
        ax.set_xlabel("mean model calls per case (agent + judge)")
        ax.set_ylabel("E[recovery] (%)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(docs) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(
        "SIMULATED evidence world (not a real model): LoCoMo test split, every budget of "
        "every method; dashed: oracle",
        fontsize=10,
    )
    fig.tight_layout()
    out = Path(stem)
    written = []
    for ext in (".png", ".svg"):
        path = out.with_suffix(ext)
        fig.savefig(path, dpi=100)
        written.append(path)
    plt.close(fig)
    return written


def _cell(results: dict[str, Any], name: str, fixed: dict[str, str]) -> str:
    block = results["methods"].get(name, {})
    if block.get("status") != "ok":
        return "n/a"
    o = block["overall"]
    paired = results.get("paired", {}).get(name, {}).get("expected_recovery") or {}
    ci = paired.get("ci")
    diff = "" if paired.get("delta") is None else f"{100 * paired['delta']:+.1f}"
    span = f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else ""
    calls, bg = o["model_calls_per_case"] or 0, o["cleared_extra_background"] or 0
    return (
        f"{100 * (o['expected_recovery'] or 0):.1f} ({fixed.get(name, '?')}, "
        f"{calls:.0f} calls, bg {bg:.3f}): {diff}{span}"
    )


def headline_table(docs: Sequence[dict[str, Any]], key: str = "results") -> str:
    """The summary of the runs as a Markdown table (one row per K and judge).

    Args:
        docs: The runs' ``equal-calls.json`` documents.
        key: ``results`` (fixed budgets, the headline) or ``results_per_case``.

    Returns:
        The table: MeClear's E[recovery] / calls / deleted background / harm, each baseline's
        E[recovery] (its budget, calls, deleted background): MeClear minus it [95% CI], and
        MeClear minus the oracle.
    """
    head = ["K", "judge", "cases", "MeClear (package default)", *BASELINES, "oracle"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for doc in docs:
        results = doc[key]
        fixed = doc.get("fixed_rungs", {}) if key == "results" else {}
        fixed = fixed or {name: "per case" for name in BASELINES}
        me = results["methods"]["meclear"]["overall"]
        mine = (
            f"{100 * (me['expected_recovery'] or 0):.1f} ({me['model_calls_per_case'] or 0:.0f} "
            f"calls, bg {me['cleared_extra_background'] or 0:.3f}, harm "
            f"{100 * (me['harm_rate'] or 0):.1f}%)"
        )
        oracle = results.get("paired", {}).get("oracle", {}).get("expected_recovery") or {}
        ci = oracle.get("ci")
        gap = "n/a" if oracle.get("delta") is None else f"{100 * oracle['delta']:+.1f}"
        if ci:
            gap += f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
        cells = [_k_of(doc), doc["judge"], str(doc["n_cases"]), mine]
        cells += [_cell(results, name, fixed) for name in BASELINES]
        lines.append("| " + " | ".join([*cells, gap]) + " |")
    return "\n".join(lines)


def _interval(cell: dict[str, Any]) -> str:
    if cell.get("delta") is None:
        return "n/a"
    ci = cell.get("ci")
    text = f"{100 * cell['delta']:+.1f}"
    return text if not ci else f"{text} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def targets_table(docs: Sequence[dict[str, Any]]) -> str:
    """MeClear against the best budgeted baseline of each run, at fixed budgets.

    The best baseline is the one of :data:`BASELINES` with the highest E[recovery] at its
    fixed budget (answer-backed variants included).

    Args:
        docs: The runs' ``equal-calls.json`` documents.

    Returns:
        A Markdown table: K, judge, cases, MeClear's E[recovery] and calls, the best
        baseline (its budget) and its E[recovery], MeClear minus it [95% CI], deleted
        background per case (MeClear / the baseline), MeClear's harm, MeClear minus the
        oracle [95% CI].
    """
    lines = [
        "| K | judge | cases | MeClear E[recovery] (calls) | best baseline (budget) | its "
        "E[recovery] (calls) | MeClear - best [95% CI] | deleted bg MeClear / best | harm | "
        "MeClear - oracle [95% CI] |",
        "|" + "---|" * 10,
    ]
    for doc in docs:
        results = doc["results"]
        methods = results["methods"]
        ok = [n for n in BASELINES if methods.get(n, {}).get("status") == "ok"]
        if not ok:
            continue
        best = max(ok, key=lambda n: methods[n]["overall"]["expected_recovery"] or 0.0)
        me, them = methods["meclear"]["overall"], methods[best]["overall"]
        paired = results.get("paired", {})
        cells = [
            _k_of(doc),
            doc["judge"],
            str(doc["n_cases"]),
            f"{100 * (me['expected_recovery'] or 0):.1f} ({me['model_calls_per_case'] or 0:.0f})",
            f"{best} ({doc.get('fixed_rungs', {}).get(best, '?')})",
            f"{100 * (them['expected_recovery'] or 0):.1f} "
            f"({them['model_calls_per_case'] or 0:.0f})",
            _interval(paired.get(best, {}).get("expected_recovery") or {}),
            f"{me['cleared_extra_background'] or 0:.3f} / "
            f"{them['cleared_extra_background'] or 0:.3f}",
            f"{100 * (me['harm_rate'] or 0):.1f}%",
            _interval(paired.get("oracle", {}).get("expected_recovery") or {}),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m meclear_bench.headline_figure OUT_STEM RUN_DIR...``.

    Args:
        argv: The arguments (None: ``sys.argv[1:]``).

    Returns:
        The exit code.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: python -m meclear_bench.headline_figure OUT_STEM RUN_DIR...", file=sys.stderr)
        return 2
    docs = [
        json.loads((Path(d) / "equal-calls.json").read_text(encoding="utf-8")) for d in args[1:]
    ]
    for path in write_headline_figure(docs, args[0]):
        print(f"wrote {path}")
    print("\nMeClear against the best baseline at fixed budgets (SIMULATED):\n")
    print(targets_table(docs))
    print("\nFixed budgets (SIMULATED):\n")
    print(headline_table(docs))
    print("\nPer-case matching (SIMULATED):\n")
    print(headline_table(docs, "results_per_case"))
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
