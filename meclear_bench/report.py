"""``report.md``: the results as Markdown tables (labelled SIMULATED, or with the models)."""

from __future__ import annotations

from typing import Any

from .labels import report_note

__all__ = [
    "render_markdown",
    "table_accuracy",
    "table_by_group",
    "table_cost",
    "table_overall",
]

_RATES = [
    ("recall_at_m", "Recall@\\|M\\|"),
    ("complete_recall", "Complete"),
    ("exact_match", "Exact"),
    ("deleted_exact", "Exact (deleted)"),
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


def _ci_count(x: float | None, ci: list[float] | None) -> str:
    out = _num(x, 3)
    return out if not ci else f"{out} [{ci[0]:.3f}, {ci[1]:.3f}]"


def table_overall(results: dict[str, Any]) -> str:
    """Overall metrics per method, rates in % with 95% intervals.

    Args:
        results: The ``results.json`` document.

    Returns:
        The Markdown table.
    """
    head = (
        "| method | n | Recall@\\|M\\| | Complete | Exact | Exact (deleted) | Recovery | "
        "E[recovery] | evidence correct | verified in-run | extra bg / case | deleted bg / case | "
        "model calls / case | coalitions / case | evaluator calls / case | unverified | "
        "ECDF@1/2/3 |"
    )
    lines = [head, "|" + "---|" * 17]
    for name, block in _ok(results).items():
        o, ci = block["overall"], block["ci"]
        ecdf = "/".join(_pct(o["target_rank_ecdf"][k]) for k in ("1", "2", "3"))
        lines.append(
            f"| {name} | {o['n_cases']} | "
            + " | ".join(
                _with_ci(o[k], ci.get(k))
                for k in (
                    "recall_at_m",
                    "complete_recall",
                    "exact_match",
                    "deleted_exact",
                    "recovery",
                    "expected_recovery",
                    "evidence_correct",
                )
            )
            + f" | {_pct(o['verified_recovery'])}"
            + f" | {_ci_count(o['extra_background'], ci.get('extra_background'))}"
            + f" | {_ci_count(o['cleared_extra_background'], ci.get('cleared_extra_background'))}"
            + f" | {_num(o['model_calls_per_case'], 1)} | {_num(o['coalitions_per_case'], 1)}"
            + f" | {_num(o['evaluator_calls_per_case'], 1)} | {_pct(o['unverified_rate'])}"
            + f" | {ecdf} |"
        )
    return "\n".join(lines)


def table_accuracy(results: dict[str, Any]) -> str:
    """Answer accuracy with the returned context, paired with no clearance, and harm.

    Args:
        results: The ``results.json`` document.

    Returns:
        The Markdown table.
    """
    lines = [
        "| method | n | accuracy | accuracy - none [95% CI] | harm rate [95% CI] | "
        "Recovery | model calls / case | unverified |",
        "|" + "---|" * 8,
    ]
    for name, block in _ok(results).items():
        o, ci = block["overall"], block["ci"]
        gain, harm = ci.get("accuracy_gain"), ci.get("harm_rate")
        gain_txt = _delta(o["accuracy_gain"], False)
        if gain:
            gain_txt += f" [{_delta(gain[0], False)}, {_delta(gain[1], False)}]"
        lines.append(
            f"| {name} | {o['n_cases']} | {_pct(o['accuracy'])} | {gain_txt} | "
            f"{_with_ci(o['harm_rate'], harm)} | {_pct(o['recovery'])} | "
            f"{_num(o['model_calls_per_case'], 1)} | {_pct(o['unverified_rate'])} |"
        )
    return "\n".join(lines)


def table_cost(results: dict[str, Any]) -> str:
    """What one case costs a user of each method (real models: calls and tokens).

    Args:
        results: The ``results.json`` document.

    Returns:
        The Markdown table.
    """
    lines = [
        "| method | n | model calls / case | agent | judge | prompt tokens / case | "
        "completion tokens / case |",
        "|" + "---|" * 7,
    ]
    for name, block in _ok(results).items():
        o = block["overall"]
        lines.append(
            f"| {name} | {o['n_cases']} | {_num(o['model_calls_per_case'], 1)} | "
            f"{_num(o['agent_calls_per_case'], 1)} | {_num(o['judge_calls_per_case'], 1)} | "
            f"{_num(o.get('prompt_tokens_per_case'), 0)} | "
            f"{_num(o.get('completion_tokens_per_case'), 0)} |"
        )
    return "\n".join(lines)


def _cost_section(results: dict[str, Any]) -> list[str]:
    if not any(
        b["overall"].get("prompt_tokens_per_case") is not None for b in _ok(results).values()
    ):
        return []
    parts = [
        "",
        "## Cost",
        "",
        "Per case, what a user running only that method pays (agent, judge and rater calls, "
        "identical calls within a query made once; a cached reply counts at its price).",
        "",
        table_cost(results),
    ]
    calls = results.get("calls")
    if calls:
        parts += [
            "",
            f"This run made {calls['provider_calls']} model calls ({calls['cache_hits']} "
            f"more were answered from the response cache; methods share it): "
            f"{calls['prompt_tokens']} prompt and {calls['completion_tokens']} completion "
            "tokens" + (" (partly estimated)" if calls.get("tokens_estimated") else "") + ".",
        ]
    return parts


def table_by_group(results: dict[str, Any], group: str) -> str:
    """Rates per ``by_structure`` / ``by_fault_type`` group and method.

    Args:
        results: The ``results.json`` document.
        group: ``by_structure`` or ``by_fault_type``.

    Returns:
        The Markdown table.
    """
    head = (
        "| "
        + group.removeprefix("by_").replace("_", " ")
        + " | method | n | "
        + " | ".join(label for _, label in _RATES)
        + " | extra bg / case |"
    )
    lines = [head, "|" + "---|" * (len(_RATES) + 4)]
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
    metrics = [
        "recall_at_m",
        "exact_match",
        "deleted_exact",
        "recovery",
        "cleared_extra_background",
    ]
    lines = [
        "| comparator | " + " | ".join(metrics) + " |",
        "|" + "---|" * (len(metrics) + 1),
    ]
    for name, block in results["paired"].items():
        cells = []
        for metric in metrics:
            p = block[metric]
            count = metric.endswith("extra_background")
            ci = "" if p["ci"] is None else f" [{_delta(p['ci'][0], count)}, "
            ci += "" if p["ci"] is None else f"{_delta(p['ci'][1], count)}]"
            cells.append(f"{_delta(p['delta'], count)}{ci} W/L {p['wins']}/{p['losses']}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(results: dict[str, Any], *, command: str = "") -> str:
    """The full report.

    Args:
        results: The ``results.json`` document.
        command: The command that reproduces the run.

    Returns:
        ``report.md``'s text.
    """
    ref = results.get("reference")
    parts = [
        "# MeClear benchmark report",
        "",
        report_note(results),
        "",
        f"Cases: {results['n_cases']} (source: {results.get('source') or 'n/a'}); judge: "
        f"`{results.get('judge', 'reference')}`; world temperature: "
        f"{'as in each case' if results.get('temperature') is None else results['temperature']}. "
        f"Rates in %, 95% two-level cluster-bootstrap intervals "
        f"({results['bootstrap']['replicates']} replicates; conversations, then queries).",
    ]
    if command:
        parts += ["", f"Command: `{command}`"]
    parts += [
        "",
        "Definitions: Recall@|M| is target-micro over the top-|M| of each method's harm "
        "ranking; Complete = all targets flagged; Exact = flagged set (before any "
        "verification) equals the targets; Exact (deleted) = deleted set equals the targets; "
        "Recovery = every fresh trial on the returned context answers correctly (trials no "
        "method saw; exact match with the reference, whatever the judge; "
        f"{results.get('recovery_trials', 2)} trials); E[recovery] = its exact probability; "
        "evidence correct = the returned context's evidence favours the reference outright "
        "(stable under the reader's temperature); verified in-run = every trial the method "
        "itself ran on its "
        "returned context passed its judge; extra bg = flagged non-targets per case; deleted "
        "bg = deleted non-targets per case; model calls = agent + judge calls, deduplicated "
        "as a user's cache would; unverified = the method abstained (inconsistent verdicts). "
        "Clean cases (no targets) count only for recovery, accuracy, background and cost.",
        "",
        "## Overall",
        "",
        table_overall(results),
        "",
        "## Answer accuracy with the returned context",
        "",
        "Accuracy = P(correct answer) with the returned context; minus none = paired with "
        "no clearance on the same cases (cluster-bootstrap CI); harm rate = mean of "
        "max(0, accuracy(none) - accuracy(method)), the share of correct answers the method "
        "made wrong.",
        "",
        table_accuracy(results),
        *_cost_section(results),
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
        parts += ["", "## Not run or failed", ""] + [f"- `{n}`: {r}" for n, r in not_run.items()]
    if results.get("funnel"):
        parts += ["", "## Case funnel", "", "```", _render_funnel(results["funnel"]), "```"]
    if results.get("skipped_lines"):
        parts += ["", "## Skipped case lines", ""] + [
            f"- line {e['line']}: {e['error']}" for e in results["skipped_lines"]
        ]
    if results.get("failures"):
        parts += ["", "## Method failures", ""] + [
            f"- `{f['method']}` on `{f['case_id']}`: {f['error']}" for f in results["failures"]
        ]
    parts += [
        "",
        "## Figures",
        "",
        "![metrics by method](metrics_by_method.png)",
        "![accuracy vs none](accuracy_vs_none.png)",
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
