"""The frozen snapshot an audit job holds, and the single-flight key of a question.

A background query enqueues what its audit needs and nothing the request path could still
change: the question, the memories as retrieved (ids, texts, metadata, SHA-256 content
hashes), the trigger's decision, the reference or the user's feedback when there is one,
the chain's answer when the application passes it, and the ledger fields of the live run
(models, trace id). The audit verifies the hashes before it runs, so a payload altered in
the queue goes to the dead letters instead of being cleared.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.memory import Memory
from ..runtime.hashing import content_hash
from ..triggers.base import TriggerDecision

__all__ = ["SNAPSHOT_VERSION", "AuditSnapshot", "SnapshotMemory", "flight_key"]

SNAPSHOT_VERSION = 1
"""The payload format; a worker refuses (dead-letters) any other."""


def flight_key(query_id: str, hashes: Sequence[str]) -> str:
    """The single-flight key: one pending audit per question and retrieved context.

    Args:
        query_id: The question's id (the ledger's query hash).
        hashes: The memories' content hashes, in retrieval order.

    Returns:
        A 64-hex-digit key.
    """
    digest = hashlib.sha256(query_id.encode("utf-8"))
    for value in hashes:
        digest.update(b"\x1f" + value.encode("ascii"))
    return digest.hexdigest()


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    safe: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return safe


class SnapshotMemory(BaseModel):
    """One retrieved memory as the audit will see it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    content: str
    content_hash: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    def memory(self) -> Memory:
        """The engine's memory."""
        return Memory(id=self.id, content=self.content, metadata=dict(self.metadata))

    @property
    def intact(self) -> bool:
        """The text still has the hash it was enqueued with."""
        return content_hash(self.content) == self.content_hash


class AuditSnapshot(BaseModel):
    """Everything one background audit needs (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = SNAPSHOT_VERSION
    query: str
    query_id: str
    memories: tuple[SnapshotMemory, ...]
    trigger: str = "always"
    trigger_reason: str = "always"
    early_exit: bool | None = None
    reference: str | None = None
    answer: str | None = None
    """The chain's answer, when the application passed it."""
    feedback: str | None = None
    """The user's feedback on the answer, when there is some."""
    record: dict[str, Any] = Field(default_factory=dict)
    """The ledger fields of the live run (success signal, models, trace id)."""
    created_at: float = Field(default_factory=time.time)

    @classmethod
    def of(
        cls,
        query: str,
        query_id: str,
        memories: Sequence[Memory],
        decision: TriggerDecision,
        **fields: Any,
    ) -> AuditSnapshot:
        """The snapshot of a live query.

        Args:
            query: The question.
            query_id: Its id.
            memories: The retrieved memories, in retrieval order.
            decision: The trigger's decision.
            **fields: ``reference``, ``answer``, ``feedback``, ``record``.

        Returns:
            The snapshot.
        """
        metadata = _json_safe({"m": [dict(m.metadata) for m in memories]})["m"]  # one pass
        frozen = tuple(  # built from trusted values on the request path: no re-validation
            SnapshotMemory.model_construct(
                id=m.id, content=m.content, content_hash=content_hash(m.content), metadata=meta
            )
            for m, meta in zip(memories, metadata, strict=True)
        )
        record = _json_safe(dict(fields.pop("record", None) or {}))
        return cls.model_construct(
            query=query,
            query_id=query_id,
            memories=frozen,
            trigger=decision.policy,
            trigger_reason=decision.reason,
            early_exit=decision.early_exit,
            record=record,
            **{name: fields.get(name) for name in ("reference", "answer", "feedback")},
        )

    @property
    def key(self) -> str:
        """The single-flight key (:func:`flight_key`)."""
        return flight_key(self.query_id, [m.content_hash for m in self.memories])

    def decision(self) -> TriggerDecision:
        """The trigger's decision, replayed by the audit."""
        return TriggerDecision(
            run=True, policy=self.trigger, reason=self.trigger_reason, early_exit=self.early_exit
        )

    def dumps(self) -> str:
        """The JSON payload stored in the queue."""
        return self.model_dump_json()

    @classmethod
    def loads(cls, payload: str | bytes | dict[str, Any]) -> AuditSnapshot:
        """Parse a payload; raises on an unknown version or altered memory text.

        Args:
            payload: The stored JSON (or its parsed dict).

        Returns:
            The snapshot.

        Raises:
            ValueError: Not a snapshot, another format version, or a memory whose text no
                longer has its hash.
        """
        data = payload if isinstance(payload, dict) else json.loads(payload)
        if not isinstance(data, dict):
            raise ValueError(f"an audit payload is a JSON object, not {type(data).__name__}")
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError(
                f"audit payload version {data.get('version')!r} was written by another "
                f"meclear-integrations version (this worker reads version {SNAPSHOT_VERSION}); "
                "the job keeps its payload in the dead letters: ask the question again to "
                "queue a fresh audit, or run a worker of the version that queued it"
            )
        snapshot = cls.model_validate(data)
        altered = [m.id for m in snapshot.memories if not m.intact]
        if altered:
            raise ValueError(f"memory text does not match its content hash: {altered[:5]}")
        return snapshot
