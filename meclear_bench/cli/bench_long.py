"""The long-run parts of ``meclear bench``.

Manifest, progress bar, labelled results, re-verification and build-only output.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ProgressBar",
    "annotate_results",
    "manifest",
    "real_command_parts",
    "reverify",
    "write_build",
]


def real_command_parts(args: argparse.Namespace) -> list[str]:
    """The real-model and long-run flags of the command line (keys never appear).

    Args:
        args: The parsed ``meclear bench`` flags.

    Returns:
        The flags, ready to be joined into the recorded command.
    """
    parts: list[str] = []
    for flag in (
        "agent_model",
        "agent_kwargs",
        "base_url",
        "judge_model",
        "judge_kwargs",
        "judge_base_url",
        "shard",
        "max_calls",
        "max_tokens",
        "rps",
    ):
        value = getattr(args, flag, None)
        if value is not None:
            parts += [f"--{flag.replace('_', '-')}", str(value)]
    if getattr(args, "agent_model", None):
        if args.agent_temperature:
            parts += ["--agent-temperature", f"{args.agent_temperature:g}"]
        if getattr(args, "grade", None):
            parts += ["--grade", args.grade]
        if args.judge_output != "auto":
            parts += ["--judge-output", args.judge_output]
        if args.memory_metadata != "date":
            parts += ["--memory-metadata", args.memory_metadata]
        parts += ["--concurrency", str(args.concurrency)]
    if getattr(args, "reverify", False):
        parts.append("--reverify")
    return parts


def with_real_parts(command: str, args: argparse.Namespace) -> str:
    """``command`` (ending with ``--out DIR``) with the real-model flags before ``--out``.

    Args:
        command: The recorded command.
        args: The parsed ``meclear bench`` flags.

    Returns:
        The command with the real-model flags.
    """
    parts = shlex.split(command)
    extra = real_command_parts(args)
    if not extra:
        return command
    at = parts.index("--out") if "--out" in parts else len(parts)
    return shlex.join(parts[:at] + extra + parts[at:])


def manifest(
    *,
    identity: dict[str, Any],
    settings: Any,
    case_order: Sequence[str],
    shard: tuple[int, int] | None,
    source: str,
    funnel: dict[str, Any],
    skipped: list[dict[str, Any]],
    command: str,
    models: dict[str, Any] | None,
) -> dict[str, Any]:
    """The ``run.json`` of a run (see :mod:`meclear_bench.journal`).

    Args:
        identity: What determines the outcomes (settings, models, cases).
        settings: The run's settings.
        case_order: The full run's case ids, in order.
        shard: (index, count) of a shard, or None.
        source: Where the cases came from.
        funnel: How the cases were built and verified.
        skipped: The bad lines of the case file.
        command: The command that reproduces the run.
        models: Role -> model label and identity, for real-model runs.

    Returns:
        The manifest.
    """
    return {
        "identity": identity,
        "settings": settings.model_dump(mode="json"),
        "case_order": list(case_order),
        "shard": list(shard) if shard else None,
        "source": source,
        "funnel": funnel,
        "skipped_lines": skipped,
        "command": command,
        "models": models,
    }


def annotate_results(
    results: dict[str, Any],
    run: Any,
    *,
    models: dict[str, Any] | None,
    mode: str | None,
    calls: dict[str, Any] | None,
    shard: tuple[int, int] | None = None,
    merged_from: list[str] | None = None,
) -> dict[str, Any]:
    """Label ``results`` with the models, the run's calls and whether it is partial.

    Args:
        results: The ``results.json`` document (changed in place).
        run: The run.
        models: Role -> model label and identity, for real-model runs.
        mode: The judge mode of a real-model run.
        calls: The run's provider calls and tokens.
        shard: (index, count) of a shard, or None.
        merged_from: The shard directories of a merged run.

    Returns:
        ``results``.
    """
    if models is not None:
        results["simulated"] = False
        results["models"] = models
        results["judge"] = (
            "exact match (normalised containment of the reference), no LLM"
            if mode == "exact"
            else f"LLM judge, {mode}"
        )
        results["note"] = "Task values come from real chat models (see models)."
    results["calls"] = calls
    results["stopped"] = run.stopped
    results["stopped_fatal"] = run.stopped_fatal
    results["partial"] = bool(run.stopped or run.incomplete)
    results["incomplete"] = list(run.incomplete)
    results["shard"] = list(shard) if shard else None
    if merged_from is not None:
        results["merged_from"] = merged_from
    return results


class ProgressBar:
    """tqdm over cases (ETA) whose postfix shows the run's calls, cache hits and tokens.

    Args:
        total: The number of cases.
        enabled: Show the bar (tqdm installed).
        gate: The real-model run's gate (its totals are shown), or None.
    """

    def __init__(self, total: int, *, enabled: bool, gate: Any = None) -> None:
        self.gate = gate
        self.bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is in the bench extra
                return
            self.bar = tqdm(total=total, desc="bench", unit="case", disable=None)

    def update(self, n: int = 1) -> None:
        """Advance the bar by ``n`` cases and refresh the calls, cache hits and tokens.

        Args:
            n: The number of cases just finished.
        """
        if self.bar is None:
            return
        if self.gate is not None:
            t = self.gate.totals.as_dict()
            self.bar.set_postfix(
                calls=t["provider_calls"],
                cached=t["cache_hits"],
                tokens=t["prompt_tokens"] + t["completion_tokens"],
                refresh=False,
            )
        self.bar.update(n)

    def close(self) -> None:
        """Close the bar (when one is shown)."""
        if self.bar is not None:
            self.bar.close()


def reverify(cases: list[Any], verifier: Any, label: str) -> tuple[list[Any], dict[str, Any]]:
    """Re-verify ``cases`` under the run's models.

    Returns the cases that show their structure's signature, and a funnel of the others.

    Args:
        cases: The cases to re-verify.
        verifier: The real-model verifier.
        label: The models' label, recorded in the funnel.
    """
    verdicts = verifier(cases)
    kept = [c for c, v in zip(cases, verdicts, strict=True) if v.ok]
    dropped: dict[str, dict[str, int]] = {}
    for case, verdict in zip(cases, verdicts, strict=True):
        if not verdict.ok:
            row = dropped.setdefault(verdict.reason or "unverified", {})
            row[case.structure] = row.get(case.structure, 0) + 1
    funnel = {
        "reverified_with": label,
        "cases_given": len(cases),
        "cases_verified": len(kept),
        "dropped": dropped,
    }
    return kept, funnel


def write_build(out: Path, cases: list[Any], funnel: dict[str, Any], source: str) -> list[Path]:
    """``cases.jsonl`` and ``funnel.json`` of a build-only run.

    Args:
        out: The output directory.
        cases: The verified cases.
        funnel: How they were built and verified.
        source: Where they came from.

    Returns:
        The files written.
    """
    from .. import dump_cases

    out.mkdir(parents=True, exist_ok=True)
    dump_cases(cases, out / "cases.jsonl")
    (out / "funnel.json").write_text(
        json.dumps({"source": source, **funnel}, indent=2) + "\n", encoding="utf-8"
    )
    return [out / "cases.jsonl", out / "funnel.json"]
