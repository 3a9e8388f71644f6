"""Verified harm by content: the same text under a new id, or a near-duplicate of it.

The ledger's state is keyed by memory id and exact content hash (``scope_state``). A
memory store assigns ids, so a harmful text written again (a re-extraction, another
session) comes back under a new id, or lightly reworded. This module adds a content index
beside the state (schema version 4) and the bounded lookups that read it:

- **Exact text** (any id): ``meclear_memory_scopes`` gets an index on (namespace, content
  hash, active, cleared at); :func:`load_active_any_id` reads, in the same single
  statement as the id lookup, at most ``ROWS_PER_MEMORY`` active rows per memory of the
  same text under another id. :meth:`HarmLedger.scoped_harm` / ``prior_candidate`` use it,
  so clearance recognises the text under its new id.
- **Normalised text**: :func:`normalized_text` (Unicode NFKC, casefolded, white space
  collapsed, trailing sentence punctuation and quotes dropped) hashed by :func:`text_hash`.
- **Near-duplicate**: the token-set Jaccard of the two texts' content words (the ledger's
  question tokeniser, ``scope.content_tokens``, with negations kept: "not", "no", "never"
  change a fact) at or above :data:`NEAR_DUPLICATE_THRESHOLD` (0.8). Candidates come from a
  MinHash index (:data:`BANDS` bands of :data:`ROWS` hashes over the hashed words: a pair
  at Jaccard 0.8 shares a band with probability 0.997, at 0.3 with 0.19); the Jaccard is
  then computed exactly on the stored hashed words. At most :data:`MAX_CANDIDATES` rows are
  read per lookup.

Rows are written when a verified run (complete and recovered) clears a memory (or names it a
carrier of the harm), in the run's transaction (:func:`harm_text_rows`,
:func:`insert_harm_texts`); no text is stored, only hashes. A match counts while the
memory's harm is *active* in the state (no restore, acquittal or finding that it is needed
since), so a lifted harm stops matching too.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

from sqlalchemy import Integer, bindparam, literal_column, select, true, union_all
from sqlalchemy.engine import Connection

from . import schema as t
from . import scope_state
from .scope import content_tokens, jaccard
from .scope_state import Observation, ScopeRow, _lookup_columns

__all__ = [
    "BANDS",
    "MAX_CANDIDATES",
    "NEAR_DUPLICATE_THRESHOLD",
    "ROWS",
    "HarmMatch",
    "HarmTextRow",
    "LedgerHarmIndex",
    "MatchKind",
    "backfill_harm_texts",
    "band_keys",
    "find_harm",
    "harm_text_rows",
    "insert_harm_texts",
    "insert_harm_texts_many",
    "load_active_any_id",
    "memory_tokens",
    "normalized_text",
    "text_hash",
    "text_signature",
]

NEAR_DUPLICATE_THRESHOLD = 0.8
"""Token-set Jaccard of content words at or above which two memories are near-duplicates."""
BANDS = 8
"""MinHash bands per text (its index keys)."""
ROWS = 3
"""MinHash values per band."""
MAX_CANDIDATES = 64
"""Rows read per near-duplicate lookup (bounded cost on the request path)."""

MatchKind = Literal["same_id", "same_text", "normalised_text", "near_duplicate"]
"""How a candidate matched a verified harmful memory (strongest first)."""

_NEGATIONS = frozenset({"not", "no", "never", "nor", "none", "nothing", "nobody", "neither"})
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TRAILING = " \t\r\n.!?;:,\"'\u201c\u201d\u2018\u2019)]}"
_MASK = (1 << 64) - 1


def normalized_text(text: str) -> str:
    """``text`` as compared for an exact match: NFKC, casefolded, one space, no end stop.

    Args:
        text: A memory's text.

    Returns:
        The normalised text.

    Example:
        >>> normalized_text("  User is  allergic to Shellfish. ")
        'user is allergic to shellfish'
    """
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.strip(_TRAILING)


def text_hash(text: str) -> str:
    """SHA-256 (hex) of :func:`normalized_text`.

    Args:
        text: A memory's text.

    Returns:
        The digest.
    """
    data = normalized_text(text).encode("utf-8")
    return hashlib.sha256(b"meclear-text\x1f" + data).hexdigest()


def memory_tokens(text: str) -> frozenset[str]:
    """The content words of a memory (``scope.content_tokens``) plus its negations.

    Args:
        text: A memory's text.

    Returns:
        The token set.

    Example:
        >>> sorted(memory_tokens("User is not allergic to shellfish."))
        ['allergic', 'not', 'shellfish', 'user']
    """
    words = set(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))
    return content_tokens(text) | (words & _NEGATIONS)


def text_signature(text: str) -> list[str]:
    """The memory's tokens hashed to 12 hex digits, sorted (what the index stores).

    Args:
        text: A memory's text.

    Returns:
        The sorted hashes.
    """
    out = {
        hashlib.sha256(b"meclear-word\x1f" + w.encode("utf-8")).hexdigest()[:12]
        for w in memory_tokens(text)
    }
    return sorted(out)


def _minhash(signature: Sequence[str], seed: int) -> int:
    salt = seed.to_bytes(4, "big")
    return min(
        int.from_bytes(hashlib.blake2b(h.encode("ascii"), digest_size=8, salt=salt).digest())
        & _MASK
        for h in signature
    )


def band_keys(signature: Sequence[str]) -> list[str]:
    """The MinHash band keys of a signature (:data:`BANDS` keys; none when it is empty).

    Args:
        signature: :func:`text_signature` output.

    Returns:
        One key per band (``"b:digest"``).
    """
    if not signature:
        return []
    values = [_minhash(signature, i) for i in range(BANDS * ROWS)]
    keys = []
    for b in range(BANDS):
        band = values[b * ROWS : (b + 1) * ROWS]
        digest = hashlib.sha256(repr(band).encode("ascii")).hexdigest()[:32]
        keys.append(f"{b}:{digest}")
    return keys


@dataclass(frozen=True, slots=True)
class HarmMatch:
    """A verified harmful memory a text matches."""

    match: MatchKind
    """How it matched (``same_id``, ``same_text``, ``normalised_text``, ``near_duplicate``)."""
    memory_id: str
    """The harmful memory's id in the ledger."""
    content_hash: str
    """Its content hash."""
    run_id: str
    """The verified run that cleared it (the evidence)."""
    similarity: float
    """1.0 for the exact matches; the token-set Jaccard of a near-duplicate."""


