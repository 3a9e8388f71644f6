"""LangChain models as the neutral text model of the judges (and of ConMem).

:func:`as_text_model` wraps any runnable that takes a prompt string (a chat model, an LLM,
``llm.with_retry(...)``...). When the runnable offers ``with_structured_output`` and it
works for the schema, the wrapper also offers ``complete_json`` / ``acomplete_json``;
``include_raw=True`` is used so a reply that fails to parse is handed back as raw text (the
judge then reads it only when it is one bounded JSON object) instead of failing the call.

Over an OpenAI-compatible chat model (``langchain_openai``'s ``ChatOpenAI`` and its kin,
found through bindings) the wrapper is a :class:`LangChainOpenAITextModel`: it names its
endpoint (base URL and model) and also offers JSON mode (``complete_json_object``:
``response_format`` ``json_object`` carrying the schema, which llama.cpp servers enforce
with a grammar), so the judges negotiate json_schema -> json_object -> text once per
endpoint (``judges.model``). A reply the server cut at its token limit comes back as a
:class:`~meclear_integrations.judges.model.ModelReply` saying so.

Calls made without an explicit ``config`` inherit the caller's run (LangChain's context
variable), so judge calls nest under the evaluation run that makes them.

Async calls use the runnable's own coroutines when it has native ones
(:func:`has_native_async`). A runnable without them (a chat model implementing only
``_generate``, a sync-only ``RunnableLambda``...) would be run by LangChain in the event
loop's default executor, whose non-daemon threads ``asyncio.run`` and the interpreter join
at exit, so a hung provider call would hold both forever: such a runnable is invoked
synchronously on a daemon worker thread instead
(:func:`~meclear_integrations.core.concurrency.workers.in_worker`; :func:`ainvoke_off_loop`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.base import RunnableBindingBase, RunnableParallel, RunnableSequence
from langchain_core.runnables.fallbacks import RunnableWithFallbacks

from ..core.concurrency.workers import in_worker
from ..judges.model import ModelReply

__all__ = [
    "LangChainOpenAITextModel",
    "LangChainStructuredTextModel",
    "LangChainTextModel",
    "ainvoke_off_loop",
    "as_text_model",
    "has_native_async",
    "message_text",
]


def _overrides(obj: object, base: type, name: str) -> bool:
    """Whether a class below ``base`` in ``obj``'s MRO defines ``name``."""
    owner = next((c for c in type(obj).__mro__ if name in c.__dict__), None)
    return owner is not None and owner is not base and issubclass(owner, base)


def has_native_async(runnable: Runnable, _depth: int = 0) -> bool:
    """Whether ``runnable.ainvoke`` awaits coroutines of its own all the way down.

    Args:
        runnable: The runnable to inspect.

    Returns:
        False when some part of it would run a sync method in an executor (module
        docstring).
    """
    if _depth > 50:
        return False
    r, d = runnable, _depth + 1
    # Loaded here, not on import: langchain_core.language_models costs more than the retriever.
    from langchain_core.language_models import BaseChatModel, BaseLLM
    from langchain_core.language_models.llms import LLM

    if isinstance(r, BaseChatModel):
        return _overrides(r, BaseChatModel, "_agenerate")
    if isinstance(r, LLM):
        return _overrides(r, LLM, "_acall")
    if isinstance(r, BaseLLM):
        return _overrides(r, BaseLLM, "_agenerate")
    if isinstance(r, RunnableLambda):
        return getattr(r, "afunc", None) is not None
    if isinstance(r, RunnableBindingBase):
        return has_native_async(r.bound, d)
    if isinstance(r, RunnableSequence):
        return all(has_native_async(step, d) for step in r.steps)
    if isinstance(r, RunnableParallel):
        return all(has_native_async(step, d) for step in r.steps__.values())
    if isinstance(r, RunnableWithFallbacks):
        return all(has_native_async(step, d) for step in (r.runnable, *r.fallbacks))
    return _overrides(r, Runnable, "ainvoke")


