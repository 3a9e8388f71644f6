"""The token-budget trigger and the fit that enforces the budget after clearance.

:class:`TokenBudget` runs clearance when the retrieved context exceeds ``max_tokens``.
After clearance, :func:`fit_to_budget` drops further memories, least contributing first,
while the kept context is still over budget: lowest Shapley value first when attribution
ran, else (early exit, a prior clearance, a failed run) from the end of the retrieval
order. Such a drop is the user's size constraint, not a verified clearance: it is reported
separately (``BudgetFit``; integrations put it under the metadata key as
``token_budget``), never as ``cleared``.

Tokens are counted by ``counter(text)``; the default estimates ``ceil(len(text) / 4)``
(about right for English with OpenAI tokenizers). Pass your model's counter (e.g.
``llm.get_num_tokens``) for exact figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..core.errors import ConfigurationError
from ..core.memory import Memory
from ..core.report import ClearanceReport
from .base import Trigger, TriggerContext, TriggerDecision

__all__ = ["BudgetFit", "TokenBudget", "approximate_tokens", "fit_to_budget"]

TokenCounter = Callable[[str], int]


def approximate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: a rough token count for English text.

    Args:
        text: The text to count.

    Returns:
        The estimated number of tokens.

    Example:
        >>> approximate_tokens("John moved to Italy.")
        5
    """
    return math.ceil(len(text) / 4)


class TokenBudget(Trigger):
    """Clear when the retrieved context holds more than ``max_tokens`` tokens.

    The budget is then enforced: the decision carries it, and attribution is forced so that
    contributions can rank what to drop.

    Args:
        max_tokens: The token budget of the context, at least 1.
        counter: ``counter(text) -> tokens`` (default: :func:`approximate_tokens`).

    Raises:
        ConfigurationError: ``max_tokens`` is less than 1.

    Example:
        >>> from meclear_integrations.core import Memory
        >>> from meclear_integrations.triggers import TokenBudget, TriggerContext
        >>> memories = (Memory(id="m1", content="x" * 400),)
        >>> TokenBudget(50).decide(TriggerContext("?", "q1", memories)).reason
        'over_token_budget'
    """

    def __init__(self, max_tokens: int, *, counter: TokenCounter | None = None) -> None:
        if max_tokens < 1:
            raise ConfigurationError("max_tokens must be at least 1")
        self.max_tokens = max_tokens
        self.counter = counter or approximate_tokens
        self.name = f"token_budget({max_tokens})"

    def __repr__(self) -> str:
        return f"TokenBudget({self.max_tokens})"

    def decide(self, context: TriggerContext) -> TriggerDecision:
        """Decide whether this query's context is cleared.

        Args:
            context: The query: its id, text and retrieved memories.

        Returns:
            The decision: run or skip, the policy and the reason.
        """
        tokens = sum(self.counter(m.content) for m in context.memories)
        over = tokens > self.max_tokens
        return TriggerDecision(
            run=over,
            policy=self.name,
            reason="over_token_budget" if over else "under_token_budget",
            early_exit=False if over else None,
            max_tokens=self.max_tokens if over else None,
            counter=self.counter,
            detail=f"{tokens} tokens, budget {self.max_tokens}",
        )


class BudgetFit(BaseModel):
    """What enforcing a token budget after clearance did."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int
    """The token budget enforced."""
    tokens_before: int
    """Tokens of the context clearance returned."""
    tokens_after: int
    """Tokens of what is returned after the drops."""
    dropped_ids: list[str]
    """Memories dropped for the budget (not verified harmful), in drop order."""
    order: Literal["least_contribution", "retrieval_order", "none"]
    """How the drop order was chosen: by Shapley value, or from the end of the retrieval
    order when no attribution ran."""

    @property
    def reason(self) -> str:
        """Always ``token_budget``."""
        return "token_budget"


def fit_to_budget(
    report: ClearanceReport,
    max_tokens: int,
    *,
    counter: TokenCounter | None = None,
) -> BudgetFit:
    """Drop the kept memories that contribute least until the rest fits ``max_tokens``.

    Args:
        report: The clearance report whose kept context is fitted.
        max_tokens: The token budget.
        counter: ``counter(text) -> tokens`` (default: :func:`approximate_tokens`).

    Returns:
        What was dropped and in which order (lowest Shapley value first when attribution
        ran, else from the end of the retrieval order); never reported as cleared.
    """
    count = counter or approximate_tokens
    kept: Sequence[Memory] = report.kept
    sizes = {m.id: count(m.content) for m in kept}
    total = sum(sizes.values())
    before = total
    if total <= max_tokens:
        return BudgetFit(
            max_tokens=max_tokens,
            tokens_before=before,
            tokens_after=total,
            dropped_ids=[],
            order="none",
        )
    psi = {a.memory_id: a.shapley for a in report.attributions}
    if kept and all(m.id in psi for m in kept):
        order = "least_contribution"
        ranked = sorted(range(len(kept)), key=lambda i: (psi[kept[i].id], -i))
    else:
        order = "retrieval_order"
        ranked = list(reversed(range(len(kept))))
    dropped: list[str] = []
    for i in ranked:
        if total <= max_tokens:
            break
        dropped.append(kept[i].id)
        total -= sizes[kept[i].id]
    return BudgetFit(
        max_tokens=max_tokens,
        tokens_before=before,
        tokens_after=total,
        dropped_ids=dropped,
        order=order,  # type: ignore[arg-type]
    )
