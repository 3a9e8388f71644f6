"""A failure no memory explains: stop after the baseline trials instead of paying in full.

When the full context M fails (``stops.unexplained``), the agent is asked once on each
memory alone and once on no memory (K + 1 calls, one batch) before LOO and attribution:

- no trial of M and no memory alone passes, and neither does the context without the
  memories that alone give the failing answer (the answer group, one call): nothing in
  the context carries the right answer, alone or with another memory once the harm's
  copies are gone, so the run stops with ``status="skipped"``, reason
  ``no_memory_explains_failure``;
- moreover every answer (M's trials, each memory alone) is the no-memory answer (the
  evaluator reports answers, ``core.answers``): the model's answer does not depend on the
  memories at all (e.g. it always says "I don't know"): reason ``model_cannot_answer``.

Otherwise the run goes on; the singletons stay in the table (the carriers search and
exact attribution reuse them). The check costs K + 1 calls on every failing context, so
``True`` is opt-in. ``"auto"`` (:func:`confirm_unexplained`) runs the same check only
after the screening batch failed everywhere: no call on a context screening can fix,
the screening batch plus K + 2 calls on one no memory explains.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 7, 18-20.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..answers import plain_same
from ..estimators import HierarchicalShapley, ShapleyEstimator
from ..events import StageEvent
from ..game import Coalition, from_positions
from ..grouping import (
    GROUP_SEARCH_FROM,
    answer_group,
    answer_group_search,
    memory_graph,
    silent_answers,
)
from ..report import ClearanceReport
from .outcomes import clearance_end, kept_report
from .steps import Emit, Evaluate, Run, Steps, want

__all__ = [
    "alone",
    "confirm_unexplained",
    "probe_coalitions",
    "probe_unexplained",
    "recovers",
    "unexplained",
    "unexplained_stop",
    "uniform_failure",
    "without_group",
]


def recovers(run: Run, coalitions: Iterable[Coalition]) -> bool:
    """Whether a trial of ``coalitions`` passes (pooled: with an answer mostly passed).

    Without ``EarlyStops.pooled_verdicts`` (the default) any passing trial counts. With
    it, the judge's verdicts on one answer (the same text once lower-cased, punctuation
    dropped: ``core.answers.plain_same``) are pooled over the whole table: a pass whose
    answer the judge failed on more trials than it passed it is the judge contradicting
    itself on that answer, as a noisy judge does (one flip among the many trials of the
    failing answer). It does not show that the coalition recovers, so the checks of this
    module do not go on for it. A pass whose answer is not reported always counts, and
    so does every pass of a judge that never contradicts itself (the same answer, the
    same verdict): then nothing changes.

    Args:
        run: the run.
        coalitions: the coalitions looked at (their cached trials).

    Returns:
        True when one of their trials passes with an answer passed at least as often as
        failed.
    """
    game = run.game
    threshold = run.config.verification.success_threshold
    if not run.config.stops.pooled_verdicts:
        return any(s >= threshold for c in coalitions for s in game.scores.get(c, ()))
    tally: dict[str, list[int]] | None = None
    for coalition in coalitions:
        scores = game.scores.get(coalition, ())
        answers = game.answers_of(coalition)
        for trial, score in enumerate(scores):
            if score < threshold:
                continue
            answer = answers[trial] if trial < len(answers) else None
            if answer is None:
                return True
            if tally is None:
                tally = _verdicts(run)
            passed = failed = 0
            for text, (yes, no) in tally.items():
                if plain_same(answer, text):
                    passed, failed = passed + yes, failed + no
            if passed >= failed:
                return True
    return False


def without_group(run: Run, group: list[int], *, each: bool = False) -> Steps[bool]:
    """Ask the context without the answer group; whether it recovers.

    The group is the memories that alone give the full context's failing answer. With
    ``EarlyStops.pooled_verdicts``, a memory alone whose trial gave that answer but was
    judged right is a member too when the judge fails that answer on more trials than it
    passes it (pooled over the table, as :func:`recovers` reads a pass): a judge that
    contradicts itself on one singleton does not leave a copy of the harm in the context
    the check asks.

    Args:
        run: the run (the memories alone and the empty context evaluated).
        group: the answer group (positions).
        each: also leave out each member of the group alone, in the same batch.

    Returns:
        True when a context asked recovers.
    """
    game = run.game
    same = game.same or plain_same
    silent = silent_answers(game)
    tally = _verdicts(run)

    def wrong(answer: str) -> bool:
        passed = sum(yes for text, (yes, _) in tally.items() if plain_same(answer, text))
        failed = sum(no for text, (_, no) in tally.items() if plain_same(answer, text))
        return failed > passed

    harmful = [
        a
        for a in game.answers_of(game.full)
        if a is not None and wrong(a) and not any(same(a, quiet) for quiet in silent)
    ]
    members = set(group)
    for i in range(game.k if run.config.stops.pooled_verdicts else 0):
        answers = game.answers_of(1 << i)
        if (
            harmful
            and answers
            and all(a is not None and any(same(a, h) for h in harmful) for a in answers)
        ):
            members.add(i)
    rest = game.full & ~from_positions(sorted(members))
    tried = [rest, *(game.full & ~(1 << i) for i in sorted(members))] if each else [rest]
    yield Evaluate(want((tried, run.single)))
    return recovers(run, tried)


def _verdicts(run: Run) -> dict[str, list[int]]:
    """Per distinct answer of the table: [passing trials, failing trials]."""
    game = run.game
    threshold = run.config.verification.success_threshold
    tally: dict[str, list[int]] = {}
    for coalition, scores in game.scores.items():
        for score, answer in zip(scores, game.answers_of(coalition), strict=False):
            if answer is not None:
                tally.setdefault(answer, [0, 0])[0 if score >= threshold else 1] += 1
    return tally


def unexplained(run: Run) -> Steps[str | None]:
    """Ask each memory alone and no memory; the reason to stop, or None to go on.

    Args:
        run: the run.

    Returns:
        ``no_memory_explains_failure``, ``model_cannot_answer`` or None.
    """
    cfg, game = run.config, run.game
    threshold = cfg.verification.success_threshold
    singles = [from_positions([i]) for i in range(game.k)]
    yield Evaluate(want(([game.full], cfg.trials), ([0], run.single), (singles, run.single)))
    if recovers(run, [game.full, 0, *singles]):
        return None  # a memory answers alone, or the memories are the harm (empty recovers)
    group = answer_group(game, threshold)
    # a right answer two memories support together: without the harm's copies
    if group and (yield from without_group(run, group)):
        return None
    silent = [a for a in game.answers_of(0) if a is not None]
    same = game.same or plain_same
    answers = [a for c in [game.full, *singles] for a in game.answers_of(c)]
    if silent and answers and all(a is not None and same(a, silent[0]) for a in answers):
        return "model_cannot_answer"
    return "no_memory_explains_failure"


def uniform_failure(run: Run) -> Steps[str | None]:
    """After the screening batch: is every answer one failing answer? Then look closer.

    No call unless every trial of every coalition evaluated so far (at least two non-empty
    ones: the full context and another coalition of the screening batch) failed. With one
    and the same answer everywhere, the agent is asked once on no memory (none when the
    table holds it; attribution asks it anyway):

    - the no-memory answer is that answer too (``stops.cannot_answer``): the model's answer
      does not depend on the memories screening removed (e.g. it always says "I don't
      know"): ``model_cannot_answer``, the run stops. The limit: a right answer that only
      removing several memories together would let through is not seen;
    - otherwise the memories cause the failure but no removal screening tried changes it:
      the signature of redundant copies. With ``answer_groups="auto"`` the memories
      alone are asked (every one, or on a large context by group tests, :func:`alone`)
      and the run groups them by answer (``run.grouped``).

    With ``stops.unexplained="auto"`` a screening batch that failed everywhere (one answer
    or several) is confirmed by :func:`confirm_unexplained` before the run goes on.

    Args:
        run: the run (its screening batch evaluated).

    Returns:
        ``model_cannot_answer``, ``no_memory_explains_failure``, or None to go on.
    """
    cfg, game = run.config, run.game
    auto_stop = cfg.stops.unexplained == "auto"
    if not cfg.stops.cannot_answer and cfg.answer_groups != "auto" and not auto_stop:
        return None
    seen = [c for c, scores in game.scores.items() if c != 0 and scores]
    if len(seen) < 2 or game.full not in seen:
        return None
    if recovers(run, seen):
        return None
    answers = [a for c in seen for a in game.answers_of(c)]
    if len(answers) < sum(len(game.scores[c]) for c in seen) or any(a is None for a in answers):
        return None  # the evaluator does not report every answer: no decision, no call
    same = game.same or plain_same
    first = answers[0]
    assert first is not None
    if not all(same(a, first) for a in answers if a is not None):
        return (yield from confirm_unexplained(run, search=True)) if auto_stop else None
    if not game.scores.get(0):
        yield Evaluate(want(([0], run.single)))
    silent = [a for a in game.answers_of(0) if a is not None]
    if silent and all(same(a, first) for a in silent):
        if cfg.stops.cannot_answer:
            return "model_cannot_answer"
        return (yield from confirm_unexplained(run)) if auto_stop else None
    if auto_stop:
        return (yield from confirm_unexplained(run, search=True))
    if cfg.answer_groups == "auto" and silent:
        yield from alone(run, search=True)
        run.grouped = True
    return None


def probe_coalitions(estimator: ShapleyEstimator, plan: list[Coalition], k: int) -> list[Coalition]:
    """The coalitions of the attribution plan asked first on a failing context.

    When the plan holds the empty context and every memory alone (exact enumeration,
    KernelSHAP), those K + 1; for hierarchical attribution, the empty context and the
    unions of every block but one (a harm within one block shows there). Empty otherwise.
    Every probe is in the plan: asking it first costs a round, never a call.

    Args:
        estimator: the estimator whose plan it is.
        plan: its first batch of coalitions.
        k: the number of memories.

    Returns:
        The probe.
    """
    planned = set(plan)
    singles = [1 << i for i in range(k)]
    if 0 in planned and all(s in planned for s in singles):
        return [0, *singles]
    if isinstance(estimator, HierarchicalShapley):
        unions = [u for u in estimator.leave_one_block_out() if u in planned]
        return [0, *unions] if 0 in planned else unions
    return []


def probe_unexplained(run: Run, probe: list[Coalition], rest: int = 0) -> Steps[str | None]:
    """``stops.unexplained="auto"``: the probe first; a failure it cannot explain is confirmed.

    Runs when the full context failed every trial of the exit test. The probe
    (:func:`probe_coalitions`, coalitions of the attribution plan) is asked with the full
    context's trials; when nothing recovers there, :func:`confirm_unexplained` decides
    before the rest of the plan is paid for: on a context no memory explains the run
    costs the probe plus K + 2 calls (about LOO's), not the whole screening batch. No
    call beyond the plan's otherwise: a probe that recovers lets the run go on.

    The confirmation asks the memories the probe did not: it runs early only when that
    costs at most the ``rest`` of the plan (else the run goes on, and the check after the
    screening batch applies as before).

    Args:
        run: the run (its exit test evaluated).
        probe: the coalitions asked first.
        rest: how many coalitions of the plan the probe leaves for later.

    Returns:
        The reason to stop, or None to go on.
    """
    cfg, game = run.config, run.game
    threshold = cfg.verification.success_threshold
    baseline: list[float] = list(game.scores.get(game.full, ()))
    if not probe or not baseline or any(s >= threshold for s in baseline):
        return None
    unasked = {1 << i for i in range(game.k)} - set(probe)
    if len(unasked) > rest:
        return None  # confirming would cost more than the rest of the plan
    yield Evaluate(want(([game.full], cfg.trials), (probe, run.single)))
    if recovers(run, [game.full, *probe]):
        return None
    answers = [a for c in [game.full, *probe] for a in game.answers_of(c)]
    reported = sum(len(game.scores[c]) for c in [game.full, *probe])
    if len(answers) < reported or any(a is None for a in answers):
        return None  # the evaluator does not report every answer: no decision here
    return (yield from confirm_unexplained(run, each=True))


def alone(run: Run, *, search: bool = False) -> Steps[list[Coalition]]:
    """Ask the memories alone (one trial each); the coalitions asked.

    Every memory alone, or with ``search`` on a context of at least
    ``core.grouping.GROUP_SEARCH_FROM`` memories the group tests of
    ``core.grouping.answer_group_search``: sets of near-duplicates asked together, cut
    down to the memories that alone give the failing answer (the answer group's members
    are asked alone either way).

    Args:
        run: the run (its full context evaluated).
        search: group tests on a large context.

    Returns:
        The coalitions asked alone (the empty context aside).
    """
    game = run.game
    if not search or game.k < GROUP_SEARCH_FROM:
        singles = [from_positions([i]) for i in range(game.k)]
        yield Evaluate(want(([0], run.single), (singles, run.single)))
        return singles
    threshold = run.config.verification.success_threshold
    tests = answer_group_search(game, threshold, memory_graph(game.context, run.embed))
    try:
        batch = next(tests)
        while True:
            yield Evaluate(want((batch, run.single)))
            batch = tests.send(None)
    except StopIteration as done:
        return list(done.value or [])


def confirm_unexplained(run: Run, *, each: bool = False, search: bool = False) -> Steps[str | None]:
    """Confirm that no memory explains a failure the whole screening batch showed.

    ``stops.unexplained="auto"``, called when no coalition of the screening batch
    recovered. The agent is asked once on each memory alone and on no memory (K + 1 calls
    at most, one batch; the table's entries are reused): a memory that answers right alone,
    or an empty context that answers right (every memory is the harm), explains the
    failure (the run goes on). Otherwise the memories that alone give an
    answer the full context failed with (the answer group, ``core.grouping.answer_group``:
    copies of the harm) are removed together, once: when that context recovers, the right
    answer is carried by memories that only support it together (a joint pair) and the
    run goes on, the group flagged (``run.grouped``). Only when it fails too (or no memory
    carries the failing answer) does the run stop: every answer the reader gave is the
    no-memory answer (``model_cannot_answer``), or ``no_memory_explains_failure``.

    With ``search`` (the screening batch failed everywhere, not only with the no-memory
    answer: e.g. redundant copies that every block holds some of) a large context is asked
    by group tests (:func:`alone`) instead of memory by memory; when they find no memory
    that alone gives the failing answer and none that answers right, every memory is asked
    alone before the run may stop.

    With ``each`` (the probe ran instead of the whole screening batch), the context
    without each member of the answer group is asked too, in the same batch: a memory
    that alone gives the failing answer may still be needed beside another one, and
    removing the group together would not show it.

    Args:
        run: the run (its screening batch or probe evaluated, every coalition failed).
        each: also leave out each member of the answer group alone.
        search: group tests instead of every memory alone (large contexts).

    Returns:
        The reason to stop, or None to go on.
    """
    game = run.game
    threshold = run.config.verification.success_threshold
    singles = yield from alone(run, search=search)
    if recovers(run, [0, *singles]):
        run.grouped = True  # a memory answers alone, or the empty context recovers
        return None
    group = answer_group(game, threshold)
    if search and not group and len(singles) < game.k:  # no copy found: ask each memory
        singles = yield from alone(run)
        if recovers(run, [0, *singles]):
            run.grouped = True
            return None
        group = answer_group(game, threshold)
    if group:
        run.grouped = True
        if (yield from without_group(run, group, each=each)):
            return None
    silent = [a for a in game.answers_of(0) if a is not None]
    same = game.same or plain_same
    answers = [a for c, scores in game.scores.items() if c != 0 for a in game.answers_of(c)]
    if silent and answers and all(a is not None and same(a, silent[0]) for a in answers):
        return "model_cannot_answer"
    return "no_memory_explains_failure"


def unexplained_stop(run: Run, reason: str) -> Steps[ClearanceReport]:
    """Close the screening stage and report the stop (context unchanged, ``skipped``).

    Args:
        run: the run.
        reason: why it stops.

    Returns:
        The report: every memory kept, nothing cleared, ``status_reason`` = ``reason``.
    """
    game = run.game
    baseline = game.value(game.full)
    yield Emit(
        StageEvent(
            stage="screening",
            phase="end",
            payload={
                "baseline_value": baseline,
                "baseline_recovered": False,
                "early_exit": False,
                "stopped": reason,
                "loo": {},
            },
        )
    )
    start = {"candidates": [[]], "search": "nested"}
    yield Emit(StageEvent(stage="clearance", phase="start", payload=start))
    report = kept_report(run, recovered=False, status="skipped", status_reason=reason)
    yield clearance_end(0, report)
    return report
