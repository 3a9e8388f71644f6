"""Report and figure of the LoCoMo admission bench (``report.md``, ``admission_locomo.png``)."""

from __future__ import annotations

from pathlib import Path

from .admission_locomo import KINDS
from .admission_locomo_run import LocomoAdmissionResult, MethodScore

__all__ = ["plot_result", "render_locomo_report"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _row(m: MethodScore, *, calls: bool = True) -> str:
    sent = "-" if m.sent_calls_per_decision is None else f"{m.sent_calls_per_decision:.2f}"
    requested = f"{m.calls_per_decision:.2f}" if calls else "- (re-decided)"
    return (
        f"| {m.method} | {_pct(m.accuracy)} | {_pct(m.balanced_accuracy)} | {_pct(m.macro_f1)} "
        f"| {_pct(m.recall['store'])} | {_pct(m.recall['do_not_store'])} "
        f"| {_pct(m.misaligned_do_not_store_recall)} | {_pct(m.precision['store'])} "
        f"| {_pct(m.f1['store'])} | {m.errors} | {requested} | {sent} |"
    )


_HEAD = (
    "| method | acc % | bal. acc % | macro-F1 % | Store recall % | DNS recall % "
    "| DNS recall, misaligned % | Store precision % | Store F1 % | errors | calls/decision "
    "| sent calls/decision |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def render_locomo_report(result: LocomoAdmissionResult) -> str:
    """``report.md``: methods, kinds, ablations, grid, presets, the paper's figures.

    Args:
        result: The bench result.

    Returns:
        The Markdown report.
    """
    kind = "OFFLINE TEXT-READER stand-in (not an LLM)" if result.offline_reader else "chat model"
    counts = ", ".join(f"{k} {n}" for k, n in result.counts.items())
    lines = [
        "# LoCoMo admission bench (ConMem and baselines)",
        "",
        f"- model: `{result.model}` ({kind})",
        f"- split: {result.split}; candidates: {counts}",
        "",
        *[f"> {n}" for n in result.notes],
        "",
        "## Methods",
        "",
        _HEAD,
        *[_row(m) for m in result.methods],
        "",
        "## Recall per candidate kind (% decided correctly)",
        "",
        "| kind | n | " + " | ".join(m.method for m in result.methods) + " |",
        "|---|---|" + "---|" * len(result.methods),
    ]
    for k in KINDS:
        if not result.counts.get(k):
            continue
        cells = [_pct(m.kind_recall.get(k)) for m in result.methods]
        lines.append(f"| {k} | {result.counts[k]} | " + " | ".join(cells) + " |")
    reasons = sorted({r for m in result.methods for r in m.reason_recall})
    if reasons:
        lines += [
            "",
            "## Recall per gold reason type (%)",
            "",
            "| reason | " + " | ".join(m.method for m in result.methods) + " |",
            "|---|" + "---|" * len(result.methods),
        ]
        for r in reasons:
            cells = [_pct(m.reason_recall.get(r)) for m in result.methods]
            lines.append(f"| {r} | " + " | ".join(cells) + " |")
    conmem = next((m for m in result.methods if m.method == "conmem"), None)
    if conmem is not None:
        lines += [
            "",
            f"ConMem zero-score (tie-break) rate: {_pct(conmem.zero_score_rate)} %; post-hoc "
            f"reason matches the misaligned kind's reason on {_pct(conmem.reason_accuracy)} % "
            "of correctly rejected misaligned candidates (interpretation only).",
        ]
    if result.ablations:
        lines += [
            "",
            "## Ablations (Table 3), on ConMem's recorded evidence",
            "",
            _HEAD,
            *[_row(m, calls=False) for m in result.ablations],
            "",
            f"Re-deciding needed {result.analysis_calls} extra tie-break calls (evidence some "
            "variant or grid setting scores at zero that the judge had not seen); they are "
            "analysis calls, outside calls/decision.",
        ]
    if result.grid:
        f1s = [g.score.macro_f1 for g in result.grid]
        bas = [g.score.balanced_accuracy for g in result.grid]
        accs = [g.score.accuracy for g in result.grid]
        lines += [
            "",
            "## Sensitivity grid (27 CMTE settings, App. A), on the recorded evidence",
            "",
            f"accuracy {_pct(min(accs))}-{_pct(max(accs))} %, balanced accuracy "
            f"{_pct(min(bas))}-{_pct(max(bas))} %, macro-F1 {_pct(min(f1s))}-{_pct(max(f1s))} %",
            "",
            "| irrelevant penalty | risk gain | risk penalty | acc % | bal. acc % | macro-F1 % "
            "| Store recall % | DNS recall % |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for g in result.grid:
            s = g.score
            mark = " (primary)" if g.primary else ""
            lines.append(
                f"| {g.irrelevant_penalty}{mark} | {g.risk_gain} | {g.risk_penalty} "
                f"| {_pct(s.accuracy)} | {_pct(s.balanced_accuracy)} | {_pct(s.macro_f1)} "
                f"| {_pct(s.recall['store'])} | {_pct(s.recall['do_not_store'])} |"
            )
    if result.presets_dev:
        lines += [
            "",
            "## Cost presets (chosen on dev: cheapest within 2 pp macro-F1 of the default "
            "among those rejecting nothing the default stores)",
            "",
            "| preset (dev) | macro-F1 % | delta pp | calls/decision | sent calls/decision "
            "| rejects default-stored |",
            "|---|---|---|---|---|---|",
        ]
        for p in result.presets_dev:
            sent = p.score.sent_calls_per_decision
            lines.append(
                f"| {p.name} | {_pct(p.score.macro_f1)} | {100 * p.macro_f1_delta:+.1f} "
                f"| {p.score.calls_per_decision:.2f} | {'-' if sent is None else f'{sent:.2f}'} "
                f"| {p.rejects_default_stores} |"
            )
        if result.cheap_test is not None:
            t = result.cheap_test
            lines += [
                "",
                f"Chosen: **{result.cheap_preset}**; on {t.split}: macro-F1 "
                f"{_pct(t.score.macro_f1)} % ({100 * t.macro_f1_delta:+.1f} pp vs default), "
                f"{t.score.calls_per_decision:.2f} calls/decision.",
            ]
    lines += _tuned_lines(result)
    paper = result.paper
    lines += [
        "",
        "## The paper's figures (not comparable in level)",
        "",
        f"> {paper['setting']}",
        "",
        "| paper, MemAlign | acc % | bal. acc % | macro-F1 % | Store recall % | DNS recall % |",
        "|---|---|---|---|---|---|",
    ]
    for name, f in paper["memalign_table1"].items():
        cells = [
            f.get(k, "-")
            for k in (
                "accuracy",
                "balanced_accuracy",
                "macro_f1",
                "store_recall",
                "do_not_store_recall",
            )
        ]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "| paper, LoCoMo | Store precision % | Store recall % | Store F1 % |",
        "|---|---|---|---|",
    ]
    for name, f in paper["locomo"].items():
        cells = [f.get(k, "-") for k in ("store_precision", "store_recall", "store_f1")]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    t3 = paper["table3_macro_f1"]
    lines += [
        "",
        f"Paper Table 3 macro-F1: full {t3['full']}, w/o quality judge "
        f"{t3['no_quality_judge']}, w/o attribution auditor {t3['no_auditor']}; grid "
        f"macro-F1 {paper['grid']['macro_f1'][0]}-{paper['grid']['macro_f1'][1]} %; "
        f"{paper['calls_per_decision']} calls per decision.",
        "",
        f"SAGE: {result.sage}",
    ]
    return "\n".join(lines) + "\n"


def plot_result(result: LocomoAdmissionResult, path: Path) -> Path | None:
    """Balanced accuracy and macro-F1 per method, ablation and preset (a PNG).

    Args:
        result: The bench result.
        path: Where to write the figure.

    Returns:
        The path, or None when matplotlib is not installed (the ``bench`` extra).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is in the bench extra
        return None
    rows = list(result.methods) + list(result.ablations[1:])
    if result.cheap_test is not None:
        rows.append(result.cheap_test.score.model_copy(update={"method": "cheap preset"}))
    names = [m.method for m in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows)), 4.0))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [100 * m.balanced_accuracy for m in rows], 0.4, label="bal. acc")
    ax.bar([x + 0.2 for x in xs], [100 * m.macro_f1 for m in rows], 0.4, label="macro-F1")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("%")
    label = "OFFLINE TEXT-READER, not an LLM" if result.offline_reader else result.model
    ax.set_title(f"LoCoMo admission ({result.split} split; {label})", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _tuned_lines(result: LocomoAdmissionResult) -> list[str]:
    """Baselines tuned alike, and every method by where its labels come from."""
    lines: list[str] = []
    if result.tuned:
        lines += [
            "",
            "## Baselines tuned alike (threshold chosen on dev by macro-F1, as ConMem's preset)",
            "",
            "| baseline | published threshold | dev threshold | dev macro-F1 % "
            f"| {result.split} bal. acc % | {result.split} macro-F1 % |",
            "|---|---|---|---|---|---|",
        ]
        for t in result.tuned:
            lines.append(
                f"| {t.name} | {t.published:.3f} | {t.threshold:.3f} | {_pct(t.dev_macro_f1)} "
                f"| {_pct(t.score.balanced_accuracy)} | {_pct(t.score.macro_f1)} |"
            )
    titles = {
        "locomo_only": "labels from LoCoMo's QA evidence alone (useful / unused observations)",
        "builder": "candidates our builder wrote (false claims, wrong corrections, CLARK-News)",
    }
    for source, scores in result.by_label_source.items():
        lines += [
            "",
            f"## By label source: {titles.get(source, source)}",
            "",
            "| method | n | bal. acc % | macro-F1 % | Store recall % | DNS recall % |",
            "|---|---|---|---|---|---|",
        ]
        for m in scores:
            lines.append(
                f"| {m.method} | {m.n} | {_pct(m.balanced_accuracy)} | {_pct(m.macro_f1)} "
                f"| {_pct(m.recall['store'])} | {_pct(m.recall['do_not_store'])} |"
            )
    return lines
