"""Verification (Eq. 16-20): which candidates a run verifies, and what the trials show.

==========================  ===========================================================
module                      concept
==========================  ===========================================================
:mod:`.rule`                the run's :class:`~.rule.VerificationRule` (paper or sequential),
                            built once per run by :func:`~.rule.rule_of`; the candidate
                            families (Eq. 16-17) and the paper rule's Eq. 20 selection
:mod:`.sequential`          the sequential rule's evidence (Clopper-Pearson, Eq. 18-20)
==========================  ===========================================================

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 16-20.
"""
