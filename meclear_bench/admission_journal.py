"""The admission bench's journal: one JSON line per finished decision, read back on resume.

``journal.jsonl`` in ``--out`` starts with a header line (the run's identity: model, seed,
cases' digest) and gets one line ``{"method": ..., "outcome": {...}}`` per (method, case)
decision as soon as it finishes, flushed at once, so a run that is killed keeps every
decision it finished. A rerun with the same ``--out`` reads the journal back, skips the
decisions it holds and runs the rest; a header that names another model or seed stops the
rerun (its decisions would not be comparable), as does another set of cases under the same
ids; another ``--limit`` or ``--methods`` resumes (the decisions it shares are reused). A
torn last line (the process died while writing it) is dropped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from meclear_integrations.core.errors import ConfigurationError

__all__ = ["JOURNAL_NAME", "AdmissionJournal", "JournalHeader"]

JOURNAL_NAME = "journal.jsonl"
"""The journal's file name inside ``--out``."""


class JournalHeader(BaseModel):
    """What must match for a rerun to resume a journal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    """The model's name (``scripted``, ``openai:<name>``...)."""
    seed: int
    """ConMem's A/B order seed."""
    model_kwargs: dict[str, Any] = {}
    """Temperature and keyword arguments of the chat model (``--agent-kwargs``; no secrets)."""
    cases_digest: str = ""
    """SHA-256 of every case of the source (before ``--limit``): the same ids mean the same
    cases."""
    cases_file: str = ""
    """Where the cases came from (informative: a changed path does not stop a resume)."""


class AdmissionJournal:
    """Append-only journal of finished decisions (see the module docstring).

    Args:
        path: The ``journal.jsonl`` file (created with its parent folder when missing).
        header: This run's identity.

    Raises:
        ConfigurationError: The journal exists and was written by a run with another model,
            seed, model keyword arguments or cases.
    """

    def __init__(self, path: Path, header: JournalHeader) -> None:
        """Open (and, on resume, read) the journal."""
        self.path = path
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        """``(method, case id) -> outcome`` of every journalled decision (the last one wins)."""
        if path.exists() and path.stat().st_size:
            self._read(header)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._append({"header": header.model_dump()})

    def _read(self, header: JournalHeader) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        try:
            found = JournalHeader.model_validate(json.loads(lines[0])["header"])
        except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
            msg = f"{self.path}: not an admission-bench journal ({exc})"
            raise ConfigurationError(msg) from None
        mine = header.model_dump(exclude={"cases_file"})
        theirs = found.model_dump(exclude={"cases_file"})
        if mine != theirs:
            raise ConfigurationError(
                f"{self.path} was written by another run ({theirs}, this run: {mine}); "
                "use another --out or delete the journal"
            )
        for number, raw in enumerate(lines[1:], start=2):
            try:
                record = json.loads(raw)
                key = (str(record["method"]), str(record["outcome"]["id"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                if number == len(lines):  # torn by a kill while writing: drop it
                    self._rewrite(lines[:-1])
                    continue
                msg = f"{self.path}:{number}: unreadable journal line"
                raise ConfigurationError(msg) from None
            self.done[key] = record["outcome"]

    def _rewrite(self, lines: list[str]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        tmp.replace(self.path)

    def _append(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def record(self, method: str, outcome: dict[str, Any]) -> None:
        """Journal one finished decision.

        Args:
            method: The method that decided.
            outcome: The decision's outcome (its ``id`` is the case id).
        """
        self._append({"method": method, "outcome": outcome})
        self.done[(method, str(outcome["id"]))] = outcome
