"""The clearance report: every decision of one run, JSON round-trippable.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3, 5, 7, 11, 13-19.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .config import ClearanceConfig
from .estimators.interactions import InteractionLabel
from .memory import Memory
from .screening import LooLabel

__all__ = [
    "CandidateFamily",
    "CarrierEvidence",
    "CarrierStatus",
    "ClearanceCandidate",
    "ClearanceCost",
    "ClearanceFailure",
    "ClearanceReport",
    "ClearanceStatus",
    "FailedCoalition",
    "FailureReason",
    "MemoryAttribution",
    "PairInteraction",
    "TokenUsage",
]

CandidateFamily = Literal[
    "nested",
    "minimal",
    "fallback",
    "escalation",
    "prior",
    "answer_group",
    "residual",
    "recency",
    "surrogate",
]
"""Where a clearance candidate came from (see :attr:`ClearanceCandidate.family`)."""
ClearanceStatus = Literal["complete", "failed", "unverified", "skipped"]
"""How a clearance ended (:attr:`ClearanceReport.status`)."""
FailureReason = Literal[
    "evaluator_error",
    "call_budget",
    "time_budget",
    "too_many_memories",
    "invalid_score",
    "estimator_error",
]

CarrierStatus = Literal[
    "found",
    "none_found",
    "answers_not_reported",
    "harm_is_abstention",
]
"""How the carriers search ended (:attr:`ClearanceReport.carrier_status`)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class CarrierEvidence(BaseModel):
    """A kept memory that carries the verified harm by itself (``core.stages.carriers``).

    Harmful by redundancy: alone, it makes the agent give the harmful answer, although
    this query's verified clearance did not need to remove it.
    """

    model_config = _FROZEN

    memory_id: str
    """Id of the memory."""
    position: int
    """Index in the frozen retrieval order."""
    answer: str
    """The agent's answer on the memory alone (redacted, at most 300 characters)."""
    harmful_answer: str
    """The full context's failing answer it agrees with (redacted, at most 300
    characters)."""
    score: float
    """The judge's score of the memory alone (below the success threshold)."""
    trials: int = 1
    """Trials of the memory alone behind the evidence."""
    withheld: bool = False
    """Also removed from this query's context (``clearance_scope="complete"``, verified)."""


class MemoryAttribution(BaseModel):
    """Screening and attribution of one memory."""

    model_config = _FROZEN

    memory_id: str
    """Id of the memory."""
    position: int
    """Index in the frozen retrieval order."""
    loo_effect: float | None
    """d_i = v(M) - v(M minus m_i) (Eq. 7); None when M minus m_i was not evaluated
    (hierarchical attribution screens memories in groups and measures d_i only for the
    ones it singles out)."""
    loo_label: LooLabel | None
    """harmful (d_i < -kappa), inconclusive, or beneficial (d_i > kappa); None when d_i was
    not measured."""
    shapley: float
    """psi_i, the estimated cooperative contribution (Eq. 3 / Eq. 11)."""
    shapley_interval: tuple[float, float]
    """Confidence interval of psi_i (Hoeffding, Eq. 13, for permutation sampling; a
    bootstrap interval, simultaneous over the memories, for KernelSHAP; a point for exact
    enumeration)."""
    rank: int
    """1 = most negative contribution (the priority order of Eq. 16 over all memories)."""
    harmful: bool
    """In H^: psi_i < -tau (Eq. 14), with the interval rule also an interval below zero;
    a fallback memory (below -tau, interval reaching zero) is harmful once the verified
    clearance removes it (``ClearanceConfig.harm_rule``)."""
    cleared: bool
    """Removed from the returned context."""
    answer_group: bool = False
    """Alone, the memory gives the answer the full context failed with (grouped by the
    answer it supports, ``core.grouping.answer_group``): a flag that redundancy does not
    shrink; False when not tested."""


class PairInteraction(BaseModel):
    """omega_ij of one pair (Eq. 15) and its structural label."""

    model_config = _FROZEN

    memory_ids: tuple[str, str]
    omega: float
    label: InteractionLabel


