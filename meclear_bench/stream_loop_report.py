"""Outputs of ``meclear bench --stream --mode``: JSON, Markdown, queries and the figure.

The figure plots accuracy over the simulated clock for each loop mode (none / inline /
background): the share of correct answers among the queries of the last ``window``
seconds, every conversation's stream on one clock. Figures are SIMULATED.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .stream_loop import LoopRun, loop_summary

__all__ = ["loop_results", "render_loop_markdown", "write_loop_outputs"]


def loop_results(runs: list[LoopRun], *, command: str) -> dict[str, Any]:
    """The results document of the loop runs.

    Args:
        runs: One run per mode.
        command: The command that reproduces them.

    Returns:
        ``{"simulated": True, "command", "modes": {mode: summary}}``.
    """
    return {
        "simulated": True,
        "command": command,
        "modes": {run.mode: loop_summary(run) for run in runs},
    }


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def render_loop_markdown(results: dict[str, Any]) -> str:
    """The Markdown table of the loop runs.

    Args:
        results: :func:`loop_results`.

    Returns:
        The report.
    """
    lines = [
        "# The production loop over the query streams (SIMULATED)",
        "",
        f"`{results['command']}`",
        "",
        "| mode | accuracy | request-path model calls | added latency mean / p99 (s) "
        "| audit calls | time to fix, median (s) | fixed / never | jobs lost "
        "| off-topic withheld (same fact) | proposed for review (true memories) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, s in results["modes"].items():
        fix = s["time_to_fix"]
        lost = s["jobs"].get("lost", "-") if s["jobs"] else "-"
        review = s.get("review") or {}
        proposed = f"{len(review['proposed'])} ({len(review['true_proposed'])})" if review else "-"
        lines.append(
            f"| {mode} | {s['accuracy']:.1%} | {s['request_model_calls']} "
            f"| {_fmt(s['request_seconds_mean'])} / {_fmt(s['request_seconds_p99'])} "
            f"| {s['audit_model_calls']} | {_fmt(fix['median_seconds'])} "
            f"| {fix['fixed']} / {fix['never_fixed']} | {lost} "
            f"| {s.get('off_topic_withheld', 0)} ({s.get('same_fact_withheld', 0)}) "
            f"| {proposed} |"
        )
    settings = next(iter(results["modes"].values()))["settings"]
    for mode, s in results["modes"].items():
        storm = s.get("reask") or {}
        if storm.get("reask"):
            bounds = "on" if storm["audit_bounds"] else "off"
            lines += [
                "",
                f"Re-ask storm ({mode}, audit bounds {bounds}): every query asked "
                f"{storm['reask'] + 1} times; {storm['asks']} asks of {storm['questions']} "
                f"questions; audits per question max {storm['audits_max']}, mean "
                f"{storm['audits_mean']:.2f}; audit model calls per question, mean "
                f"{storm['audit_calls_mean']:.1f}; audits per storm of {storm['reask'] + 1} "
                f"asks max {storm['storm_audits_max']}, mean "
                f"{storm['storm_audits_mean']:.2f} ({storm['storms']} storms).",
            ]
    lines += [
        "",
        f"Simulated clock: {settings['call_seconds']} s per model call, a query every "
        f"{settings['interval_seconds']} s per conversation, {settings['workers']} audit "
        "worker(s). Inline latency is modelled (2 calls per engine round); background "
        "latency is measured on this machine (ledger read and durable enqueue).",
        "",
    ]
    return "\n".join(lines)


def _figure(runs: list[LoopRun], path: Path, window: float) -> Path:
    from .figures import load_pyplot

    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for run in runs:
        points = sorted((o.time, o.correct) for o in run.outcomes)
        if not points:
            continue
        times = [t for t, _ in points]
        curve = []
        for t in times:
            recent = [c for s, c in points if t - window < s <= t]
            curve.append(sum(recent) / len(recent))
        ax.plot(times, curve, label=run.mode)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel(f"accuracy over the last {window:g} s")
    ax.set_ylim(0, 1.02)
    ax.set_title("Accuracy over time: none / inline / background (SIMULATED)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_loop_outputs(
    out_dir: Path, runs: list[LoopRun], results: dict[str, Any], *, figures: bool = True
) -> dict[str, Path]:
    """loop_results.json, loop_report.md, loop_queries.jsonl and loop_accuracy.png.

    Args:
        out_dir: The output directory.
        runs: The runs.
        results: :func:`loop_results`.
        figures: Draw the figure.

    Returns:
        Output name -> file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {
        "results": out_dir / "loop_results.json",
        "report": out_dir / "loop_report.md",
        "queries": out_dir / "loop_queries.jsonl",
    }
    written["results"].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    written["report"].write_text(render_loop_markdown(results), encoding="utf-8")
    with open(written["queries"], "w", encoding="utf-8") as handle:
        for run in runs:
            for o in run.outcomes:
                handle.write(json.dumps({"mode": run.mode, **o.model_dump(mode="json")}) + "\n")
    if figures:
        interval = runs[0].settings["interval_seconds"] if runs else 1.0
        written["figure"] = _figure(runs, out_dir / "loop_accuracy.png", 25 * interval)
    return written
