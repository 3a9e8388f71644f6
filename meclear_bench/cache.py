"""An on-disk cache of model replies (embedded SQLite), so a rerun or a resumed run repeats no call.

A reply is keyed by the SHA-256 of the model's identity (provider, model, settings such as
temperature; never a key or the endpoint), the kind of call (``text``, or ``json`` with
its schema), the prompt and the *draw*: 0 for a deterministic model, the trial index for a
sampled one (so trial t of a prompt is one draw, reused by every method and every rerun).
The reply is stored with the tokens it cost, so a cached reply is still charged to the
method that uses it at its true price.

A free-text judge prompt carries a verdict nonce that is fresh for every call
(:mod:`meclear_integrations.judges.protocol`): the key is computed with the nonce replaced
by a fixed slot, and the reply is stored with the nonce it answered, so that a cache hit is
re-bound to the asking call's nonce (:meth:`CachedReply.for_nonce`). No data of a prompt can
hold its nonce (the nonce is drawn after the data is written), so this merges exactly the
calls that differ in their nonce alone.

Every write is committed at once (an interrupted run loses nothing it paid for); the file
is opened in WAL mode with a busy timeout, so shards on one machine may share it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "NONCE_SLOT",
    "CachedReply",
    "ResponseCache",
    "cache_key",
    "default_cache_path",
    "unbind_nonce",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    estimated INTEGER NOT NULL,
    nonce TEXT,
    created REAL NOT NULL
)
"""
NONCE_SLOT = "{verdict-nonce}"
"""What a prompt's verdict nonce is replaced with in its cache key."""


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/meclear/responses.sqlite`` (``~/.cache/...`` by default)."""
    import os

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "meclear" / "responses.sqlite"


def cache_key(
    identity: Mapping[str, Any],
    *,
    kind: str,
    prompt: str,
    draw: int = 0,
    schema: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of one call (hex SHA-256 of its canonical JSON).

    Args:
        identity: The model's identity (``ModelSpec.identity()``).
        kind: ``text`` or ``json``.
        prompt: The prompt (nonce-free for a free-text judge prompt).
        draw: The draw of a sampled model.
        schema: The JSON schema of a ``json`` call.

    Returns:
        The key.
    """
    material = {
        "model": dict(identity),
        "kind": kind,
        "schema": dict(schema) if schema is not None else None,
        "prompt": prompt,
        "draw": int(draw),
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unbind_nonce(prompt: str) -> tuple[str, str | None]:
    """Split a free-text judge prompt into its nonce-free form and its verdict nonce.

    Args:
        prompt: The prompt.

    Returns:
        (the prompt with its verdict nonce replaced by :data:`NONCE_SLOT`, the nonce) for a
        free-text judge prompt; (prompt, None) for any other prompt.
    """
    from meclear_integrations.judges.protocol import read_nonce

    nonce = read_nonce(prompt)
    return (prompt.replace(nonce, NONCE_SLOT), nonce) if nonce else (prompt, None)


@dataclass(frozen=True)
class CachedReply:
    """One stored reply and what it cost."""

    value: Any
    """The reply: text, or the decoded object of a structured call."""
    prompt_tokens: int
    """Prompt tokens the call cost."""
    completion_tokens: int
    """Completion tokens the call cost."""
    estimated: bool
    """The token counts are estimates (the provider reported no usage)."""
    nonce: str | None = None
    """The verdict nonce of the call this reply answered (free-text judge calls)."""

    def for_nonce(self, nonce: str | None) -> Any:
        """The reply as the answer to a call with ``nonce`` (its own nonce re-bound).

        Args:
            nonce: The nonce of the new call (None: the reply as stored).

        Returns:
            The reply.
        """
        if nonce and self.nonce and isinstance(self.value, str):
            return self.value.replace(self.nonce, nonce)
        return self.value


class ResponseCache:
    """``get`` / ``put`` of replies in one SQLite file (``":memory:"`` for a private one).

    Args:
        path: The SQLite file (created with its directory), or ``":memory:"``.
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        self._lock = threading.Lock()
        with self._lock:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA busy_timeout=30000")
            self._conn.execute(_SCHEMA)
            self._conn.commit()

    def get(self, key: str) -> CachedReply | None:
        """The stored reply for ``key``, or None.

        Args:
            key: The call's key.

        Returns:
            The reply.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT value, prompt_tokens, completion_tokens, estimated, nonce FROM replies "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return CachedReply(
            value=json.loads(row[0]),
            prompt_tokens=int(row[1]),
            completion_tokens=int(row[2]),
            estimated=bool(row[3]),
            nonce=row[4],
        )

    def put(self, key: str, *, model: str, kind: str, reply: CachedReply) -> None:
        """Store ``reply`` under ``key`` and commit.

        Args:
            key: The call's key.
            model: The model's label.
            kind: ``text`` or ``json``.
            reply: The reply.
        """
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    kind,
                    json.dumps(reply.value, ensure_ascii=False),
                    int(reply.prompt_tokens),
                    int(reply.completion_tokens),
                    int(reply.estimated),
                    reply.nonce,
                    time.time(),
                ),
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