class ClearanceCandidate(BaseModel):
    """One nested clearance candidate C_j (Eq. 17) and its verification (Eq. 18-19)."""

    model_config = _FROZEN

    size: int
    """j = |C_j| (0 is the unchanged context)."""
    memory_ids: list[str]
    """Ids cleared by the candidate, in priority order."""
    value: float
    """v^(M minus C_j)."""
    gain: float
    """g^(j) = v^(M minus C_j) - v^(M) (Eq. 18)."""
    recovered: bool
    """nu(M minus C_j) = 1: every trial passed the success threshold."""
    admissible: bool
    """j in J_t (Eq. 19): j = 0, or positive gain and recovered."""
    trials: int = Field(default=0, ge=0)
    """Evaluator trials behind ``value`` (T when verified; 1 for a candidate that adaptive
    trials ruled out on its first trial; 0 in reports written before this field)."""
    family: CandidateFamily | None = None
    """``nested`` (Eq. 17, C_0 included), ``minimal`` (a subset of H^, Eq. 5),
    ``fallback`` (H^ plus memories below -tau whose interval reaches zero), ``escalation``
    (found by the subset search over negative-valued memories after nothing else verified,
    ``core.escalation``), ``prior`` (the caller's prior candidate), ``recency`` (the older
    of similar dated memories, ``core.recency``), ``answer_group`` (the
    memories that alone give the failing answer, nested by contribution, tried when no
    candidate of H^ verified, ``core.grouping.answer_group``), ``residual`` (the
    best-looking candidate plus a residual harm, ``core.residual``), ``surrogate`` (nested
    by a Lasso surrogate of the coalition table, ``core.surrogate``); None in reports
    written before this field."""


class TokenUsage(BaseModel):
    """Tokens of a set of model calls, as the provider reported them."""

    model_config = _FROZEN

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    calls_reported: int = 0
    """Model calls whose usage the provider reported (the sums cover these calls)."""


class ClearanceCost(BaseModel):
    """What the run cost in evaluator work."""

    model_config = _FROZEN

    coalitions: int
    """Distinct coalitions evaluated."""
    evaluator_calls: int
    """Evaluator invocations (coalitions x trials)."""
    cache_hits: int
    """Coalition requests answered from the cache."""
    wall_seconds: float
    """Wall time of the run."""
    rounds: int = 0
    """Batches sent to the evaluator (model round trips of latency when each batch fits
    within ``max_concurrency``)."""
    attempts: int = 0
    """Evaluator invocations started, retries and failed calls included (what
    ``max_evaluator_calls`` counts)."""
    retries: int = 0
    """Attempts that retried a transient failure."""
    agent_calls: int | None = None
    """Model calls the task agent made (what a user pays: deduplicated per query, failed
    calls included); None when the evaluator is the caller's own function."""
    judge_calls: int | None = None
    """Model calls the judge made (one per distinct answer when its input does not depend
    on the coalition); None when unknown."""
    agent_tokens: TokenUsage | None = None
    """Tokens of the agent's model calls, when the provider reports usage."""
    judge_tokens: TokenUsage | None = None
    """Tokens of the judge's model calls, when the provider reports usage."""
    carrier_calls: int = 0
    """Evaluator calls (included in ``evaluator_calls``) the carriers search and the
    verification of ``clearance_scope="complete"`` made (``core.stages.carriers``)."""

    @property
    def model_calls(self) -> int | None:
        """Agent plus judge model calls (None when unknown)."""
        if self.agent_calls is None and self.judge_calls is None:
            return None
        return (self.agent_calls or 0) + (self.judge_calls or 0)


class FailedCoalition(BaseModel):
    """One evaluator call that failed after its retries."""

    model_config = _FROZEN

    memory_ids: list[str]
    """The coalition, in retrieval order."""
    trial: int
    """Trial index."""
    error_type: str
    """Class name of the original error."""
    error: str
    """Its message, secrets redacted, at most 500 characters."""
    transient: bool
    """Classified transient (it was retried, and retries ran out)."""
    attempts: int
    """Attempts made on this call."""
    kind: str | None = None
    """The failure's kind (``core.failures.kind``: ``transient``, ``unreadable``,
    ``content_rejected``, ``permanent``...): a ``content_rejected`` entry names the memories
    whose content the provider refused."""


