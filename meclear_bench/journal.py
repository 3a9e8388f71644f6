"""A run's journal.

Every outcome written as it is computed, so a run resumes where it stopped and shards can be merged.

An output directory holds ``run.json`` (the manifest: what determines the outcomes, the
full case order, the shard, the status) and ``journal.jsonl``, one line per (case, method)
outcome or failure, appended and flushed as it happens. ``--resume`` reloads the outcomes
(the last line of a (case, method) wins; a failure is retried) after checking that the
manifest's identity (settings that change outcomes, models, cases, shard) is unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from meclear_integrations.core.errors import ConfigurationError

from .cases import BenchCase
from .outcomes import CaseOutcome
from .runner import CaseFailure
from .settings import BenchSettings

__all__ = [
    "JOURNAL_FILE",
    "MANIFEST_FILE",
    "RunJournal",
    "cases_fingerprint",
    "read_journal",
    "run_identity",
]

MANIFEST_FILE = "run.json"
JOURNAL_FILE = "journal.jsonl"
_REPORT_ONLY = ("bootstrap_replicates", "confidence", "reference_method")
"""Settings that change the report, not the outcomes (free to change on resume)."""


def cases_fingerprint(cases: Iterable[BenchCase]) -> str:
    """SHA-256 of the cases' canonical JSON, in order.

    Args:
        cases: The cases, in run order.

    Returns:
        The hex digest.
    """
    digest = hashlib.sha256()
    for case in cases:
        digest.update(case.model_dump_json().encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def run_identity(
    settings: BenchSettings,
    cases: Sequence[BenchCase],
    *,
    models: dict[str, Any] | None = None,
    mode: dict[str, Any] | None = None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """What a run's outcomes depend on (compared on resume and merge).

    Args:
        settings: The run's settings.
        cases: The run's cases.
        models: Role -> model identity (real-model runs).
        mode: The judge mode (real-model runs).
        shard: (index, count) of a shard, or None.

    Returns:
        The identity, JSON-ready.
    """
    dumped = settings.model_dump(mode="json")
    return {
        "settings": {k: v for k, v in dumped.items() if k not in _REPORT_ONLY},
        "models": models or None,
        "mode": mode or None,
        "cases": cases_fingerprint(cases),
        "shard": list(shard) if shard else None,
    }


def read_journal(path: str | Path) -> tuple[dict[tuple[str, str], CaseOutcome], list[CaseFailure]]:
    """Outcomes and failures of a journal; the last line of a (case, method) wins.

    Args:
        path: The ``journal.jsonl`` file.

    Returns:
        (method, case id) -> outcome, and the failures.
    """
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by an interruption
            latest[(entry["case_id"], entry["method"])] = entry
    outcomes: dict[tuple[str, str], CaseOutcome] = {}
    failures: list[CaseFailure] = []
    for key, entry in latest.items():
        if entry["type"] == "outcome":
            outcomes[key] = CaseOutcome.model_validate(entry["outcome"])
        else:
            failures.append(CaseFailure(case_id=key[0], method=key[1], error=entry["error"]))
    return outcomes, failures


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [k for k in keys if old.get(k) != new.get(k)]


class RunJournal:
    """The manifest and journal of one output directory.

    Args:
        out_dir: The run's output directory.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.dir = Path(out_dir)
        self.manifest_path = self.dir / MANIFEST_FILE
        self.path = self.dir / JOURNAL_FILE
        self.manifest: dict[str, Any] = {}
        self.previous: dict[str, Any] = {}
        """The manifest of the run being resumed (empty for a new run)."""
        self._lock = threading.Lock()

    def start(
        self, manifest: dict[str, Any], *, resume: bool
    ) -> dict[tuple[str, str], CaseOutcome]:
        """Begin (or, with ``resume``, continue) the run.

        Args:
            manifest: The run's ``run.json``.
            resume: Continue the run in the directory.

        Returns:
            (case id, method) -> the outcomes already computed, to reuse.

        Raises:
            ConfigurationError: ``resume`` finds no run, or one with another identity (a
                ``ValueError``).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        completed: dict[tuple[str, str], CaseOutcome] = {}
        if resume:
            if not self.manifest_path.exists():
                raise ConfigurationError(
                    f"--resume: {self.dir} holds no run to resume ({MANIFEST_FILE})"
                )
            old = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            self.previous = old
            changed = _differences(old.get("identity", {}), manifest["identity"])
            if changed:
                raise ConfigurationError(
                    f"--resume: the run in {self.dir} differs in {', '.join(changed)}; "
                    "resume it with the same cases, settings and models, or use a new --out"
                )
            if self.path.exists():
                completed, _ = read_journal(self.path)
        else:
            self.path.write_text("", encoding="utf-8")
        self.manifest = {**manifest, "status": "running"}
        self._write_manifest()
        return completed

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def record_outcome(self, method: str, outcome: CaseOutcome) -> None:
        """Append one finished (case, method) outcome to the journal.

        Args:
            method: The method's name.
            outcome: Its scored outcome on the case.
        """
        self._append(
            {
                "type": "outcome",
                "case_id": outcome.case_id,
                "method": method,
                "outcome": outcome.model_dump(mode="json"),
            }
        )

    def record_failure(self, failure: CaseFailure) -> None:
        """Append one failed (case, method) to the journal.

        Args:
            failure: What failed and why.
        """
        self._append({"type": "failure", **failure.model_dump(mode="json")})

    def finish(self, status: str, **extra: Any) -> None:
        """Record the run's final status (``complete`` or ``stopped``) and totals.

        Args:
            status: ``complete`` or ``stopped``.
            **extra: Totals written into the manifest.
        """
        self.manifest.update(status=status, **extra)
        self._write_manifest()

    def _write_manifest(self) -> None:
        tmp = self.manifest_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.manifest, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.manifest_path)
