"""The request path's one ledger read in background mode: verified harm, scoped to the question.

:func:`verified_harm` asks the ledger which memories of this context were verified harmful
for this question or one like it (``HarmLedger.scoped_harm``: state kept up to date on
write, O(K) per lookup). A memory is withheld only when its text is still the text the
harm was proven on (same content hash). A ledger without scoped evidence (an older
``LedgerLike``) falls back to its context-wide verified harm (``prior_harmful``), marked
``scope: "context"``. A harm whose latest verified run is an end user's feedback replay
(``HarmLedger.unconfirmed``: verified only against that user's correction) is not withheld:
the question's next audit, guided by it, verifies it with the loop's own signal first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.memory import Memory
from ..runtime.hashing import content_hash

__all__ = ["Withheld", "verified_harm"]


@dataclass(frozen=True, slots=True)
class Withheld:
    """One memory withheld from a background answer, and the proof."""

    memory_id: str
    run_id: str | None
    """The verified ledger run that proved it harmful."""
    query_id: str | None
    """The question it was proven on."""
    scope: str
    """``same_query``, ``similar_query`` or ``context`` (a ledger without scopes)."""
    similarity: float | None = None
    carrier: bool = False

    def metadata(self) -> dict[str, Any]:
        """The per-memory entry under ``withheld`` in the returned items' metadata."""
        return {
            "memory_id": self.memory_id,
            "status": "withheld",
            "status_reason": f"verified_harm:{self.scope}",
            "run_id": self.run_id,
            "query_id": self.query_id,
            "scope": self.scope,
            "similarity": self.similarity,
            "carrier": self.carrier,
        }


def verified_harm(ledger: Any, query: str, memories: Sequence[Memory]) -> list[Withheld]:
    """The memories of ``memories`` to withhold for ``query`` (module docstring).

    Args:
        ledger: A ``HarmLedger`` (or a ledger-like object).
        query: The question.
        memories: The retrieved context.

    Returns:
        One entry per withheld memory, in retrieval order.
    """
    scoped = getattr(ledger, "scoped_harm", None)
    if scoped is None:
        harmful = set(ledger.prior_harmful(memories))
        return [Withheld(m.id, None, None, "context") for m in memories if m.id in harmful]
    by_id = {m.id: m for m in memories}
    found: dict[str, Withheld] = {}
    harms = list(scoped(query, memories))
    check = getattr(ledger, "unconfirmed", None)
    unconfirmed = check(h.run_id for h in harms) if check is not None and harms else set()
    for harm in harms:
        if harm.run_id in unconfirmed:
            continue  # an end user's replay: the next audit verifies it first
        memory = by_id.get(harm.memory_id)
        if memory is None or content_hash(memory.content) != harm.content_hash:
            continue
        found.setdefault(
            harm.memory_id,
            Withheld(
                harm.memory_id,
                harm.run_id,
                harm.query_id,
                harm.scope,
                harm.similarity,
                bool(getattr(harm, "carrier", False)),
            ),
        )
    return [found[m.id] for m in memories if m.id in found]