class ClearanceFailure(BaseModel):
    """Why a run could not finish, and what of its work is still usable."""

    model_config = _FROZEN

    reason: FailureReason
    """``evaluator_error`` (a call failed after its retries), ``call_budget`` /
    ``time_budget`` (``max_evaluator_calls`` / ``max_wall_seconds`` ran out),
    ``too_many_memories`` (K above ``max_memories``), ``invalid_score`` (a score outside
    [0, 1]), ``estimator_error`` (the attribution estimator failed numerically after calls
    were spent)."""
    stage: str
    """Stage that was running: screening, attribution, interactions or clearance."""
    error_type: str
    """Class name of the error that stopped the run."""
    error: str
    """Its message, secrets redacted, at most 500 characters."""
    failed_coalitions: list[FailedCoalition] = Field(default_factory=list)
    """Evaluator calls that failed (a failed batch stops at its first failures; calls
    still in flight were cancelled and are not listed)."""
    estimates_usable: bool = False
    """True when attribution had finished before the failure: ``attributions`` holds the
    complete contributions (harmful flags included) but no clearance was verified, so
    nothing is cleared. False: no estimate is complete and ``attributions`` is empty."""
    coalitions_evaluated: int = 0
    """Distinct coalitions whose values were complete when the run stopped."""
    kind: str | None = None
    """The failure's kind (``core.failures.kind``): ``transient``, ``unreadable``,
    ``content_rejected``, ``budget``, ``capacity``, ``estimator``, ``invalid_score``; the
    same name the warning, the metadata, the events and the span carry."""


