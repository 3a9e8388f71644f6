"""Prior candidates: memories verified harmful before, tried first as one candidate.

A caller that remembers earlier verified clearances (e.g. a harm ledger) passes the ids of
memories verified harmful for earlier queries as ``prior_harmful``. The engine keeps those
present in this context as one candidate C_p and verifies it like any other (Eq. 18-19,
with the configuration's verification rule: M minus C_p must pass its recovery test and
gain over v(M)). When it is admissible the run stops there: C_p is the clearance,
attribution is skipped (``report.clearance_search == "prior"``, attributions empty).
Otherwise Algorithm 1 runs as usual on the same coalition cache, so the attempt costs at
most the candidate's verification trials more than a cold run.

A verified union says that removing C_p recovers this query, not that every member had to
go: a memory cleared together with others for an earlier query may be background here, and
a caller that counted the union as evidence against each member would pile up evidence
against memories that only rode along. A :class:`PriorCandidate` therefore names the
members whose own contribution the caller has not established yet (``unproven``). Once
C_p verifies, each of them present is *put back* in turn: the context M minus (C_p minus
{u}) is verified the same way (T trials first, which settle a failing context, then what
the rule asks). Its verdict is recorded after C_p in ``report.candidates``: a put-back that
does not verifiably recover shows that u's own removal was needed; one that recovers shows
this query did not need it. When several members recover put back alone (redundant
copies of one harm: each alone is outvoted by the evidence), they are put back *together*
as one more test, recorded last: a caller acquits them only when that union recovers
too, never one copy alone (``ledger.proof``). Members the caller names ``carriers`` (a
verified run found that each alone gives the harmful answer) are copies of the harm: they
are never put back alone, and they are put back with that union (with a single recovered
member too), so a copy whose put-back recovered only because another copy stayed withheld
is not acquitted. The tests are evidence, not a new choice: the clearance stays
C_p, which verified as a whole (a smaller context that passes the recovery test on a few
trials is not shown to answer as reliably under a sampled agent or a noisy judge), unless
the tests' extra trials of the full context overturn C_p's gain, in which case Algorithm 1
runs. Each test costs one context's verification; a caller that remembers the verdicts
pays it once per memory.

A *scoped* candidate (``scoped=True``: the caller verified these memories harmful for this
very question or one like it, e.g. with a reference answer or a person's correction) is
tried before the early exit: a reference-free judge fooled into accepting the full context
would otherwise stop the run before the known harm is tried. Its verification asks that M
minus C_p passes the recovery test (the same trials and rule as any candidate); the gain
over v(M) that the fooled judge hides was established by the verified run that proved the
harm for this question. A candidate that does not recover there falls back to the usual
flow (early exit test, then Algorithm 1), unless every member is *settled*: its harm for
this question was verified against a reference answer or a person's correction (a feedback
replay). A reference-free judge fooled by the stale memory may then reject the right
answer on M minus C_p as well as accept the wrong one on M; the live run cannot overturn
the stronger verdict, so the candidate is the clearance, reported with ``recovered=False``
and ``clearance_search="prior"`` (the live judge did not confirm it).

Such a run is not silent trust: it is a *challenge* that the caller re-verifies. Which
members count as settled is the caller's policy: the harm ledger names only settlements
someone vouched for (a reviewer's or an operator's feedback replay, or a run judged against
the application's reference; never an end user's correction alone), records every
challenge, and re-verifies it against the settlement's own evidence (the answer without the
memory judged against the trusted correction), lifting the settlement when that fails
(``ledger.settlement``, ``ledger.reverify``).

The engine never trusts a prior: an id is only a candidate to verify. Which memories to
offer (and which never to offer, e.g. memories a person restored) is the caller's policy.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-19.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from .memory import Memory

__all__ = ["PriorCandidate", "prior_positions"]


class PriorCandidate(BaseModel):
    """What a caller offers as the prior candidate (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ids: tuple[str, ...] = ()
    """Memories verified harmful before; those in the context form one candidate."""
    unproven: tuple[str, ...] = Field(default=())
    """Members of ``ids`` whose own contribution the caller has not established: each is
    put back once the candidate verifies, as a test recorded in the report."""
    settled: tuple[str, ...] = Field(default=())
    """Members of ``ids`` whose harm for this question was verified against a reference
    answer or a trusted person's correction: with ``scoped``, a candidate of settled members
    only is the clearance even when the live judge cannot confirm M minus C_p (``recovered``
    is then False in the report, a challenge the caller re-verifies: module docstring)."""
    carriers: tuple[str, ...] = Field(default=())
    """Members of ``ids`` a verified run named carriers of the harm (alone each gives the
    harmful answer): never put back; a put-back test that recovers is repeated with them
    put back too before a caller acquits anyone (module docstring)."""
    scoped: bool = False
    """The harm was verified for this very question or one like it (a scoped ledger
    lookup): the candidate is verified *before* the early exit, and M minus C_p passing
    its recovery test admits it even when the full context passes too (module docstring)."""

    @classmethod
    def of(cls, prior: Iterable[str] | PriorCandidate) -> PriorCandidate:
        """``prior`` as a candidate (plain ids: every member counts as proven).

        Args:
            prior: ids, or a candidate (returned as is).

        Returns:
            The candidate.
        """
        if isinstance(prior, PriorCandidate):
            return prior
        return cls(ids=tuple(str(i) for i in prior))


def prior_positions(context: Sequence[Memory], prior_harmful: Iterable[str]) -> list[int]:
    """Positions (retrieval order) of the context's memories named in ``prior_harmful``.

    Args:
        context: the frozen context.
        prior_harmful: the candidate's memory ids.

    Returns:
        Positions of those ids present in the context, in retrieval order.
    """
    wanted = {str(i) for i in prior_harmful}
    return [i for i, m in enumerate(context) if m.id in wanted]