async def ainvoke_off_loop(
    runnable: Runnable, value: Any, *, config: RunnableConfig | None = None
) -> Any:
    """Await ``runnable`` without blocking the loop or a joined executor thread.

    Args:
        runnable: The runnable to call.
        value: Its input.
        config: Its runnable config.

    Returns:
        ``runnable.ainvoke(value)`` when it is natively async, else
        ``runnable.invoke(value)`` run on a daemon worker thread.
    """
    if has_native_async(runnable):
        return await runnable.ainvoke(value, config=config)
    return await in_worker(runnable.invoke, value, config=config)


def message_text(output: object) -> str:
    """The text of a model output.

    Args:
        output: A string, a message (its text), or a mapping with an ``answer`` entry.

    Returns:
        The text.

    Raises:
        TypeError: ``output`` is none of these (a bug in the agent chain, reported as a
            permanent failure).

    Example:
        >>> from meclear_integrations.langchain.model import message_text
        >>> message_text({"answer": "Paris"})
        'Paris'
    """
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        text = str(output.text)
        metadata = getattr(output, "response_metadata", None) or {}
        if metadata.get("finish_reason") == "length":
            return ModelReply(text, finish_reason="length")
        return text
    if isinstance(output, Mapping) and "answer" in output:
        return message_text(output["answer"])
    raise TypeError(
        f"expected text, a message or a dict with 'answer', got {type(output).__name__}"
    )


class LangChainTextModel:
    """prompt -> text over a LangChain runnable.

    Args:
        llm: Any runnable that takes a prompt string.
        config: The runnable config of every call (None inherits the caller's run).

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> from meclear_integrations.langchain import LangChainTextModel
        >>> LangChainTextModel(FakeListChatModel(responses=["Paris"])).complete("Capital?")
        'Paris'
    """

    def __init__(self, llm: Runnable, *, config: RunnableConfig | None = None) -> None:
        self.llm = llm
        self.config = config

    def complete(self, prompt: str) -> str:
        """Complete ``prompt``.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        return message_text(self.llm.invoke(prompt, config=self.config))

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete` (a runnable without native coroutines: on a worker thread)."""
        return message_text(await ainvoke_off_loop(self.llm, prompt, config=self.config))


