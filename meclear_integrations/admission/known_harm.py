"""What admission does with a candidate the harm ledger verified harmful before.

A memory store re-extracts facts: a memory that a verified clearance removed (the harm
ledger, :mod:`meclear_integrations.ledger`) can be written again, under its old id, under
a new one, reworded slightly. ``ConMemAdmitter(..., harm_index=...)`` looks every
candidate up before any model call (``ledger.content.LedgerHarmIndex`` over a
``HarmLedger``: bounded indexed reads) and never stores such a candidate silently:

- **Exact** (the same id and text, the same text under another id, or the same
  normalised text: case, white space and final punctuation aside): ``on_known_harm``,
  default ``"reject"``: ``do_not_store`` at once with no model call; the decision's
  ``known_harm`` names the match, the harmful memory and the verified run that cleared it
  (the evidence).
- **Near-duplicate** (token-set Jaccard of content words, negations kept, >= 0.8):
  ``on_near_duplicate_harm``, default ``"flag"``: ConMem decides as usual (a reworded
  memory can be a correction of the harmful one) and the decision carries ``known_harm``
  with ``action="flagged"`` in its summary, its metadata and its events; ``"reject"``
  rejects it too.

A harm that a restore, an acquittal or a finding that the memory is needed lifted no
longer matches.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

__all__ = [
    "HarmIndex",
    "HarmMatchLike",
    "KnownHarm",
    "KnownHarmPolicy",
    "MatchKind",
    "known_harm",
]

MatchKind = Literal["same_id", "same_text", "normalised_text", "near_duplicate"]
KnownHarmPolicy = Literal["reject", "flag"]


class HarmMatchLike(Protocol):
    """A match as a harm index returns it (``ledger.content.HarmMatch``)."""

    @property
    def match(self) -> MatchKind: ...  # noqa: D102

    @property
    def memory_id(self) -> str: ...  # noqa: D102

    @property
    def run_id(self) -> str: ...  # noqa: D102

    @property
    def similarity(self) -> float: ...  # noqa: D102


class HarmIndex(Protocol):
    """Looks a candidate up among verified harmful memories (``LedgerHarmIndex``)."""

    def known_harm(self, text: str, memory_id: str | None = None) -> HarmMatchLike | None:
        """The strongest verified, still active harm ``text`` matches, or None."""
        ...


class KnownHarm(BaseModel):
    """A candidate the ledger verified harmful before, and what admission did about it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    match: MatchKind
    """``same_id``, ``same_text`` (another id), ``normalised_text`` or ``near_duplicate``."""
    memory_id: str
    """The harmful memory's id in the ledger."""
    run_id: str
    """The verified clearance run that removed it (the evidence)."""
    similarity: float
    """1.0 for exact matches; the token-set Jaccard of a near-duplicate."""
    action: Literal["rejected", "flagged"]
    """``rejected``: do-not-store with no model call; ``flagged``: ConMem decided."""

    @property
    def exact(self) -> bool:
        """Whether the text (not a near-duplicate of it) was verified harmful."""
        return self.match != "near_duplicate"

    def reason(self) -> str:
        """One line for the decision's explanation."""
        what = {
            "same_id": "this memory (same id and text)",
            "same_text": f"the same text under id {self.memory_id!r}",
            "normalised_text": f"the same text (normalised) under id {self.memory_id!r}",
            "near_duplicate": (
                f"a near-duplicate (Jaccard {self.similarity:.2f}) of memory {self.memory_id!r}"
            ),
        }[self.match]
        return f"The harm ledger verified {what} harmful in run {self.run_id}: {self.action}."


def known_harm(
    found: HarmMatchLike, *, on_exact: KnownHarmPolicy, on_near: KnownHarmPolicy
) -> KnownHarm:
    """The :class:`KnownHarm` of a match under the configured policies.

    Args:
        found: The index's match.
        on_exact: What an exact match does.
        on_near: What a near-duplicate does.

    Returns:
        The record, with its action.
    """
    policy = on_near if found.match == "near_duplicate" else on_exact
    return KnownHarm(
        match=found.match,
        memory_id=found.memory_id,
        run_id=found.run_id,
        similarity=float(found.similarity),
        action="rejected" if policy == "reject" else "flagged",
    )
