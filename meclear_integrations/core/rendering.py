"""Plain-text rendering of a ClearanceReport."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import ClearanceReport

__all__ = ["render_report"]


def _fmt(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:+.3f}"


def render_report(report: ClearanceReport) -> str:
    """The report as a plain-text table: one row per memory, then the clearance.

    Args:
        report: a clearance report.

    Returns:
        The table and a summary of what was cleared and what it cost.
    """
    width = max([len("memory"), *(len(a.memory_id) for a in report.attributions)])
    lines = [
        f"{'memory':<{width}}  {'LOO d':>7}  {'LOO label':<12}  {'Shapley':>8}  "
        f"{'interval':<17}  {'rank':>4}  {'harmful':<7}  cleared",
    ]
    for a in report.attributions:
        lo, hi = a.shapley_interval
        lines.append(
            f"{a.memory_id:<{width}}  {_fmt(a.loo_effect):>7}  {a.loo_label or 'n/a':<12}  "
            f"{a.shapley:>+8.3f}  [{lo:+.2f}, {hi:+.2f}]  {a.rank:>4}  "
            f"{'yes' if a.harmful else 'no':<7}  {'yes' if a.cleared else 'no'}"
        )
    if report.interactions:
        lines.append("")
        lines.append("pairwise interactions (Eq. 15):")
        for p in report.interactions:
            lines.append(f"  {p.memory_ids[0]} x {p.memory_ids[1]}: {p.omega:+.3f} {p.label}")
    lines.append("")
    lines.append("clearance candidates (Eq. 17-19):")
    for c in report.candidates:
        ids = ", ".join(c.memory_ids) or "(none)"
        lines.append(
            f"  j={c.size} clear {{{ids}}}: value {c.value:.3f}, gain {c.gain:+.3f}, "
            f"recovered {'yes' if c.recovered else 'no'}, "
            f"admissible {'yes' if c.admissible else 'no'}"
        )
    lines.append("")
    lines.append(
        f"baseline v(M) {_fmt(report.baseline_value)} -> final {_fmt(report.final_value)}; "
        f"cleared [{', '.join(report.cleared_ids)}]; "
        f"recovered {'yes' if report.recovered else 'no'}"
    )
    if report.carrier_status is not None:
        lines.append(f"carriers ({report.carrier_status}, {report.cost.carrier_calls} calls):")
        for carrier in report.carriers:
            state = "withheld" if carrier.withheld else "kept"
            lines.append(f"  {carrier.memory_id} alone answers {carrier.answer[:80]!r} ({state})")
    if report.status == "skipped" and report.status_reason:
        lines.append(f"skipped: {report.status_reason}")
    failure = getattr(report, "failure", None)
    if failure is not None:
        usable = "usable" if failure.estimates_usable else "not usable"
        lines.append(
            f"FAILED OPEN ({failure.reason} in {failure.stage}): context returned unchanged; "
            f"{len(failure.failed_coalitions)} failed coalition(s); estimates {usable}"
        )
        lines.append(f"  {failure.error_type}: {failure.error}")
    if report.early_exit:
        lines.append("early exit: the full context already recovers; attribution skipped")
    elif report.clearance_search == "prior":
        lines.append(
            f"prior candidate [{', '.join(report.prior_ids)}] verified; attribution skipped"
        )
    elif report.clearance_search == "recency":
        lines.append(
            f"recency candidate [{', '.join(report.recency_ids)}] verified; attribution skipped"
        )
    elif report.estimator:
        lines.append(f"estimator {report.estimator}, {report.clearance_search} clearance")
    cost = report.cost
    lines.append(
        f"cost: {cost.coalitions} coalitions, {cost.evaluator_calls} evaluator calls, "
        f"{cost.cache_hits} cache hits, {cost.rounds} rounds, {cost.wall_seconds:.3f}s"
    )
    return "\n".join(lines)
