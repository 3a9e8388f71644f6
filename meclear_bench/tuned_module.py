"""The text of :mod:`meclear_bench.tuned`, generated from a dev tuning run.

``meclear bench-sweep tune ... --write`` regenerates ``meclear_bench/tuned.py`` with
:func:`render_tuned_module`: the docstring states the command, the date, the grid, the
objective and every choice's figures; the entries hold the baselines' chosen settings.
MeClear has no entry: the benchmark runs the package default.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from . import tuned
from .tune_grid import nested

__all__ = ["main", "render_tuned_module", "tuned_source"]

_WIDTH = 92


def tuned_source() -> str:
    """The current text of :mod:`meclear_bench.tuned`.

    Returns:
        The module's source.
    """
    return Path(tuned.__file__).read_text(encoding="utf-8")


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _dict(values: dict[str, Any], indent: str = "") -> str:
    inner = "".join(f'{indent}    "{k}": {_inline(v)},\n' for k, v in values.items())
    return "{\n" + inner + indent + "}"


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}": {_inline(v)}' for k, v in value.items()) + "}"
    return _value(value)


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=_WIDTH, break_on_hyphens=False)


def _doc(text: str) -> str:
    return _wrap(f'"""{text}"""')


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _figures(doc: dict[str, Any], name: str) -> str:
    block = doc["methods"][name]
    row = block["rows"][block["chosen"]]
    metric = doc.get("metric", "expected_recovery")
    parts = [f"{s} {_pct(row['points'][s].get(metric))}" for s in doc["settings"]]
    parts += [f"{s} {_pct(p.get(metric))}" for s, p in block.get("check", {}).items()]
    bg = max((p["cleared_extra_background"] or 0.0) for p in row["points"].values())
    calls = row["model_calls"]
    over = ""
    if not row["admissible"] and block.get("axes"):
        over = " (no point of the grid met the bound: the least deleted background chosen)"
    return (
        f"{', '.join(parts)}; deleted background {bg:.3f} per case{over}; {calls:.1f} model calls"
    )


def _choice(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "no knobs"


def render_tuned_module(doc: dict[str, Any], *, command: str, date: str) -> str:
    """The module text of :mod:`meclear_bench.tuned` for a :func:`~.tuning.tune` document.

    Args:
        doc: The tuning document.
        command: The command that produced it.
        date: The date of the run (ISO 8601).

    Returns:
        The module's text (ruff-formatted Python).
    """
    chosen = doc["chosen"]
    metric = doc.get("metric", "expected_recovery")
    checks = doc.get("check_settings", [])
    intro = (
        f"Generated on {date} by ``{command}`` ({doc['n_cases']} dev cases). One grid for every "
        "baseline (meclear_bench.tuning): each baseline's own knobs and, for every baseline "
        "that verifies, its verification recovery rate and trial cap, searched group by "
        "group from the current settings with a grid edge widened whenever the choice sits "
        "on it. Objective: the mean "
        f"{metric.replace('_', ' ')} over the {' and '.join(doc['settings'])} settings, at "
        f"most {doc.get('max_deleted_background', 0.05)} deleted background memories per case "
        "in each, ties within 0.1 pp to fewer model calls; the chosen settings re-run in the "
        f"{' and '.join(checks) or 'no other'} setting as a check. MeClear is not tuned: it "
        "runs the package default (``ClearanceConfig()``), decided on dev by ``meclear "
        "bench-sweep variants``, and is reported beside the baselines. Ablation baselines "
        "get, per case, as many distinct coalitions as the package default evaluated. The "
        "benchmark uses these settings by default, so the test-split figures are never tuned "
        "on test."
    )
    title = "Every baseline's tunable settings as chosen on the dev split (SIMULATED world)."
    lines = [f'"""{title}', ""]
    lines.append(_wrap(intro))
    lines += ["", f"Chosen ({metric.replace('_', ' ')} per setting):", ""]
    for name in doc["methods"]:
        widened = doc["methods"][name].get("widened") or []
        extra = f" (grid widened: {'; '.join(widened)})" if widened else ""
        knobs = "the package default" if name == "meclear" else _choice(chosen[name])
        text = f"- {name}: {knobs}{extra}. {_figures(doc, name)}."
        lines.append(textwrap.fill(text, width=_WIDTH, subsequent_indent="  "))
    lines.append('"""')
    loo = chosen.get("loo", {})
    out = [
        "\n".join(lines),
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "__all__ = [",
        '    "TUNED_CONTEXTCITE",',
        '    "TUNED_LOO_TOLERANCE",',
        '    "TUNED_PROXYSPEX",',
        '    "TUNED_VERIFICATION",',
        "]",
        "",
        f"TUNED_LOO_TOLERANCE = {loo.get('tolerance', 0.0)!r}",
        '"""LOO: kappa (flag d_i < -kappa)."""',
    ]
    for name, label in (("contextcite", "ContextCite"), ("proxyspex", "ProxySPEX")):
        own = {k: v for k, v in chosen.get(name, {}).items() if "." not in k}
        out += [
            f"TUNED_{name.upper()}: dict[str, Any] = {_dict(own)}",
            _doc(f"{label}: tau, Lasso alpha and flag rule (chosen on dev)."),
        ]
    verification = {
        name: nested(chosen[name]).get("verification", {})
        for name in ("loo", "contextcite", "proxyspex")
        if name in chosen
    }
    body = "".join(f'    "{k}": {_inline(v)},\n' for k, v in verification.items())
    out += [
        "TUNED_VERIFICATION: dict[str, dict[str, Any]] = {\n" + body + "}",
        '"""Each verifying baseline\'s own verification settings (recovery rate, trial cap)."""',
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m meclear_bench.tuned_module OUT/tuning.json DATE``: render it again.

    The text of a finished ``meclear bench-sweep tune`` run (its ``tuning.json``), printed;
    the run itself writes it (``OUT/tuned.py``, and the package's with ``--write``).

    Args:
        argv: The JSON path and the run's date (None: ``sys.argv[1:]``).

    Returns:
        The exit code.
    """
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m meclear_bench.tuned_module TUNING_JSON DATE", file=sys.stderr)
        return 2
    doc = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    print(render_tuned_module(doc, command=doc["command"], date=args[1]), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
