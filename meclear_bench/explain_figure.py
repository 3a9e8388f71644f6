"""The decision of one case as a figure: LOO beside Shapley (with intervals), candidates tried.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 7, 11, 17-20.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from meclear_integrations.core import ClearanceReport

from .figures import load_pyplot

__all__ = ["draw_decision"]


def draw_decision(
    report: ClearanceReport,
    path: str | Path,
    *,
    targets: Sequence[str] = (),
    title: str = "",
) -> Path:
    """Draw the explanation figure of one clearance.

    Left: per memory, LOO d_i (Eq. 7) beside psi_i (Eq. 3/11) with its interval; harmful
    (psi_i < -tau) outlined red, cleared hatched, verified targets starred. Right: the nested
    candidates (Eq. 17) with v^(M minus C_j), admissible ones green, the selected one bold.

    Args:
        report: The engine's clearance report.
        path: The PNG written.
        targets: The verified targets (starred).
        title: The figure's title.

    Returns:
        ``path``.
    """
    plt = load_pyplot()
    atts = report.attributions
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, 0.5 * max(4, len(atts)) + 2), gridspec_kw={"width_ratios": [3, 2]}
    )
    ys = list(range(len(atts)))[::-1]
    h = 0.38
    for y, a in zip(ys, atts, strict=True):
        left.barh(
            y + h / 2,
            a.loo_effect if a.loo_effect is not None else 0.0,  # not measured: no bar
            h,
            color="#9aa5b1",
            label="LOO effect d_i" if y == ys[0] else None,
        )
        lo, hi = a.shapley_interval
        left.barh(
            y - h / 2,
            a.shapley,
            h,
            color="#3b82f6",
            edgecolor="red" if a.harmful else "none",
            linewidth=2 if a.harmful else 0,
            hatch="//" if a.cleared else None,
            xerr=[[max(0.0, a.shapley - lo)], [max(0.0, hi - a.shapley)]],
            capsize=3,
            label="Shapley psi_i (interval)" if y == ys[0] else None,
        )
    tau = report.config.harm_tolerance
    left.axvline(-tau, color="red", linestyle="--", linewidth=1, label=f"-tau = {-tau:g}")
    left.axvline(0, color="black", linewidth=0.8)
    left.set_yticks(
        ys,
        [
            f"{a.memory_id}{' *' if a.memory_id in targets else ''}"
            f"{' [harmful]' if a.harmful else ''}{' [cleared]' if a.cleared else ''}"
            for a in atts
        ],
    )
    left.set_xlabel("effect on task value")
    left.set_title("Per memory: LOO vs Shapley (* = verified target; hatched = cleared)")
    left.legend(fontsize=8, loc="lower right")

    cands = report.candidates
    chosen = set(report.cleared_ids)
    labels = [("{" + ", ".join(c.memory_ids) + "}") if c.memory_ids else "(none)" for c in cands]
    colors = ["#22c55e" if c.admissible else "#f97316" for c in cands]
    cy = list(range(len(cands)))[::-1]
    right.barh(cy, [c.value for c in cands], color=colors)
    for y, c in zip(cy, cands, strict=True):
        is_selected = set(c.memory_ids) == chosen
        mark = " <- selected" if is_selected else ""
        right.text(
            min(c.value, 1.0) + 0.02,
            y,
            f"v={c.value:.2f} g={c.gain:+.2f} {'rec' if c.recovered else 'no rec'}{mark}",
            va="center",
            fontsize=8,
            fontweight="bold" if is_selected else "normal",
        )
    right.set_yticks(cy, [f"C{c.size} clear {lab}" for c, lab in zip(cands, labels, strict=True)])
    right.set_xlim(0, 1.9)
    right.set_xlabel("v^(M minus C_j)  (green: admissible, Eq. 19)")
    right.set_title("Clearance candidates (Eq. 17-20)")
    fig.suptitle(title or "MeClear decision (SIMULATED evidence world)")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out
