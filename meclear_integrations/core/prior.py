"""Prior candidates: memories verified harmful before, tried first as one candidate.

A caller that remembers earlier verified clearances (e.g. a harm ledger) passes the ids of
memories verified harmful for earlier queries as ``prior_harmful``. The engine keeps those
present in this context as one candidate C_p and verifies it like any other (Eq. 18-19,
with the configuration's verification rule: M minus C_p must pass its recovery test and
gain over v(M)). When it is admissible the run stops there: C_p is the clearance,
attribution is skipped (``report.clearance_search == "prior"``, attributions empty).
Otherwise Algorithm 1 runs as usual on the same coalition cache, so the attempt costs at
most the candidate's verification trials more than a cold run.

The engine never trusts a prior: an id is only a candidate to verify. Which memories to
offer (and which never to offer, e.g. memories a person restored) is the caller's policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .memory import Memory

__all__ = ["prior_positions"]


def prior_positions(context: Sequence[Memory], prior_harmful: Iterable[str]) -> list[int]:
    """Positions (retrieval order) of the context's memories named in ``prior_harmful``."""
    wanted = {str(i) for i in prior_harmful}
    return [i for i, m in enumerate(context) if m.id in wanted]