@dataclass(frozen=True, slots=True)
class HarmTextRow:
    """One row of the content index, with its band keys."""

    memory_id: str
    content_hash: str
    text_hash: str | None
    signature: list[str] | None
    keys: list[str]


def harm_text_rows(
    memories: Iterable[Any], observations: Iterable[Observation]
) -> list[HarmTextRow]:
    """The content-index rows of a verified run: its cleared memories and carriers.

    Args:
        memories: The run's context (``core.memory.Memory``: ``id``, ``content``).
        observations: The run's verdicts (``scope_state.observe``; empty unless verified).

    Returns:
        The rows to insert.
    """
    texts = {m.id: m.content for m in memories}
    out = []
    for o in observations:
        if not (o.cleared or o.carrier) or o.memory_id not in texts:
            continue
        text = texts[o.memory_id]
        signature = text_signature(text)
        out.append(
            HarmTextRow(
                o.memory_id, o.content_hash, text_hash(text), signature, band_keys(signature)
            )
        )
    return out


def insert_harm_texts(
    conn: Connection, namespace: str, run_id: str, at: datetime, rows: Sequence[HarmTextRow]
) -> None:
    """Insert a run's content-index rows (inside its write transaction).

    Args:
        conn: The write transaction's connection.
        namespace: The ledger's namespace.
        run_id: The verified run.
        at: The run's time.
        rows: :func:`harm_text_rows` output.
    """
    insert_harm_texts_many(conn, namespace, [(run_id, at, rows)])


