"""PNG figures of a results document (matplotlib, Agg backend, imported lazily).

Every figure's title says where the task values come from (:mod:`.labels`): SIMULATED
for the simulated evidence world, else the agent and judge models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .labels import figure_label, run_label

__all__ = ["FIGURE_FILES", "load_pyplot", "write_figures"]

FIGURE_FILES = (
    "metrics_by_method.png",
    "accuracy_vs_none.png",
    "metrics_by_structure.png",
    "risk_frontier.png",
    "target_rank_ecdf.png",
)

_RATES = [
    ("recall_at_m", "Recall@|M|"),
    ("complete_recall", "Complete"),
    ("exact_match", "Exact"),
    ("deleted_exact", "Exact (deleted)"),
    ("recovery", "Recovery (unseen)"),
]


def load_pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend; ImportError naming the extra when missing."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'figures need matplotlib: pip install "meclear-integrations[bench]"'
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ok(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: b for n, b in results["methods"].items() if b.get("status") == "ok"}


def _v(x: float | None) -> float:
    return float("nan") if x is None else 100.0 * x


def _metrics_by_method(plt: Any, results: dict[str, Any], path: Path) -> None:
    methods = _ok(results)
    names = list(methods)
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(_RATES) * max(1, len(names)) / 3, 4))
    width = 0.8 / max(1, len(names))
    for m, name in enumerate(names):
        block = methods[name]
        xs = [r + m * width for r in range(len(_RATES))]
        vals = [_v(block["overall"][k]) for k, _ in _RATES]
        lo, hi = [], []
        for (k, _), v in zip(_RATES, vals, strict=True):
            ci = block["ci"].get(k)
            lo.append(0.0 if ci is None else max(0.0, v - 100 * ci[0]))
            hi.append(0.0 if ci is None else max(0.0, 100 * ci[1] - v))
        ax.bar(xs, vals, width, label=name, yerr=[lo, hi], capsize=2)
    ax.set_xticks([r + 0.4 - width / 2 for r in range(len(_RATES))], [lab for _, lab in _RATES])
    ax.set_ylim(0, 105)
    ax.set_ylabel("%")
    ax.set_title(f"Metrics by method ({run_label(results)}; 95% cluster-bootstrap CI)")
    ax.legend(fontsize=8, ncol=min(3, max(1, len(names))))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _accuracy_vs_none(plt: Any, results: dict[str, Any], path: Path) -> None:
    """Accuracy gain over no clearance (paired CI) and harm rate per method."""
    methods = {n: b for n, b in _ok(results).items() if n != "none"}
    names = list(methods)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.8 + 0.45 * max(3, len(names))))
    ys = list(range(len(names)))
    for ax, key, label in (
        (left, "accuracy_gain", "accuracy(method) - accuracy(none), pp"),
        (right, "harm_rate", "harm rate: correct answers made wrong, %"),
    ):
        vals = [_v(methods[n]["overall"][key]) for n in names]
        lo, hi = [], []
        for n, v in zip(names, vals, strict=True):
            ci = methods[n]["ci"].get(key)
            lo.append(0.0 if ci is None else max(0.0, v - 100 * ci[0]))
            hi.append(0.0 if ci is None else max(0.0, 100 * ci[1] - v))
        ax.errorbar(vals, ys, xerr=[lo, hi], fmt="o", capsize=3)
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_yticks(ys, names)
        ax.set_xlabel(label)
    left.invert_yaxis()
    right.invert_yaxis()
    judge = results.get("judge", "reference")
    fig.suptitle(
        f"Answer accuracy vs no clearance, judge {judge} ({figure_label(results)}; 95% CI)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _metrics_by_structure(plt: Any, results: dict[str, Any], path: Path) -> None:
    methods = _ok(results)
    names = list(methods)
    structures = sorted({s for b in methods.values() for s in b["by_structure"]})
    fig, axes = plt.subplots(1, len(_RATES), figsize=(4 * len(_RATES), 3.8), sharey=True)
    width = 0.8 / max(1, len(names))
    for ax, (key, label) in zip(axes, _RATES, strict=True):
        for m, name in enumerate(names):
            rows = methods[name]["by_structure"]
            vals = [_v(rows[s][key]) if s in rows else float("nan") for s in structures]
            ax.bar([i + m * width for i in range(len(structures))], vals, width, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(structures))], structures)
        ax.set_title(label)
        ax.set_ylim(0, 105)
    axes[0].set_ylabel("%")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.suptitle(f"Metrics by structure ({run_label(results)})")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _risk_frontier(plt: Any, results: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, block in _ok(results).items():
        o = block["overall"]
        if o["complete_recall"] is None:
            continue
        risk = 100 * (1 - o["complete_recall"])
        extra = o["extra_background"] or 0.0
        recovery = o["recovery"] or 0.0
        ax.scatter([risk], [extra], s=40 + 600 * recovery, alpha=0.6)
        ax.annotate(
            f"{name}\nExact {_v(o['exact_match']):.1f}% | Rec. {_v(o['recovery']):.1f}%",
            (risk, extra),
            fontsize=8,
            xytext=(6, 6),
            textcoords="offset points",
        )
    ax.set_xlabel("Residual-error risk, 1 - Complete Set Recall (pp)")
    ax.set_ylabel("Extra background memories flagged / case")
    ax.set_title(f"Risk frontier ({run_label(results)})\nlower-left is better; bubble = Recovery")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _rank_ecdf(plt: Any, results: dict[str, Any], ecdf: dict[str, list[float]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, curve in ecdf.items():
        ks = list(range(1, len(curve) + 1))
        ax.step(ks, [100 * c for c in curve], where="post", marker="o", label=name)
    ax.set_xlabel("Rank cutoff k")
    longest = max((len(c) for c in ecdf.values()), default=1)
    ax.set_xticks(range(1, longest + 1))
    ax.set_ylabel("Injected targets with rank <= k (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Target-memory rank ECDF ({run_label(results)})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_figures(
    results: dict[str, Any], ecdf: dict[str, list[float]], out_dir: str | Path
) -> list[Path]:
    """Write the PNGs into ``out_dir``; ``ecdf`` maps method -> coverage at k = 1..K.

    Args:
        results: The ``results.json`` document.
        ecdf: Method -> share of targets ranked within k, for k = 1..K.
        out_dir: The output directory.

    Returns:
        The files written.
    """
    plt = load_pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FIGURE_FILES]
    _metrics_by_method(plt, results, paths[0])
    _accuracy_vs_none(plt, results, paths[1])
    _metrics_by_structure(plt, results, paths[2])
    _risk_frontier(plt, results, paths[3])
    _rank_ecdf(plt, results, ecdf, paths[4])
    return paths
