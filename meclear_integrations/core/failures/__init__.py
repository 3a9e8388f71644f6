"""Failures: what went wrong in an evaluator call, what is done about it, and what the user sees.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.faults`              classifying a provider exception: transient or permanent,
                            ``retry-after``, the exception chain (redacted)
:mod:`.kind`                the kind of a failure, and whether it may fail open
:mod:`.retry`               retrying one evaluator call within the run's budget
:mod:`.alerts`              the warnings issued when clearance quietly did less
==========================  ===========================================================

The exceptions themselves live in :mod:`meclear_integrations.core.errors` (every layer raises
them); how a stage closes on a failure is :mod:`meclear_integrations.core.stages.outcomes`.
"""
