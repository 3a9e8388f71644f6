"""``report.md``: the results as Markdown tables (labelled SIMULATED)."""

from __future__ import annotations

from typing import Any

__all__ = ["render_markdown", "table_by_group", "table_overall"]

_RATES = [
    ("recall_at_m", "Recall@\\|M\\|"),
    ("complete_recall", "Complete"),
    ("exact_match", "Exact"),
    ("recovery", "Recovery"),
]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _num(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _delta(x: float | None, count: bool) -> str:
    """A paired difference: memories per case when ``count``, else percentage points."""
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if count else f"{100 * x:+.1f}"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{1e3 * seconds:.2f}"


def _with_ci(x: float | None, ci: list[float] | None) -> str:
    if ci is None:
        return _pct(x)
    return f"{_pct(x)} [{_pct(ci[0])}, {_pct(ci[1])}]"


def _ok(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: b for n, b in results["methods"].items() if b.get("status") == "ok"}


def table_overall(results: dict[str, Any]) -> str:
    """Overall metrics per method, rates in % with 95% intervals."""
    head = (
        "| method | n | Recall@\\|M\\| | Complete | Exact | Recovery | extra bg / case | "
        "cleared extra bg / case | calls / case | coalitions / case | ms / case | ECDF@1/2/3 |"
    )
    lines = [head, "|" + "---|" * 12]
    for name, block in _ok(results).items():
        o, ci = block["overall"], block["ci"]
        ecdf = "/".join(_pct(o["target_rank_ecdf"][k]) for k in ("1", "2", "3"))
        extra = _num(o["extra_background"], 3)
        if ci.get("extra_background"):
            lo, hi = ci["extra_background"]
            extra += f" [{lo:.3f}, {hi:.3f}]"
        lines.append(
            f"| {name} | {o['n_cases']} | "
            + " | ".join(_with_ci(o[k], ci.get(k)) for k, _ in _RATES)
            + f" | {extra} | {_num(o['cleared_extra_background'], 3)} | "
            f"{_num(o['evaluator_calls_per_case'], 1)} | {_num(o['coalitions_per_case'], 1)} | "
            f"{_ms(o['wall_seconds_per_case'])} | {ecdf} |"
        )
    return "\n".join(lines)


def table_by_group(results: dict[str, Any], group: str) -> str:
    """Rates per ``by_structure`` / ``by_fault_type`` group and method."""
    head = (
        "| "
        + group.removeprefix("by_").replace("_", " ")
        + " | method | n | "
        + " | ".join(label for _, label in _RATES)
        + " | extra bg / case |"
    )
    lines = [head, "|" + "---|" * 8]
    methods = _ok(results)
    groups = sorted({g for b in methods.values() for g in b[group]})
    for g in groups:
        for name, block in methods.items():
            row = block[group].get(g)
            if row is None:
                continue
            cis = block.get("ci_by_structure", {}).get(g, {}) if group == "by_structure" else {}
            lines.append(
                f"| {g} | {name} | {row['n_cases']} | "
                + " | ".join(_with_ci(row[k], cis.get(k)) for k, _ in _RATES)
                + f" | {_num(row['extra_background'], 3)} |"
            )
    return "\n".join(lines)


def _table_paired(results: dict[str, Any]) -> str:
    metrics = ["recall_at_m", "complete_recall", "exact_match", "recovery", "extra_background"]
    lines = [
        "| comparator | " + " | ".join(metrics) + " |",
        "|" + "---|" * (len(metrics) + 1),
    ]
    for name, block in results["paired"].items():
        cells = []
        for metric in metrics:
            p = block[metric]
            count = metric == "extra_background"
            ci = "" if p["ci"] is None else f" [{_delta(p['ci'][0], count)}, "
            ci += "" if p["ci"] is None else f"{_delta(p['ci'][1], count)}]"
            cells.append(f"{_delta(p['delta'], count)}{ci} W/L {p['wins']}/{p['losses']}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(results: dict[str, Any], *, command: str = "") -> str:
    """The full report."""
    ref = results.get("reference")
    parts = [
        "# MeClear benchmark report",
        "",
        "**SIMULATED**: task values come from the simulated evidence world (a documented "
        "stand-in for an LLM agent and judge), not from a real model.",
        "",
        f"Cases: {results['n_cases']} (source: {results.get('source') or 'n/a'}). "
        f"Rates in %, 95% two-level cluster-bootstrap intervals "
        f"({results['bootstrap']['replicates']} replicates; conversations, then queries).",
    ]
    if command:
        parts += ["", f"Command: `{command}`"]
    parts += [
        "",
        "Definitions: Recall@|M| is target-micro over the top-|M| of each method's harm "
        "ranking; Complete = all targets flagged; Exact = flagged set equals the targets; "
        "Recovery = every post-clearance trial correct; extra bg = flagged non-targets per "
        "case; cleared extra bg = deleted non-targets per case. Clean cases (no targets) "
        "count only for Recovery, extra background and cost.",
        "",
        "## Overall",
        "",
        table_overall(results),
        "",
        "## By structure",
        "",
        table_by_group(results, "by_structure"),
        "",
        "## By fault type",
        "",
        table_by_group(results, "by_fault_type"),
    ]
    if results["paired"]:
        parts += [
            "",
            f"## Paired: {ref} minus comparator",
            "",
            "Deltas in percentage points (extra background in memories per case), 95% "
            "interval, case-level wins/losses of the reference.",
            "",
            _table_paired(results),
        ]
    not_run = {n: b["reason"] for n, b in results["methods"].items() if b.get("status") != "ok"}
    if not_run:
        parts += ["", "## Not run", ""] + [f"- `{n}`: {r}" for n, r in not_run.items()]
    if results.get("funnel"):
        parts += ["", "## Case funnel", "", "```", _render_funnel(results["funnel"]), "```"]
    if results.get("skipped_lines"):
        parts += ["", "## Skipped case lines", ""] + [
            f"- line {e['line']}: {e['error']}" for e in results["skipped_lines"]
        ]
    if results.get("failures"):
        parts += ["", "## Method failures (cases excluded from the cohort)", ""] + [
            f"- `{f['method']}` on `{f['case_id']}`: {f['error']}" for f in results["failures"]
        ]
    parts += [
        "",
        "## Figures",
        "",
        "![metrics by method](metrics_by_method.png)",
        "![metrics by structure](metrics_by_structure.png)",
        "![risk frontier](risk_frontier.png)",
        "![target-rank ECDF](target_rank_ecdf.png)",
        "",
    ]
    return "\n".join(parts)


def _render_funnel(funnel: Any, indent: int = 0) -> str:
    pad = "  " * indent
    if isinstance(funnel, dict):
        out = []
        for key, value in funnel.items():
            if isinstance(value, dict | list):
                out.append(f"{pad}{key}:")
                out.append(_render_funnel(value, indent + 1))
            else:
                out.append(f"{pad}{key}: {value}")
        return "\n".join(out)
    if isinstance(funnel, list):
        return "\n".join(_render_funnel(v, indent) for v in funnel)
    return f"{pad}{funnel}"
