"""Judging: the evaluator v^(S) (one agent run plus one judgement) as the engine calls it.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.evaluator`           running the caller's evaluator on coalitions, sync and async
:mod:`.dispatch`            the evaluator's calls: deduplicated (each distinct answer once)
                            and, on the sync path, a batch inline or on threads
==========================  ===========================================================

The answer behind each score (:mod:`meclear_integrations.core.answers`) and the game that
keeps the scores (:mod:`meclear_integrations.core.game`) stand below this room, since the
game and the grouping read them; the retries and failure kinds of a call are
:mod:`meclear_integrations.core.failures`.
"""