def insert_harm_texts_many(
    conn: Connection,
    namespace: str,
    runs: Sequence[tuple[str, datetime, Sequence[HarmTextRow]]],
) -> None:
    """Insert the content-index rows of many runs in two statements (bulk loads).

    Args:
        conn: The write transaction's connection.
        namespace: The ledger's namespace.
        runs: ``(run id, time, rows)`` per verified run.
    """
    flat = [(run_id, at, row) for run_id, at, rows in runs for row in rows]
    if not flat:
        return
    values = [
        {
            "namespace": namespace,
            "memory_id": row.memory_id,
            "content_hash": row.content_hash,
            "text_hash": row.text_hash,
            "signature": row.signature,
            "run_id": run_id,
            "created_at": at,
        }
        for run_id, at, row in flat
    ]
    keys = (
        conn.execute(
            t.harm_texts.insert().returning(t.harm_texts.c.id, sort_by_parameter_order=True),
            values,
        )
        .scalars()
        .all()
    )
    bands = [
        {"text_pk": pk, "namespace": namespace, "band_key": k}
        for pk, (_, _, row) in zip(keys, flat, strict=True)
        for k in row.keys
    ]
    if bands:
        conn.execute(t.harm_text_keys.insert(), bands)


_S = t.memory_scopes


def _active(
    conn: Connection, namespace: str, pairs: set[tuple[str, str]]
) -> dict[tuple[str, str], str]:
    """(memory id, content hash) -> latest clearing run id, for the pairs still active."""
    if not pairs:
        return {}
    hashes = sorted({h for _, h in pairs})
    rows = conn.execute(
        select(_S.c.memory_id, _S.c.content_hash, _S.c.cleared_run_id, _S.c.cleared_at)
        .where(
            _S.c.namespace == namespace,
            _S.c.content_hash.in_(hashes),
            _S.c.active == true(),
        )
        .order_by(_S.c.cleared_at.desc())
        .limit(MAX_CANDIDATES * scope_state.ROWS_PER_MEMORY)
    ).all()
    out: dict[tuple[str, str], str] = {}
    for row in rows:
        key = (row.memory_id, row.content_hash)
        if key in pairs and key not in out:
            out[key] = row.cleared_run_id or ""
    return out


def find_harm(
    conn: Connection,
    namespace: str,
    text: str,
    memory_id: str | None = None,
    *,
    threshold: float = NEAR_DUPLICATE_THRESHOLD,
) -> HarmMatch | None:
    """The strongest verified, still active harm ``text`` matches, or None (bounded reads).

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        text: The candidate memory's text.
        memory_id: Its id, if it has one.
        threshold: The near-duplicate Jaccard threshold.

    Returns:
        The match (same id, same text, normalised text, near-duplicate, in that order).
    """
    from ..runtime.hashing import content_hash

    digest = content_hash(text)
    exact = conn.execute(
        select(_S.c.memory_id, _S.c.cleared_run_id)
        .where(_S.c.namespace == namespace, _S.c.content_hash == digest, _S.c.active == true())
        .order_by(_S.c.cleared_at.desc())
        .limit(scope_state.ROWS_PER_MEMORY)
    ).all()
    if exact:
        own = [r for r in exact if r.memory_id == memory_id]
        row = own[0] if own else exact[0]
        kind: MatchKind = "same_id" if own else "same_text"
        return HarmMatch(kind, row.memory_id, digest, row.cleared_run_id or "", 1.0)
    h = t.harm_texts
    normal = conn.execute(
        select(h.c.memory_id, h.c.content_hash)
        .where(h.c.namespace == namespace, h.c.text_hash == text_hash(text))
        .limit(MAX_CANDIDATES)
    ).all()
    pairs = {(r.memory_id, r.content_hash) for r in normal}
    active = _active(conn, namespace, pairs)
    for r in normal:
        run = active.get((r.memory_id, r.content_hash))
        if run is not None:
            return HarmMatch("normalised_text", r.memory_id, r.content_hash, run, 1.0)
    signature = text_signature(text)
    keys = band_keys(signature)
    if not keys:
        return None
    k = t.harm_text_keys
    near = conn.execute(
        select(h.c.memory_id, h.c.content_hash, h.c.signature)
        .join(k, k.c.text_pk == h.c.id)
        .where(k.c.namespace == namespace, k.c.band_key.in_(keys))
        .distinct()
        .limit(MAX_CANDIDATES)
    ).all()
    scored = sorted(
        ((jaccard(signature, r.signature or []), r.memory_id, r.content_hash) for r in near),
        reverse=True,
    )
    scored = [s for s in scored if s[0] >= threshold]
    active = _active(conn, namespace, {(m, c) for _, m, c in scored})
    for similarity, mid, digest_ in scored:
        run = active.get((mid, digest_))
        if run is not None:
            return HarmMatch("near_duplicate", mid, digest_, run, round(similarity, 4))
    return None


