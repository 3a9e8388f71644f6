"""Write a run's outputs: results.json, report.md, figures, outcomes.jsonl, cases.jsonl."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cases import BenchCase, dump_cases
from .figures import write_figures
from .metrics import rank_ecdf_curve
from .report import render_markdown
from .runner import BenchRun

__all__ = ["write_outputs"]


def write_outputs(
    out_dir: str | Path,
    run: BenchRun,
    results: dict[str, Any],
    *,
    cases: Sequence[BenchCase] | None = None,
    command: str = "",
    figures: bool = True,
) -> dict[str, Path]:
    """Write every output file; ``cases`` (the built cases) go to ``cases.jsonl``.

    Args:
        out_dir: The output directory.
        run: The run.
        results: Its ``results.json`` document.
        cases: The built cases (None: not written).
        command: The command that reproduces the run.
        figures: Draw the figures.

    Returns:
        Output name -> file written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {"results": out / "results.json", "report": out / "report.md"}
    written["results"].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    written["report"].write_text(render_markdown(results, command=command), encoding="utf-8")
    written["outcomes"] = out / "outcomes.jsonl"
    with open(written["outcomes"], "w", encoding="utf-8") as handle:
        for method, outcomes in run.outcomes.items():
            for o in outcomes:
                handle.write(json.dumps({"method": method, **o.model_dump(mode="json")}) + "\n")
    if cases is not None:
        written["cases"] = out / "cases.jsonl"
        dump_cases(cases, written["cases"])
    if figures:
        top = max((len(o.ranking) for outs in run.outcomes.values() for o in outs), default=1)
        ecdf = {
            name: rank_ecdf_curve(outs, max(top, 1))
            for name, outs in run.outcomes.items()
            if name != "none"
        }
        for path in write_figures(results, ecdf, out):
            written[path.stem] = path
    return written
