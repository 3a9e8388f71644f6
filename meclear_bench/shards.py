"""Shards: split a run's cases over machines and merge the outputs into one run's report.

A run is split with ``--shard i/n``.

A case belongs to shard ``1 + SHA-256(query id) mod n`` (every case of a query in one
shard; deterministic whatever the case order or the machine). Each shard writes its own
output directory (manifest and journal, :mod:`.journal`); :func:`merge_runs` checks that
the shards are one run (same settings, models and full case order; shards 1..n each
once), gathers their outcomes in the full run's case order and assembles the run exactly as
a single process would (same cohort rule, same bootstrap seed), so the merged report equals
a single run's (wall times aside).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

from .cases import BenchCase
from .journal import JOURNAL_FILE, MANIFEST_FILE, read_journal
from .outcomes import CaseOutcome
from .runner import BenchRun, CaseFailure, assemble_run
from .settings import BenchSettings

__all__ = ["MergedRun", "merge_runs", "parse_shard", "select_shard", "shard_of", "sum_calls"]


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``--shard i/n``.

    Args:
        text: ``"i/n"`` with 1 <= i <= n.

    Returns:
        (i, n).

    Raises:
        ConfigurationError: The text is not ``i/n`` with 1 <= i <= n (a ``ValueError``).

    Example:
        >>> parse_shard("2/4")
        (2, 4)
    """
    head, sep, tail = text.partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise ConfigurationError(f"--shard {text!r}: expected i/n with 1 <= i <= n (e.g. 2/4)")
    return index, count


def shard_of(case: BenchCase, count: int) -> int:
    """The shard (1..count) of ``case``.

    Args:
        case: The case (its query id decides).
        count: The number of shards.

    Returns:
        The shard's index.
    """
    digest = hashlib.sha256(case.query_id.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def select_shard(cases: Sequence[BenchCase], index: int, count: int) -> list[BenchCase]:
    """The cases of shard ``index`` of ``count``, in their order.

    Args:
        cases: Every case of the run.
        index: The shard's index (1-based).
        count: The number of shards.

    Returns:
        The shard's cases.
    """
    return [case for case in cases if shard_of(case, count) == index]


@dataclass
class MergedRun:
    """The run assembled from its shards, and what its report needs."""

    run: BenchRun
    """The merged run."""
    manifest: dict[str, Any]
    """The first shard's manifest (source, funnel, models...), with the merged totals."""
    shards: list[str] = field(default_factory=list)
    """The shards' output directories, as given."""


def _load(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST_FILE
    if not path.exists():
        raise ConfigurationError(
            f"{directory}: no {MANIFEST_FILE} (not a benchmark output directory)"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _same(manifests: list[dict[str, Any]], dirs: Sequence[Path], key: str, what: str) -> None:
    first = manifests[0].get(key)
    for directory, manifest in zip(dirs[1:], manifests[1:], strict=True):
        if manifest.get(key) != first:
            raise ConfigurationError(
                f"{directory}: {what} differ from {dirs[0]}'s; not shards of one run"
            )


def _check(manifests: list[dict[str, Any]], dirs: Sequence[Path]) -> int:
    """The shard count; ValueError unless the directories are shards 1..n of one run."""
    for key in ("settings", "models", "mode"):
        if len({json.dumps(m["identity"].get(key), sort_keys=True) for m in manifests}) > 1:
            raise ConfigurationError(f"the shards differ in {key}; they are not shards of one run")
    _same(manifests, dirs, "case_order", "the case sets")
    shards = [tuple(m.get("shard") or (1, 1)) for m in manifests]
    counts = {n for _, n in shards}
    if len(counts) != 1:
        raise ConfigurationError(
            f"the directories come from different shard counts {sorted(counts)}"
        )
    count = counts.pop()
    seen = sorted(i for i, _ in shards)
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing or len(seen) != len(set(seen)):
        raise ConfigurationError(
            f"expected shards 1..{count} once each; got {seen}"
            + (f" (missing {missing})" if missing else "")
        )
    return count


def merge_runs(dirs: Sequence[str | Path]) -> MergedRun:
    """Merge the output directories of shards 1..n of one run (module docstring).

    Args:
        dirs: The shards' output directories.

    Returns:
        The merged run, as a single process would have assembled it.

    Raises:
        ConfigurationError: The directories are not the shards 1..n of one run.
    """
    paths = [Path(d) for d in dirs]
    if not paths:
        raise ConfigurationError("merge needs at least one output directory")
    manifests = [_load(p) for p in paths]
    _check(manifests, paths)
    first = manifests[0]
    settings = BenchSettings.model_validate(first["settings"])
    per_case: dict[str, dict[str, CaseOutcome]] = {name: {} for name in settings.methods}
    failures: list[CaseFailure] = []
    not_run: dict[str, str] = {}
    for path, manifest in zip(paths, manifests, strict=True):
        outcomes, failed = read_journal(path / JOURNAL_FILE)
        for (case_id, method), outcome in outcomes.items():
            per_case.setdefault(method, {})[case_id] = outcome
        failures.extend(failed)
        not_run.update(manifest.get("not_run") or {})
    stopped = [m.get("stopped") for m in manifests if m.get("stopped")]
    run = assemble_run(
        settings,
        first["case_order"],
        list(settings.methods),
        per_case,
        failures=failures,
        not_run=not_run,
        wall_seconds=sum(float(m.get("wall_seconds") or 0.0) for m in manifests),
    )
    if stopped:
        run = run.model_copy(update={"stopped": "; ".join(str(s) for s in stopped)})
    merged = dict(first)
    merged["calls"] = sum_calls([m.get("calls") or {} for m in manifests])
    merged["shard"] = None
    return MergedRun(run=run, manifest=merged, shards=[str(p) for p in paths])


def sum_calls(totals: list[dict[str, Any]]) -> dict[str, Any]:
    """Call totals of several invocations or shards added up.

    Args:
        totals: The call totals (``CallTotals.as_dict()``).

    Returns:
        Their sum.
    """
    merged: dict[str, Any] = {}
    for total in totals:
        for key, value in total.items():
            if isinstance(value, bool):
                merged[key] = merged.get(key, False) or value
            elif isinstance(value, int | float):
                merged[key] = merged.get(key, 0) + value
            elif isinstance(value, dict):
                inner = merged.setdefault(key, {})
                for k, v in value.items():
                    inner[k] = inner.get(k, 0) + v
    return merged
