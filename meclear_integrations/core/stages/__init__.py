"""The stages of Algorithm 1, one module each, joined by the engine with ``yield from``.

==========================  ================================================  ============
stage                       module                                            Algorithm 1
==========================  ================================================  ============
screening                   :mod:`.screening` (early exit, :mod:`.prior`,     steps 2-4
                            :mod:`.unexplained`)
attribution                 :mod:`.attribution`                               step 5
interactions                :mod:`.interactions` (diagnostic only)            Eq. 15
clearance / verification    :mod:`.clearing` (:mod:`.sources`, then           steps 6-17
                            :mod:`.carriers`)
==========================  ================================================  ============

Every stage verifies with the run's rule (``Run.rule``, ``core.verification.rule``).
A stage is a generator of steps (:mod:`.steps`); its evaluations run inside
:func:`.outcomes.closing`, which closes the stage with an ``error`` event when they fail;
the reports a run ends with are built in :mod:`.outcomes` too.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Algorithm 1 (Appendix C).
"""

from .attribution import Attribution, attribution
from .clearing import clearance, verifier
from .interactions import interactions
from .outcomes import closing
from .screening import Screened, early_exit, screening
from .steps import Algorithm, Emit, Evaluate, Run, Step, Steps

__all__ = [
    "Algorithm",
    "Attribution",
    "Emit",
    "Evaluate",
    "Run",
    "Screened",
    "Step",
    "Steps",
    "attribution",
    "clearance",
    "closing",
    "early_exit",
    "interactions",
    "screening",
    "verifier",
]