class ClearanceReport(BaseModel):
    """Result of one MeClear run over a frozen context."""

    model_config = _FROZEN

    baseline_value: float | None
    """v^(M); None for an empty context (nothing evaluated)."""
    final_value: float | None
    """v^ of the returned context (Theorem 2: >= baseline_value)."""
    recovered: bool
    """The returned context satisfies the recovery predicate nu."""
    kept: list[Memory]
    """Returned context, original order."""
    cleared: list[Memory]
    """Memories removed for this query (the bank is untouched), original order."""
    withheld: list[Memory] = Field(default_factory=list)
    """Carriers also removed for this query (``clearance_scope="complete"``, verified),
    original order; ``kept``, ``cleared`` and ``withheld`` partition the context."""
    attributions: list[MemoryAttribution]
    """One per memory, retrieval order."""
    interactions: list[PairInteraction] = Field(default_factory=list)
    """Pairwise interactions when ``config.interactions`` is on."""
    candidates: list[ClearanceCandidate]
    """Every candidate tried, C_0 first."""
    cost: ClearanceCost
    """Distinct coalitions, evaluator calls, cache hits, rounds and wall time of the run."""
    config: ClearanceConfig
    """The configuration of the run."""
    estimator: str | None = None
    """Concrete estimator used (``exact``, ``kernel``, ``permutation``, ``bernstein``);
    None when attribution did not run (empty context or early exit)."""
    clearance_search: Literal["nested", "minimal", "prior", "recency"] = "nested"
    """Candidate family searched: nested (Eq. 17) or every subset of H^ (Eq. 5); ``prior``:
    the caller's prior candidate (``prior_ids``) was verified and is the clearance, so
    attribution was skipped and ``attributions`` is empty (``core.prior``); ``recency``:
    likewise for the recency candidate (``recency_ids``, ``core.recency``)."""
    recency_ids: list[str] = Field(default_factory=list)
    """The recency candidate tried (the older of similar dated memories, ``core.recency``),
    whether or not it verified; empty when the engine has no ``recency`` or there was none."""
    recency_ignored: list[str] = Field(default_factory=list)
    """Memories whose date the recency candidate ignored: unreadable, out of range or in
    the future (``core.recency``; a WARNING is logged once per run when any)."""
    prior_ids: list[str] = Field(default_factory=list)
    """Memories of this context the caller named as verified harmful before
    (``prior_harmful``), tried first as one candidate; empty when none was offered."""
    early_exit: bool = False
    """The full context already satisfied the recovery predicate, so attribution was
    skipped: ``attributions`` is empty and nothing is cleared."""
    status: ClearanceStatus = "complete"
    """``complete``: every decision above was verified. ``failed`` (fail-open): the run
    could not finish; the full context is returned unchanged (``kept`` = every memory,
    ``cleared`` empty, ``recovered`` False) and ``failure`` says why. ``unverified``: the
    run abstained because the judge's verdicts were inconsistent; ``skipped``: clearance
    was declined before any model call; both keep the context unchanged and say why in
    ``status_reason``."""
    failure: ClearanceFailure | None = None
    """Why the run failed (None when ``status == "complete"``)."""
    status_reason: str | None = None
    """Why the run is ``unverified`` (it abstained: e.g. ``inconsistent_verdicts``) or
    ``skipped`` (clearance was declined up front: e.g. ``budget``, a trigger policy, or
    after the baseline trials: ``no_memory_explains_failure``, ``model_cannot_answer``);
    None otherwise. All return the context unchanged."""
    carriers: list[CarrierEvidence] = Field(default_factory=list)
    """Kept memories that carry the verified harm by themselves (redundant copies the
    minimal clearance did not need to remove), with the evidence for each; withheld from
    the context too under ``clearance_scope="complete"`` when the answer verifiably stays
    right without them (then they are in neither ``kept`` nor ``cleared``)."""
    carrier_status: CarrierStatus | None = None
    """How the carriers search ended; None when it did not run (no verified clearance,
    or ``find_carriers`` off)."""

    @property
    def failed(self) -> bool:
        """The run could not finish and failed open."""
        return self.status == "failed"

    @property
    def cleared_ids(self) -> list[str]:
        """Ids of the cleared memories, in retrieval order."""
        return [m.id for m in self.cleared]

    @property
    def kept_ids(self) -> list[str]:
        """Ids of the kept memories, in retrieval order."""
        return [m.id for m in self.kept]

    @property
    def suspect_ids(self) -> list[str]:
        """Ids of the instruction-like memories (``core.instructions``), in retrieval order."""
        from .instructions import is_instruction_like

        return [m.id for m in (*self.kept, *self.cleared) if is_instruction_like(m.content)]

    @property
    def suspects_kept(self) -> list[str]:
        """Suspects a clearance left in the context while removing other memories.

        Non-empty only when something was cleared: such a fix may have framed an innocent
        memory (an injection that acts only when it is present); it is reported, and review
        does not propose the cleared memories on this evidence alone.
        """
        if not self.cleared:
            return []
        from .instructions import is_instruction_like

        return [m.id for m in self.kept if is_instruction_like(m.content)]

    @property
    def carrier_ids(self) -> list[str]:
        """Ids of the carriers of the verified harm, in retrieval order."""
        return [c.memory_id for c in self.carriers]

    @property
    def withheld_ids(self) -> list[str]:
        """Ids of the withheld carriers, in retrieval order."""
        return [m.id for m in self.withheld]

    @property
    def removed_ids(self) -> list[str]:
        """Ids of every memory removed from this query's context (cleared, then withheld)."""
        return self.cleared_ids + self.withheld_ids

    @property
    def harmful_ids(self) -> list[str]:
        """Ids of the memories flagged harmful (H^, Eq. 14)."""
        return [a.memory_id for a in self.attributions if a.harmful]

    def attribution(self, memory_id: str) -> MemoryAttribution:
        """The attribution of ``memory_id`` (KeyError when absent).

        Args:
            memory_id: the id of a memory of the context.

        Returns:
            Its attribution.

        Raises:
            KeyError: no memory of the context has this id.
        """
        for a in self.attributions:
            if a.memory_id == memory_id:
                return a
        raise KeyError(memory_id)

    def to_table(self) -> str:
        """A readable text rendering of the report.

        Returns:
            One row per memory (LOO effect, label, Shapley value, interval, rank, verdict) and
            the clearance.
        """
        return render_report(self)


