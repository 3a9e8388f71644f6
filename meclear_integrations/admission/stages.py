"""ConMem's stages as step generators (Sec. 4.2-4.5, App. B), driven by the admitter.

Each stage is a generator of steps: a :class:`_Batch` of independent model calls to run
(concurrently, by :class:`~.engine.ConMemAdmitter`'s sync or async driver) or an
:class:`_Emit` of a stage event. :class:`AdmissionStages` holds the stages (probe triplet
with validation and bounded repair, control and treatment responses, blind judge and
attribution auditor, CMTE with the tie-break, post-hoc reason); the admitter composes them
into the algorithm and executes the steps.

References:
    ConMem (Ji, Chen et al., 2026, arXiv:2610.33432), Sec. 4 and Appendix B.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .calls import ModelCall
from .config import AdmissionConfig
from .decision import (
    AttributionAudit,
    JudgeVerdict,
    ProbeCheck,
    ProbeEvaluation,
    ProbeRound,
    ReasonClassification,
    StageError,
    TieBreak,
)
from .events import AdmissionEvent, AdmissionStage
from .labels import PROBE_ROLES, Decision, Effect, ProbeRole
from .outputs import (
    AuditOutput,
    JudgeOutput,
    ProbeAuditOutput,
    ProbeRepairOutput,
    ProbeSetOutput,
    ReasonOutput,
    TieBreakOutput,
)
from .prompts import (
    audit_prompt,
    generation_prompt,
    judge_prompt,
    reason_prompt,
    repair_prompt,
    response_prompt,
    tie_break_prompt,
    validation_prompt,
)
from .scoring import (
    cmte,
    contribution,
    effect,
    graded_contribution,
    probe_strength,
    render_evidence,
    treatment_position,
    unmap_preference,
)

__all__ = ["AdmissionStages"]


@dataclass(frozen=True, slots=True)
class _Batch:
    calls: list[ModelCall]


@dataclass(frozen=True, slots=True)
class _Emit:
    event: AdmissionEvent


_Step = _Batch | _Emit
_Gen = Generator[_Step, Any, Any]
Probes = dict[str, str]
Checks = dict[str, ProbeCheck]


class AdmissionStages:
    """The stage generators of ConMem (module docstring); ``config`` set by the admitter."""

    config: AdmissionConfig

    # -- probes --------------------------------------------------------------------
    def _validate(self, context: str, candidate: str, probes: Probes) -> _Gen:
        prompt = validation_prompt(context, candidate, probes)
        (result,) = yield _Batch([ModelCall("probe_validation", prompt, ProbeAuditOutput)])
        if not result.ok:
            return StageError(
                stage="probe_validation",
                message="the probe auditor's output never parsed",
                failures=[result.failure],
            )
        audit: ProbeAuditOutput = result.value
        return {
            r: ProbeCheck(valid=getattr(audit, r).valid, issue=getattr(audit, r).issue)
            for r in PROBE_ROLES
        }

    def _probe_stage(self, candidate: str, context: str, rounds: list[ProbeRound]) -> _Gen:
        cfg = self.config
        (first,) = yield _Batch(
            [ModelCall("probe_generation", generation_prompt(context, candidate), ProbeSetOutput)]
        )
        if not first.ok:
            return StageError(
                stage="probe_generation",
                message="the probe generator's output never parsed",
                failures=[first.failure],
            )
        probes: Probes = first.value.model_dump()
        checks = yield from self._validate(context, candidate, probes)
        if isinstance(checks, StageError):
            return checks
        rounds.append(ProbeRound(kind="generate", probes=dict(probes), checks=checks))

        Step = Literal["regenerate", "targeted_repair", "fresh"]
        regenerate: list[Step] = ["regenerate"] * cfg.max_regeneration_rounds
        targeted: list[Step] = ["targeted_repair"] * cfg.max_targeted_repairs
        fresh: list[Step] = ["fresh"] * cfg.max_fresh_reconstructions
        ladder = regenerate + targeted + fresh
        for kind in ladder:
            invalid = [r for r in PROBE_ROLES if not checks[r].valid]
            if not invalid:
                break
            audit = _audit_text(checks)
            if kind == "targeted_repair":
                calls = [
                    ModelCall(
                        "probe_repair",
                        repair_prompt(context, candidate, r, probes, _audit_text(checks, r)),
                        ProbeRepairOutput,
                        role=r,
                    )
                    for r in invalid
                ]
                results = yield _Batch(calls)
                fixed = {
                    str(c.role): res.value.query
                    for c, res in zip(calls, results, strict=True)
                    if res.ok
                }
                errors = [res.failure.error for res in results if not res.ok]
            else:
                prompt = (
                    generation_prompt(
                        context, candidate, current=probes, invalid=invalid, audit=audit
                    )
                    if kind == "regenerate"
                    else generation_prompt(context, candidate, fresh=True)
                )
                (res,) = yield _Batch([ModelCall("probe_generation", prompt, ProbeSetOutput)])
                new = res.value.model_dump() if res.ok else {}
                fixed = new if kind == "fresh" else {r: new[r] for r in invalid if r in new}
                errors = [] if res.ok else [res.failure.error]
            if not fixed:
                rounds.append(ProbeRound(kind=kind, probes=dict(probes), error="; ".join(errors)))
                continue
            probes = {**probes, **fixed}
            checks = yield from self._validate(context, candidate, probes)
            if isinstance(checks, StageError):
                return checks
            rounds.append(
                ProbeRound(
                    kind=kind, probes=dict(probes), checks=checks, error="; ".join(errors) or None
                )
            )
        invalid = [r for r in PROBE_ROLES if not checks[r].valid]
        if invalid:
            return StageError(
                stage="probe_validation",
                message=f"probes for {invalid} still invalid after {len(rounds)} rounds "
                f"(bounded repair exhausted)",
            )
        return probes

    # -- responses -----------------------------------------------------------------
    def _response_stage(
        self, candidate: str, probes: Probes, roles: Sequence[ProbeRole] = PROBE_ROLES
    ) -> _Gen:
        calls = []
        for r in roles:
            calls.append(ModelCall("responses", response_prompt(probes[r], None), role=r))
            calls.append(ModelCall("responses", response_prompt(probes[r], candidate), role=r))
        results = yield _Batch(calls)
        failures = [res.failure for res in results if not res.ok]
        if failures:
            return StageError(
                stage="responses",
                message=f"{len(failures)} of {len(calls)} response calls returned nothing usable",
                failures=failures,
            )
        values = [res.value for res in results]
        return {r: (values[2 * i], values[2 * i + 1]) for i, r in enumerate(roles)}

    # -- evaluation ------------------------------------------------------------------
    def _evaluation_stage(
        self,
        candidate: str,
        context: str,
        probes: Probes,
        responses: dict[ProbeRole, tuple[str, str]],
        roles: Sequence[ProbeRole] = PROBE_ROLES,
    ) -> _Gen:
        cfg = self.config
        positions = {r: treatment_position(cfg.seed, candidate, context, r) for r in roles}
        judge_calls, audit_calls = [], []
        for r in roles:
            control, treatment = responses[r]
            a, b = (treatment, control) if positions[r] == "A" else (control, treatment)
            judge_calls.append(
                ModelCall("judge", judge_prompt(context, probes[r], a, b), JudgeOutput, role=r)
            )
            audit_calls.append(
                ModelCall(
                    "audit",
                    audit_prompt(context, candidate, probes[r], control, treatment),
                    AuditOutput,
                    role=r,
                )
            )
        results = yield _Batch(judge_calls + audit_calls)
        failures = [res.failure for res in results if not res.ok]
        if failures:
            return StageError(
                stage=failures[0].stage,
                message=f"{len(failures)} of {len(results)} judge/auditor calls never parsed",
                failures=failures,
            )
        out = []
        k = len(roles)
        for i, r in enumerate(roles):
            verdict: JudgeOutput = results[i].value
            raw: AuditOutput = results[k + i].value
            audit = AttributionAudit(**raw.model_dump())
            judge = JudgeVerdict(
                treatment_position=positions[r],
                raw_preference=verdict.preference,
                preference=unmap_preference(verdict.preference, positions[r]),
                explanation=verdict.explanation,
            )
            e = effect(audit, judge.preference)
            out.append(
                ProbeEvaluation(
                    role=r,
                    query=probes[r],
                    control_response=responses[r][0],
                    treatment_response=responses[r][1],
                    judge=judge,
                    audit=audit,
                    effect=e,
                    contribution=_contribution(cfg, r, audit, e, context, probes[r], responses[r]),
                )
            )
        return out

    # -- admission -------------------------------------------------------------------
    def _admission_stage(
        self, candidate: str, context: str, evaluations: list[ProbeEvaluation]
    ) -> _Gen:
        value = cmte([e.contribution or 0.0 for e in evaluations])
        summary = _score_explanation(value, evaluations)
        threshold = self.config.decision_threshold
        if threshold != 0.0:
            # a threshold chosen on dev: CMTE against it (a zero CMTE falls on one side)
            chosen: Decision = "store" if value > threshold else "do_not_store"
            return chosen, value, None, f"{summary}\nthreshold {threshold:+.4f}: {chosen}"
        if value > self.config.epsilon:
            return "store", value, None, summary
        if value < -self.config.epsilon:
            return "do_not_store", value, None, summary
        if self.config.tie_break != "judge":
            fixed: Decision = self.config.tie_break
            why = f"CMTE is zero: the configured default ({fixed}) decides, no judge"
            return fixed, value, TieBreak(decision=fixed, explanation=why), f"{summary}\n{why}"
        prompt = tie_break_prompt(candidate, context, render_evidence(evaluations))
        (res,) = yield _Batch([ModelCall("tie_break", prompt, TieBreakOutput)])
        if not res.ok:
            return StageError(
                stage="tie_break",
                message="CMTE is inconclusive and the tie-break judge's output never parsed",
                failures=[res.failure],
            )
        verdict: TieBreakOutput = res.value
        decision: Decision = "store" if verdict.decision == "STORE" else "do_not_store"
        tie = TieBreak(decision=decision, explanation=verdict.explanation)
        return (
            decision,
            value,
            tie,
            f"{summary}\nTie-break ({verdict.decision}): {verdict.explanation}",
        )

    # -- reason ----------------------------------------------------------------------
    def _reason_stage(
        self, candidate: str, context: str, decision: Decision, explanation: str
    ) -> _Gen:
        if decision == "store":
            return ReasonClassification(reason_type="directly_relevant", source="rule")
        if not self.config.classify_reasons:
            return None
        prompt = reason_prompt(candidate, context, explanation)
        (res,) = yield _Batch([ModelCall("reason", prompt, ReasonOutput)])
        if not res.ok:
            return ReasonClassification(
                reason_type=None,
                source="classifier",
                error=StageError(
                    stage="reason",
                    message="the reason classifier's output never parsed; decision unchanged",
                    failures=[res.failure],
                ),
            )
        out: ReasonOutput = res.value
        return ReasonClassification(
            reason_type=out.reason_type,
            source="classifier",
            confidence=out.confidence,
            explanation=out.explanation,
        )


def _audit_text(checks: Checks, role: ProbeRole | None = None) -> str:
    roles = [role] if role else list(PROBE_ROLES)
    return "\n".join(
        f"{r}: {'valid' if checks[r].valid else 'INVALID'}"
        + (f" - {checks[r].issue}" if checks[r].issue else "")
        for r in roles
    )


def _contribution(
    cfg: AdmissionConfig,
    role: ProbeRole,
    audit: AttributionAudit,
    probe_effect: Effect,
    context: str,
    query: str,
    responses: tuple[str, str],
) -> float:
    """c_i: the paper's categorical one, or graded by the probe's strength (config)."""
    value = contribution(role, audit, probe_effect, cfg.weights)
    if cfg.effect == "categorical" or value <= 0:
        return value
    strength = probe_strength(
        query,
        responses[0],
        responses[1],
        context,
        kind=cfg.graded_strength,
        half=cfg.graded_half,
    )
    return graded_contribution(value, strength)


def _score_explanation(value: float, evaluations: Sequence[ProbeEvaluation]) -> str:
    lines = [f"CMTE = {value:+.4f}"]
    for e in evaluations:
        audit = e.audit
        lines.append(
            f"{e.role} probe: label={audit.label if audit else None}, effect={e.effect}, "
            f"c={e.contribution or 0.0:+.2f}; auditor: {audit.explanation if audit else ''}"
        )
    return "\n".join(lines)


def _stage_payload(stage: AdmissionStage, result: Any) -> dict[str, Any]:
    if stage == "probes":
        return {"roles": list(result)}
    if stage == "responses":
        return {"responses": 2 * len(result)}
    if stage == "evaluation":
        return {
            e.role: {
                "label": e.audit.label if e.audit else None,
                "preference": e.judge.preference if e.judge else None,
                "treatment_position": e.judge.treatment_position if e.judge else None,
                "effect": e.effect,
                "contribution": e.contribution,
            }
            for e in result
        }
    if stage == "admission":
        decision, value, tie, _ = result
        return {"decision": decision, "cmte": value, "tie_break": tie is not None}
    if stage == "reason":
        return {"reason_type": result.reason_type if result else None}
    return {}
