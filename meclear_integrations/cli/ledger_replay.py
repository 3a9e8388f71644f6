"""The models of ``meclear ledger replay``: agent and judge from the command line.

The replay's evaluator is the integrations' own: the agent answers through the package's
answer prompt (:func:`~meclear_integrations.judges.answer_prompts.format_answer_prompt`), the
:class:`~meclear_integrations.judges.ReferenceLLMJudge` grades each answer against the
feedback's correction, and :func:`~meclear_integrations.judges.task_evaluator` deduplicates
calls as a retriever does. Models are named as in ``meclear bench`` (an OpenAI-compatible
model name with ``--base-url``, ``module:Class`` of a LangChain chat model, or
``meclear-text-reader``, the offline stand-in).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["replay_models"]


def replay_models(
    args: argparse.Namespace,
) -> tuple[Callable[[str, str, list[Any]], Any], dict[str, Any]]:
    """The replay's ``evaluator_for`` and the model labels recorded with it.

    Args:
        args: The parsed ``meclear ledger replay`` flags.

    Returns:
        ``(evaluator_for(query, reference, memories) -> evaluate, {"agent_model",
        "judge_model"})``.

    Raises:
        ImportError: The ``langchain`` extra is not installed.
        ConfigurationError: A model flag is not usable.
    """
    from .plugins import load_harness

    # The model flags are the benchmark's (the harness's ModelSpec, its offline text reader).
    specs = load_harness("meclear_bench.model_spec")
    ModelSpec, json_kwargs = specs.ModelSpec, specs.json_kwargs
    langchain_extra_missing = specs.langchain_extra_missing

    try:
        from ..langchain.model import as_text_model
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise langchain_extra_missing(exc) from exc
    from ..judges import ReferenceLLMJudge, task_evaluator
    from ..judges.answer_prompts import format_answer_prompt

    agent_spec = ModelSpec(
        name=args.agent_model,
        kwargs=json_kwargs(args.agent_kwargs, "--agent-kwargs"),
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        timeout=args.timeout,
    )
    judge_spec = agent_spec
    if args.judge_model or args.judge_base_url:
        judge_spec = ModelSpec(
            name=args.judge_model or args.agent_model,
            base_url=args.judge_base_url or args.base_url,
            api_key_env=args.api_key_env,
            timeout=args.timeout,
        )
    agent = as_text_model(agent_spec.build(), structured_output=False)
    judge = ReferenceLLMJudge(as_text_model(judge_spec.build()))

    def evaluator_for(query: str, reference: str, memories: list[Any]) -> Any:
        def answer(coalition: Any) -> str:
            return agent.complete(format_answer_prompt(query, coalition))

        return task_evaluator(
            answer,
            judge,
            question=query,
            reference=reference,
            context=memories,
            asynchronous=False,
            deterministic_agent=agent_spec.deterministic,
        )

    return evaluator_for, {"agent_model": agent_spec.label, "judge_model": judge_spec.label}
