"""The judge of one query from a component's ``judge`` / ``llm`` settings, framework-free.

Both integrations accept the same kinds of judge: a :class:`~.protocol.Judge` (anything
with ``score`` / ``ascore``), a model of their framework, a plain or coroutine function
(:class:`~.callable.CallableJudge`), or None (then the component's ``llm``). A model
becomes a reference judge when the query has a reference and a reference-free judge
otherwise, shown the memories' metadata keys. An integration passes how to recognise and
wrap its framework's models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.errors import ConfigurationError, ConfigurationTypeError
from .base import Judge
from .callable import CallableJudge

__all__ = ["resolve_judge"]


def resolve_judge(
    judge: Any,
    llm: Any,
    reference: str | None,
    *,
    is_model: Callable[[Any], bool],
    reference_judge: Callable[[Any], Judge],
    free_judge: Callable[[Any, Sequence[str]], Judge],
    metadata_keys: Sequence[str] = (),
    missing: str = "no judge: pass judge=... or llm=...",
) -> Judge:
    """The judge of one query.

    Args:
        judge: A judge, a model of the framework, a function, or None.
        llm: The component's model, used when ``judge`` is None.
        reference: The query's reference answer, if any.
        is_model: Whether an object is a model of the framework.
        reference_judge: Wraps a model as a reference judge.
        free_judge: Wraps a model as a reference-free judge shown ``metadata_keys``.
        metadata_keys: Metadata keys a reference-free model judge is shown.
        missing: The message when neither ``judge`` nor ``llm`` is given.

    Returns:
        The judge.

    Raises:
        ConfigurationError: Neither ``judge`` nor ``llm`` is given.
        ConfigurationTypeError: ``judge`` is none of the accepted kinds.
    """
    if judge is None:
        judge = llm
    if judge is None:
        raise ConfigurationError(missing)
    if callable(getattr(judge, "score", None)) and callable(getattr(judge, "ascore", None)):
        neutral: Judge = judge  # anything with score / ascore
        return neutral
    if is_model(judge):
        if reference is not None:
            return reference_judge(judge)
        return free_judge(judge, metadata_keys)
    if callable(judge):
        fn: Callable[..., Any] = judge
        return CallableJudge(fn)
    raise ConfigurationTypeError(f"cannot use {type(judge).__name__} as a judge")
