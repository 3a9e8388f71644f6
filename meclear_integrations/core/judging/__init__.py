"""Judging: the evaluator v^(S) (one agent run plus one judgement) as the engine calls it.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.evaluator`           running the caller's evaluator on coalitions, sync and async
:mod:`.batch`               one batch of blocking calls on the sync path (inline or threads)
:mod:`.answers`             the answer behind each score, reported by the evaluator
:mod:`.dedup`               answer-level deduplication of agent and judge calls
==========================  ===========================================================

The game that keeps the scores is :mod:`meclear_integrations.core.game`; the retries and
failure kinds of a call are :mod:`meclear_integrations.core.failures`.
"""