def _titled(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    out.setdefault("title", "response")
    out.setdefault("description", "The structured reply.")
    return out


class LangChainStructuredTextModel(LangChainTextModel):
    """A :class:`LangChainTextModel` with JSON-schema replies (``with_structured_output``).

    The structured runnable of each schema is built once and cached;
    ``include_raw=True`` hands a reply that fails to parse back as raw text.

    Args:
        llm: A runnable that offers ``with_structured_output``.
        config: The runnable config of every call (None inherits the caller's run).
        method: The ``with_structured_output`` method (e.g. ``"json_schema"``), when set.
    """

    def __init__(
        self, llm: Runnable, *, config: RunnableConfig | None = None, method: str | None = None
    ) -> None:
        super().__init__(llm, config=config)
        self.method = method
        self._cache: dict[str, Runnable] = {}
        self._lock = threading.Lock()

    def _structured(self, schema: Mapping[str, Any]) -> Runnable:
        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            if key not in self._cache:
                kwargs: dict[str, Any] = {"include_raw": True}
                if self.method is not None:
                    kwargs["method"] = self.method
                self._cache[key] = self.llm.with_structured_output(  # type: ignore[attr-defined]
                    _titled(schema), **kwargs
                )
            return self._cache[key]

    @staticmethod
    def _unpack(result: Any) -> Mapping[str, Any] | str:
        parsed = result.get("parsed") if isinstance(result, Mapping) else result
        if parsed is None:
            return message_text(result["raw"])
        if hasattr(parsed, "model_dump"):
            return parsed.model_dump()
        return parsed

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        """Complete ``prompt`` with a reply constrained to the JSON ``schema``.

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply (a tool / function-calling schema).

        Returns:
            The decoded object, or the raw text when the model answered in text.
        """
        return self._unpack(self._structured(schema).invoke(prompt, config=self.config))

    async def acomplete_json(
        self, prompt: str, schema: Mapping[str, Any]
    ) -> Mapping[str, Any] | str:
        """Async :meth:`complete_json` (same arguments and result; as ``acomplete``)."""
        structured = self._structured(schema)
        return self._unpack(await ainvoke_off_loop(structured, prompt, config=self.config))


def openai_chat_model(llm: Runnable, _depth: int = 0) -> Any:
    """The ``langchain_openai`` chat model inside ``llm`` (through bindings), or None.

    Args:
        llm: The runnable.

    Returns:
        The OpenAI-compatible chat model, or None.
    """
    if _depth > 20:
        return None
    if any(c.__module__.startswith("langchain_openai") for c in type(llm).__mro__) and hasattr(
        llm, "openai_api_base"
    ):
        return llm
    bound = getattr(llm, "bound", None)
    return openai_chat_model(bound, _depth + 1) if isinstance(bound, Runnable) else None


class LangChainOpenAITextModel(LangChainStructuredTextModel):
    """A structured text model over an OpenAI-compatible chat model, with JSON mode.

    Args:
        llm: A runnable whose model is a ``langchain_openai`` chat model.
        config: The runnable config of every call (None inherits the caller's run).
        method: The ``with_structured_output`` method, when set.
    """

    def __init__(
        self, llm: Runnable, *, config: RunnableConfig | None = None, method: str | None = None
    ) -> None:
        super().__init__(llm, config=config, method=method)
        chat = openai_chat_model(llm)
        base = getattr(chat, "openai_api_base", None) or "api.openai.com"
        model = getattr(chat, "model_name", None) or getattr(chat, "model", None)
        self.endpoint = f"{str(base).rstrip('/')}|{model}"
        """The endpoint key the judges remember formats under (base URL and model)."""

    def _json_mode(self, schema: Mapping[str, Any]) -> Runnable:
        response_format = {"type": "json_object", "schema": dict(schema)}
        return self.llm.bind(response_format=response_format)

    def complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Complete ``prompt`` in JSON mode (the schema is a grammar on llama.cpp servers).

        Args:
            prompt: The prompt text.
            schema: The JSON schema of the reply.

        Returns:
            The reply text (one JSON object when the server honours JSON mode).
        """
        return message_text(self._json_mode(schema).invoke(prompt, config=self.config))

    async def acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Async :meth:`complete_json_object` (same arguments and result)."""
        runnable = self._json_mode(schema)
        return message_text(await ainvoke_off_loop(runnable, prompt, config=self.config))


def _supports_structured(llm: Runnable) -> bool:
    method = getattr(llm, "with_structured_output", None)
    if not callable(method):
        return False
    try:
        method({"title": "probe", "description": "probe", "type": "object", "properties": {}})
    except (NotImplementedError, ValueError, TypeError):
        return False
    return True


def as_text_model(
    llm: Runnable,
    *,
    structured_output: bool | None = None,
    method: str | None = None,
    config: RunnableConfig | None = None,
) -> LangChainTextModel:
    """Wrap ``llm`` as the neutral :class:`~meclear_integrations.judges.TextModel`.

    Args:
        llm: Any runnable that takes a prompt string (a chat model, an LLM,
            ``llm.with_retry(...)``...).
        structured_output: None enables JSON replies (``complete_json``) when the model
            supports ``with_structured_output``; True forces them, False disables them.
        method: The ``with_structured_output`` method, when set.
        config: The runnable config of every call (None inherits the caller's run).

    Returns:
        A :class:`LangChainOpenAITextModel` for an OpenAI-compatible chat model, a
        :class:`LangChainStructuredTextModel` for other models with JSON replies, else a
        :class:`LangChainTextModel`.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel

        from meclear_integrations.langchain import as_text_model

        model = as_text_model(FakeListChatModel(responses=["Paris"]))
        print(model.complete("Capital of France?"))  # Paris
        ```
    """
    use = _supports_structured(llm) if structured_output is None else structured_output
    if use and openai_chat_model(llm) is not None:
        return LangChainOpenAITextModel(llm, config=config, method=method)
    if use:
        return LangChainStructuredTextModel(llm, config=config, method=method)
    return LangChainTextModel(llm, config=config)