def _fmt(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:+.3f}"


def render_report(report: ClearanceReport) -> str:
    """The report as a plain-text table: one row per memory, then the clearance.

    Args:
        report: a clearance report.

    Returns:
        The table and a summary of what was cleared and what it cost.
    """
    width = max([len("memory"), *(len(a.memory_id) for a in report.attributions)])
    lines = [
        f"{'memory':<{width}}  {'LOO d':>7}  {'LOO label':<12}  {'Shapley':>8}  "
        f"{'interval':<17}  {'rank':>4}  {'harmful':<7}  cleared",
    ]
    for a in report.attributions:
        lo, hi = a.shapley_interval
        lines.append(
            f"{a.memory_id:<{width}}  {_fmt(a.loo_effect):>7}  {a.loo_label or 'n/a':<12}  "
            f"{a.shapley:>+8.3f}  [{lo:+.2f}, {hi:+.2f}]  {a.rank:>4}  "
            f"{'yes' if a.harmful else 'no':<7}  {'yes' if a.cleared else 'no'}"
        )
    if report.interactions:
        lines.append("")
        lines.append("pairwise interactions (Eq. 15):")
        for p in report.interactions:
            lines.append(f"  {p.memory_ids[0]} x {p.memory_ids[1]}: {p.omega:+.3f} {p.label}")
    lines.append("")
    lines.append("clearance candidates (Eq. 17-19):")
    for c in report.candidates:
        ids = ", ".join(c.memory_ids) or "(none)"
        lines.append(
            f"  j={c.size} clear {{{ids}}}: value {c.value:.3f}, gain {c.gain:+.3f}, "
            f"recovered {'yes' if c.recovered else 'no'}, "
            f"admissible {'yes' if c.admissible else 'no'}"
        )
    lines.append("")
    lines.append(
        f"baseline v(M) {_fmt(report.baseline_value)} -> final {_fmt(report.final_value)}; "
        f"cleared [{', '.join(report.cleared_ids)}]; "
        f"recovered {'yes' if report.recovered else 'no'}"
    )
    if report.carrier_status is not None:
        lines.append(f"carriers ({report.carrier_status}, {report.cost.carrier_calls} calls):")
        for carrier in report.carriers:
            state = "withheld" if carrier.withheld else "kept"
            lines.append(f"  {carrier.memory_id} alone answers {carrier.answer[:80]!r} ({state})")
    if report.status == "skipped" and report.status_reason:
        lines.append(f"skipped: {report.status_reason}")
    failure = getattr(report, "failure", None)
    if failure is not None:
        usable = "usable" if failure.estimates_usable else "not usable"
        lines.append(
            f"FAILED OPEN ({failure.reason} in {failure.stage}): context returned unchanged; "
            f"{len(failure.failed_coalitions)} failed coalition(s); estimates {usable}"
        )
        lines.append(f"  {failure.error_type}: {failure.error}")
    if report.early_exit:
        lines.append("early exit: the full context already recovers; attribution skipped")
    elif report.clearance_search == "prior":
        lines.append(
            f"prior candidate [{', '.join(report.prior_ids)}] verified; attribution skipped"
        )
    elif report.clearance_search == "recency":
        lines.append(
            f"recency candidate [{', '.join(report.recency_ids)}] verified; attribution skipped"
        )
    elif report.estimator:
        lines.append(f"estimator {report.estimator}, {report.clearance_search} clearance")
    cost = report.cost
    lines.append(
        f"cost: {cost.coalitions} coalitions, {cost.evaluator_calls} evaluator calls, "
        f"{cost.cache_hits} cache hits, {cost.rounds} rounds, {cost.wall_seconds:.3f}s"
    )
    return "\n".join(lines)