@lru_cache(maxsize=128)
def _combined(memories: int, own: bool) -> Any:
    """The id lookup of ``scope_state`` plus, in the same statement, the content branches.

    Branch ``via=0`` per memory: its :data:`ROWS_PER_MEMORY` most recent active rows of the
    same id and text; ``via=1`` per memory: as many active rows of the same text under
    another id (index on namespace, content hash, active, cleared at); with ``own``, the
    asking question's rows of those memories. One ``UNION ALL``, one read.
    """
    branches: list[Any] = []
    for i in range(memories):
        for via, same_id in (
            (0, _S.c.memory_id == bindparam(f"m{i}")),
            (1, _S.c.memory_id != bindparam(f"m{i}")),
        ):
            recent = (
                select(
                    *_lookup_columns(),
                    literal_column(str(via), Integer).label("via"),
                    literal_column(str(i), Integer).label("slot"),
                )
                .where(
                    _S.c.namespace == bindparam("namespace"),
                    same_id,
                    _S.c.content_hash == bindparam(f"h{i}"),
                    _S.c.active == true(),
                )
                .order_by(_S.c.cleared_at.desc())
                .limit(bindparam("per_memory", type_=Integer))
                .subquery(f"{'r' if via == 0 else 'c'}{i}")
            )
            branches.append(select(*recent.c))
    if own:
        branches.append(
            select(
                *_lookup_columns(),
                literal_column("0", Integer).label("via"),
                literal_column("-1", Integer).label("slot"),
            ).where(
                _S.c.namespace == bindparam("namespace"),
                _S.c.query_id == bindparam("query_id"),
                _S.c.memory_id.in_(bindparam("ids", expanding=True)),
            )
        )
    return union_all(*branches)


def _scope_row(row: Any, memory_id: str, *, active: bool) -> ScopeRow:
    return ScopeRow(
        memory_id=memory_id,
        content_hash=row.content_hash,
        query_id=row.query_id,
        signature=list(row.signature) if row.signature else None,
        embedding=list(row.embedding) if row.embedding else None,
        cleared_run_id=row.cleared_run_id,
        carrier=bool(row.carrier),
        tested=bool(row.tested),
        settled=bool(row.settled),
        active=active,
        names=list(row.names) if row.names is not None else None,
    )


