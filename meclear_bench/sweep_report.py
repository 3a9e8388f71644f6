"""Markdown tables and PNG figures of the sweeps (SIMULATED)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .figures import load_pyplot

__all__ = ["cost_table", "render_sweep", "write_sweep_figure"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _num(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _gain(row: dict[str, Any]) -> str:
    ci = row["ci"].get("accuracy_gain")
    text = "n/a" if row["accuracy_gain"] is None else f"{100 * row['accuracy_gain']:+.1f}"
    return text if not ci else f"{text} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _harm(row: dict[str, Any]) -> str:
    ci = row["ci"].get("harm_rate")
    text = _pct(row["harm_rate"])
    return text if not ci else f"{text} [{_pct(ci[0])}, {_pct(ci[1])}]"


def _tune_table(doc: dict[str, Any]) -> str:
    metric = doc.get("metric", "recovery")
    checks = doc.get("check_settings", [])
    head = [f"{metric} ({s})" for s in doc["settings"]] + [f"{metric} ({c}, check)" for c in checks]
    lines = [f"Objective: {doc['objective']}.", ""]
    for name, block in doc["methods"].items():
        chosen = block["chosen"]
        lines += [f"### {name}", ""]
        if block.get("widened"):
            lines += [f"Grid widened: {'; '.join(block['widened'])}.", ""]
        lines += [
            "| settings | "
            + " | ".join(head)
            + " | deleted bg / case (max) | model calls / case | objective |",
            "|" + "---|" * (len(head) + 4),
        ]
        ranked = sorted(range(len(block["rows"])), key=lambda i: -block["rows"][i]["objective"])
        for i in ranked:
            row = block["rows"][i]
            pts = row["points"]
            mark = " **(chosen)**" if i == chosen else ""
            bg = max((p["cleared_extra_background"] or 0.0) for p in pts.values())
            label = ", ".join(f"{k}={v}" for k, v in row["settings"].items()) or "no knobs"
            check = block.get("check", {}) if i == chosen else {}
            cells = [_pct(pts[s].get(metric)) for s in doc["settings"]]
            cells += [_pct(check[c].get(metric)) if c in check else "" for c in checks]
            lines.append(
                f"| {label}{mark} | "
                + " | ".join(cells)
                + f" | {bg:.3f}{'' if row['admissible'] else ' (over)'} | "
                f"{_num(row['model_calls'])} | {_pct(row['objective'])} |"
            )
        lines.append("")
    return "\n".join(lines)


def _budget_table(doc: dict[str, Any]) -> str:
    lines = [
        "| method | budget | Recovery | Exact (flagged) | Exact (deleted) | deleted bg / case "
        "| model calls / case | coalitions / case |",
        "|" + "---|" * 8,
    ]
    for name, rows in doc["curves"].items():
        for r in rows:
            lines.append(
                f"| {name} | {r['budget']:g} | {_pct(r['recovery'])} | {_pct(r['exact_match'])} "
                f"| {_pct(r['deleted_exact'])} | {_num(r['cleared_extra_background'], 3)} | "
                f"{_num(r['model_calls_per_case'])} | {_num(r['coalitions_per_case'])} |"
            )
    return "\n".join(lines)


def _permutation_table(doc: dict[str, Any]) -> str:
    lines = [
        "| configuration | L | Recall@\\|M\\| | Complete | Exact | extra bg / case | Recovery "
        "| model calls / case |",
        "|" + "---|" * 8,
    ]
    for r in doc["rows"]:
        lines.append(
            f"| {r['preset']} | {r['permutations']} | {_pct(r['recall_at_m'])} | "
            f"{_pct(r['complete_recall'])} | {_pct(r['exact_match'])} | "
            f"{_num(r['extra_background'], 3)} | {_pct(r['recovery'])} | "
            f"{_num(r['model_calls_per_case'])} |"
        )
    return "\n".join(lines)


def judge_table(doc: dict[str, Any]) -> str:
    """The "Without a reference answer" table: one row per judge signal.

    Args:
        doc: The judge sweep's document.

    Returns:
        The Markdown table.
    """
    lines = [
        "| judge | Recovery | accuracy - none [95% CI] | harm rate [95% CI] | "
        "cleared / clean case | unverified | model calls / query |",
        "|" + "---|" * 7,
    ]
    for r in doc["rows"]:
        lines.append(
            f"| `{r['judge']}` | {_pct(r['recovery'])} | {_gain(r)} | {_harm(r)} | "
            f"{_num(r['cleared_per_clean_case'], 3)} | {_pct(r['unverified_rate'])} | "
            f"{_num(r['model_calls_per_case'])} |"
        )
    return "\n".join(lines)


def _calls(group: dict[str, Any]) -> str:
    if not group.get("n"):
        return "n/a"
    return f"{group['agent_calls']:.1f} + {group['judge_calls']:.1f} = {group['model_calls']:.1f}"


def cost_table(doc: dict[str, Any]) -> str:
    """The docs' "Cost" rows: model calls per clean and per faulty query, per preset.

    Args:
        doc: The cost sweep's document.

    Returns:
        The Markdown table.
    """
    lines = [
        "| preset | clean query: agent + judge | faulty query: agent + judge (max) | "
        "Recovery (faulty) | Recall@\\|M\\| | harm rate | deleted bg / case | unverified |",
        "|" + "---|" * 8,
    ]
    for r in doc["rows"]:
        clean, faulty = r["clean"], r["faulty"]
        worst = f" ({faulty['max_model_calls']})" if faulty.get("n") else ""
        everyone = [g for g in (clean, faulty) if g.get("n")]
        n = sum(g["n"] for g in everyone) or 1
        harm = sum(g["harm_rate"] * g["n"] for g in everyone) / n
        background = sum(g["cleared_background"] * g["n"] for g in everyone) / n
        unverified = sum(g["unverified_rate"] * g["n"] for g in everyone) / n
        lines.append(
            f"| {r['preset']} | {_calls(clean)} | {_calls(faulty)}{worst} | "
            f"{_pct(faulty.get('recovery'))} | {_pct(faulty.get('recall_at_m'))} | "
            f"{_pct(harm)} | {background:.3f} | {_pct(unverified)} |"
        )
    return "\n".join(lines)


def _cheap_table(doc: dict[str, Any]) -> str:
    ks = list(doc["reference"])
    head = " | ".join(f"K={k}: faulty calls / Recovery / Recall@\\|M\\|" for k in ks)
    lines = [f"| settings | {head} | admissible |", "|" + "---|" * (len(ks) + 2)]

    def cells(points: dict[Any, Any]) -> str:
        return " | ".join(
            f"{_num(points[k]['faulty']['model_calls'])} / {_pct(points[k]['faulty']['recovery'])}"
            f" / {_pct(points[k]['faulty']['recall_at_m'])}"
            for k in ks
        )

    lines.append(f"| default (reference) | {cells(doc['reference'])} | |")
    objective = doc["objective_k"]
    order = sorted(
        range(len(doc["rows"])),
        key=lambda i: doc["rows"][i]["points"][objective]["faulty"]["model_calls"],
    )
    for i in order:
        row = doc["rows"][i]
        label = ", ".join(f"{k}={v}" for k, v in row["settings"].items())
        mark = " **(chosen)**" if i == doc["chosen"] else ""
        lines.append(
            f"| {label}{mark} | {cells(row['points'])} | {'yes' if row['admissible'] else 'no'} |"
        )
    return "\n".join(lines)


def _variants_body(doc: dict[str, Any]) -> str:
    from .variants import variants_table

    setting = f"judge {doc['judge']}, temperature {doc['temperature'] or 'as in cases'}"
    return f"Setting: {setting}.\n\n" + variants_table(doc)


def _equal_calls_body(doc: dict[str, Any]) -> str:
    from .equal_calls import equal_calls_table

    curves = ["", "Curves (model calls per case: E[recovery] / Exact flagged, %):", ""]
    for name, rows in doc["curves"].items():
        points = ", ".join(
            f"{r['budget']} {r['model_calls_per_case'] or 0:.1f}: "
            f"{100 * (r['expected_recovery'] or 0):.1f} / {100 * (r['exact_match'] or 0):.1f}"
            for r in rows
        )
        curves.append(f"- {name}: {points}")
    fixed = ", ".join(f"{name} {label}" for name, label in doc.get("fixed_rungs", {}).items())
    parts = [
        f"Fixed budgets (the headline): each baseline at the first budget whose mean calls "
        f"reach MeClear's {doc.get('meclear_calls_per_case', 0.0):.1f} per case ({fixed}).",
        "",
        equal_calls_table(doc),
    ]
    if "results_per_case" in doc:
        parts += [
            "",
            "Per-case matching: each baseline, on each case, at the first budget that spent "
            "at least MeClear's calls on that case.",
            "",
            equal_calls_table(doc, "results_per_case"),
        ]
    return "\n".join(parts) + "\n" + "\n".join(curves)


def render_sweep(kind: str, doc: dict[str, Any], *, command: str = "") -> str:
    """The sweep's report (Markdown).

    Args:
        kind: ``tune``, ``budget``, ``permutations``, ``judges``, ``cheap`` or ``cost``.
        doc: The sweep's document.
        command: The command that reproduces it.

    Returns:
        The report.
    """
    title = {
        "tune": "Tuning on the dev split",
        "budget": "Quality versus cost",
        "permutations": "Sensitivity to the permutation budget L",
        "judges": "Success signals with and without a reference answer",
        "cheap": "The cheap preset's settings, chosen on the dev split",
        "cost": "Model calls per query by engine preset",
        "equal-calls": "Every method at equal model calls",
        "variants": "MeClear's parts against their calls",
    }[kind]
    body = {
        "tune": _tune_table,
        "budget": _budget_table,
        "permutations": _permutation_table,
        "judges": judge_table,
        "cheap": _cheap_table,
        "cost": cost_table,
        "equal-calls": _equal_calls_body,
        "variants": _variants_body,
    }[kind](doc)
    head = [
        f"# {title}",
        "",
        "**SIMULATED**: task values come from the simulated evidence world, not a real model.",
        "",
        f"Cases: {doc['n_cases']}.",
    ]
    if command:
        head += ["", f"Command: `{command}`"]
    if kind == "tune":
        head += [
            "",
            f"Objective: {doc['objective']}.",
            "",
            "Chosen: "
            + ", ".join(f"{name}: {settings}" for name, settings in doc["chosen"].items()),
        ]
    if kind == "cheap":
        chosen = doc["chosen"]
        head += [
            "",
            f"Objective: {doc['objective']}.",
            "",
            "Chosen: "
            + ("none admissible" if chosen is None else str(doc["rows"][chosen]["settings"])),
        ]
    if kind in ("cheap", "cost"):
        setting = f"judge {doc['judge']}, temperature {doc['temperature'] or 'as in cases'}"
        head += ["", f"Setting: {setting}; model calls are agent + judge, deduplicated."]
    if kind == "equal-calls":
        rungs = "; ".join(
            f"{name}: " + ", ".join(f"{label} ({n})" for label, n in counts.items())
            for name, counts in doc["matched_rungs"].items()
        )
        head += [
            "",
            f"Setting: judge {doc['judge']}, temperature {doc['temperature'] or 'as in cases'}. "
            "The headline runs each baseline at one fixed budget: the first of its ladder "
            "whose mean model calls over the split reach MeClear's. The second table gives "
            "each baseline, per case, the first budget that spent at least MeClear's model "
            "calls on that case (cases per budget: " + rungs + "). "
            "Differences are MeClear minus the method, paired by case, with 95% two-level "
            "cluster-bootstrap intervals.",
        ]
    if kind in ("budget", "permutations", "judges", "equal-calls"):
        head += ["", f"![{kind}]({kind}.png)"]
    return "\n".join([*head, "", body, ""])


def write_sweep_figure(kind: str, doc: dict[str, Any], path: str | Path) -> Path | None:
    """Write the sweep's figure; None for ``tune``, ``cheap`` and ``cost`` (tables only).

    budget: quality vs cost; permutations: metrics vs L; judges: accuracy gain and harm per
    signal.

    Args:
        kind: The sweep's kind.
        doc: The sweep's document.
        path: The PNG written.

    Returns:
        ``path``, or None.
    """
    if kind in ("tune", "cheap", "cost", "variants"):
        return None
    if kind == "equal-calls":
        from .equal_calls import write_equal_calls_figure

        return write_equal_calls_figure(doc, path)
    plt = load_pyplot()
    out = Path(path)
    if kind == "budget":
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, key, label in (
            (axes[0], "recovery", "Recovery on unseen trials (%)"),
            (axes[1], "exact_match", "Exact, flagged set (%)"),
        ):
            for name, rows in doc["curves"].items():
                pts = sorted(
                    (r["model_calls_per_case"] or 0.0, 100 * (r[key] or 0.0)) for r in rows
                )
                xs, ys = zip(*pts, strict=True)
                style = "o-" if len(pts) > 1 else "s"
                ax.plot(xs, ys, style, label=name)
            ax.set_xlabel("model calls per case (agent + judge, deduplicated)")
            ax.set_ylabel(label)
        axes[1].legend(fontsize=8)
        setting = f"judge {doc['judge']}, temperature {doc['temperature'] or 'as in cases'}"
        fig.suptitle(f"Quality versus cost ({setting}; SIMULATED)")
    elif kind == "permutations":
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for preset in sorted({r["preset"] for r in doc["rows"]}):
            rows = [r for r in doc["rows"] if r["preset"] == preset]
            for key, label in (("recall_at_m", "Recall@|M|"), ("exact_match", "Exact")):
                ax.plot(
                    [r["permutations"] for r in rows],
                    [100 * (r[key] or 0.0) for r in rows],
                    "o-",
                    label=f"{preset}: {label}",
                )
        ax.set_xlabel("permutations L")
        ax.set_ylabel("%")
        ax.set_xticks(sorted({r["permutations"] for r in doc["rows"]}))
        ax.legend(fontsize=8)
        ax.set_title("Sensitivity to L (SIMULATED; the paper's Fig. 9)")
    else:
        rows = doc["rows"]
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.8 + 0.45 * max(3, len(rows))))
        ys = list(range(len(rows)))
        for ax, key, label in (
            (left, "accuracy_gain", "accuracy(meclear) - accuracy(none), pp"),
            (right, "harm_rate", "harm rate, %"),
        ):
            vals = [100 * (r[key] or 0.0) for r in rows]
            lo = [
                v - 100 * r["ci"][key][0] if r["ci"].get(key) else 0.0
                for v, r in zip(vals, rows, strict=True)
            ]
            hi = [
                100 * r["ci"][key][1] - v if r["ci"].get(key) else 0.0
                for v, r in zip(vals, rows, strict=True)
            ]
            ax.errorbar(vals, ys, xerr=[lo, hi], fmt="o", capsize=3)
            ax.axvline(0.0, color="grey", lw=0.8)
            ax.set_yticks(ys, [r["judge"] for r in rows])
            ax.invert_yaxis()
            ax.set_xlabel(label)
        fig.suptitle("MeClear under each success signal (SIMULATED; 95% CI)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