def load_active_any_id(
    conn: Connection, namespace: str, hashes: Mapping[str, str], query_id: str | None = None
) -> list[ScopeRow]:
    """``scope_state.load_active`` that also matches the same text under another id.

    One statement per 32 memories: per memory its :data:`ROWS_PER_MEMORY` most recent
    active rows of the same id and text, and as many of the same text under another id
    (returned under the context's id: the text came back under a new id), plus the asking
    question's own rows. O(K) rows, whatever the history.

    Args:
        conn: A connection in a read transaction.
        namespace: The ledger's namespace.
        hashes: Memory id -> content hash of the context.
        query_id: Also return this question's inactive rows.

    Returns:
        The rows (one per memory and question; same-id rows first).
    """
    items = list(hashes.items())
    out: list[ScopeRow] = []
    seen: set[tuple[str, str]] = set()
    for start in range(0, len(items), 32):
        chunk = items[start : start + 32]
        params: dict[str, Any] = {"namespace": namespace, "per_memory": scope_state.ROWS_PER_MEMORY}
        for i, (memory_id, digest) in enumerate(chunk):
            params[f"m{i}"], params[f"h{i}"] = memory_id, digest
        if query_id is not None:
            params["query_id"], params["ids"] = query_id, [m for m, _ in chunk]
        found = conn.execute(_combined(len(chunk), query_id is not None), params).all()
        for row in sorted(found, key=lambda r: (r.via, r.memory_id, r.id)):
            memory_id = row.memory_id if row.via == 0 else chunk[row.slot][0]
            key = (memory_id, row.query_id)
            if hashes.get(memory_id) != row.content_hash or key in seen:
                continue
            seen.add(key)
            out.append(_scope_row(row, memory_id, active=bool(row.active)))
    return out


def backfill_harm_texts(conn: Connection) -> int:
    """Index the memories verified runs already cleared (the version-4 migration).

    Every cleared memory of a complete, recovered run gets a row with its content hash
    (exact matches under any id work for every existing ledger); the normalised-text hash
    and the near-duplicate keys only where the ledger kept the memory's text
    (``store_text=True``).

    Args:
        conn: The migration's connection.

    Returns:
        The rows written.
    """
    r, m = t.runs, t.run_memories
    rows = conn.execute(
        select(m.c.namespace, m.c.memory_id, m.c.content_hash, m.c.memory_text)
        .add_columns(r.c.run_id, r.c.created_at)
        .join(r, m.c.run_pk == r.c.id)
        .where(m.c.cleared.is_(True), r.c.status == "complete", r.c.recovered.is_(True))
        .order_by(r.c.id, m.c.position)
    ).all()
    h = t.harm_texts
    done = {
        (r.namespace, r.memory_id, r.content_hash, r.run_id)
        for r in conn.execute(select(h.c.namespace, h.c.memory_id, h.c.content_hash, h.c.run_id))
    }
    written = 0
    for row in rows:
        if (row.namespace, row.memory_id, row.content_hash, row.run_id) in done:
            continue
        written += 1
        text = row.memory_text
        signature = text_signature(text) if text else None
        entry = HarmTextRow(
            row.memory_id,
            row.content_hash,
            text_hash(text) if text else None,
            signature,
            band_keys(signature) if signature else [],
        )
        insert_harm_texts(conn, row.namespace, row.run_id, row.created_at, [entry])
    return written


class LedgerHarmIndex:
    """Admission's view of a harm ledger (``ConMemAdmitter(harm_index=...)``).

    Args:
        ledger: The :class:`~meclear_integrations.ledger.HarmLedger`.
        threshold: The near-duplicate Jaccard threshold.

    Example:
        >>> from meclear_integrations.ledger import HarmLedger
        >>> from meclear_integrations.ledger.content import LedgerHarmIndex
        >>> with HarmLedger("sqlite://") as ledger:
        ...     LedgerHarmIndex(ledger).known_harm("User is allergic to shellfish.") is None
        True
    """

    def __init__(self, ledger: Any, *, threshold: float = NEAR_DUPLICATE_THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        self.ledger = ledger
        self.threshold = threshold

    def known_harm(self, text: str, memory_id: str | None = None) -> HarmMatch | None:
        """The strongest verified, still active harm ``text`` matches (:func:`find_harm`).

        Args:
            text: The candidate memory.
            memory_id: Its id, if any.

        Returns:
            The match, or None.
        """
        from .database import read_transaction

        with read_transaction(self.ledger.engine) as conn:
            return find_harm(conn, self.ledger.namespace, text, memory_id, threshold=self.threshold)
