"""Which chat model plays a role (agent, judge, rater) in a real-model benchmark run.

A model is named in one of three ways:

- an OpenAI-compatible model name (``gpt-4o-mini``, ``qwen2.5:7b``...), served by OpenAI or
  by any endpoint given as ``base_url`` (vLLM, SGLang, Ollama, llama.cpp); the key is read
  from the environment variable ``api_key_env`` (not needed with a local ``base_url``);
- ``module:Class`` of any LangChain chat model, built with ``kwargs``
  (``langchain_anthropic:ChatAnthropic`` with ``{"model": "claude-..."}``);
- :data:`TEXT_READER`: the offline text-reading stand-in
  (:mod:`~meclear_bench.text_reader`), served on 127.0.0.1 by this process
  and reached through the same OpenAI client as a real endpoint. Not a real model.

Keys never enter a label, a cache key or an output file: keyword arguments whose name
mentions a key, token, secret or password are dropped from both.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core.errors import ConfigurationError

__all__ = [
    "TEXT_READER",
    "ModelSpec",
    "is_import_path",
    "json_kwargs",
    "langchain_extra_missing",
    "with_token_cap",
]

TEXT_READER = "meclear-text-reader"
"""Model name of the offline text-reading stand-in."""
_TEXT_READER_VERSION = 1
"""Bumped when the stand-in's replies change (part of its cache identity)."""
_IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Z]\w*$")
_SECRET = re.compile(r"(^|_)(api_?key|key|secret|password|credentials?|token)$", re.IGNORECASE)
"""Keyword arguments kept out of a spec's identity (``max_tokens`` stays: replies depend on it)."""

Provider = Literal["openai", "langchain", "text-reader"]


def is_import_path(name: str) -> bool:
    """Whether ``name`` reads as ``module.path:ClassName``.

    A class name starts upper case, so Ollama-style names such as ``qwen2.5:7b`` or
    ``mistral:latest`` stay model names.

    Args:
        name: The ``--agent-model`` style name.

    Returns:
        True for an import path.
    """
    return bool(_IMPORT_PATH.match(name))


def langchain_extra_missing(exc: ImportError) -> ImportError:
    """The error of a real-model run without the ``langchain`` extra.

    Args:
        exc: The import error.

    Returns:
        An ImportError that names the extra to install.
    """
    return ImportError(
        "a real-model benchmark needs the 'langchain' extra: "
        f"pip install 'meclear-integrations[langchain]' ({exc})"
    )


def json_kwargs(text: str | None, flag: str) -> dict[str, Any]:
    """The keyword arguments of a ``--agent-kwargs`` style flag (a JSON object).

    Args:
        text: The flag's value (None or empty: no arguments).
        flag: The flag's name, for the error.

    Returns:
        The keyword arguments.

    Raises:
        ConfigurationError: The value is not a JSON object.
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{flag}: not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ConfigurationError(f"{flag}: expected a JSON object")
    return value


def with_token_cap(kwargs: dict[str, Any], base_url: str | None) -> dict[str, Any]:
    """``max_tokens`` also in the request body for an OpenAI-compatible server.

    langchain-openai sends ``max_tokens`` as ``max_completion_tokens``, which some servers
    ignore (llama-cpp-python's 0.3.36 server answers 500 tokens under a cap of 5); the body
    then carries both. OpenAI's own API (no base URL) gets only ``max_completion_tokens``.

    Args:
        kwargs: The chat model's keyword arguments.
        base_url: The server's base URL (None: OpenAI's API).

    Returns:
        ``kwargs``, with ``extra_body={"max_tokens": cap}`` for a server given a cap.
    """
    cap = kwargs.get("max_tokens", kwargs.get("max_completion_tokens"))
    if base_url is None or cap is None or "extra_body" in kwargs:
        return kwargs
    return {**kwargs, "extra_body": {"max_tokens": cap}}


def _public(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sorted(kwargs.items()) if not _SECRET.search(k)}


class ModelSpec(BaseModel):
    """One model of the run and how to build it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    """Model name, ``module:Class``, or :data:`TEXT_READER`."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of the LangChain class (or extra ``ChatOpenAI`` arguments)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (OpenAI's when None)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key of an OpenAI-compatible endpoint."""
    temperature: float | None = Field(default=0.0, ge=0.0)
    """Sampling temperature (OpenAI-compatible models; LangChain classes take theirs from
    ``kwargs``). 0 makes the model deterministic: one reply per prompt is reused."""
    seed: int | None = None
    """Sampling seed sent to OpenAI-compatible endpoints that honour it."""
    timeout: float | None = Field(default=120.0, gt=0.0)
    """Seconds before one request times out (OpenAI-compatible models)."""

    @property
    def provider(self) -> Provider:
        """How the model is reached: ``text-reader``, ``langchain`` or ``openai``.

        ``langchain`` when the name is an import path (``module.path:ClassName``).
        """
        if self.name == TEXT_READER:
            return "text-reader"
        return "langchain" if is_import_path(self.name) else "openai"

    @property
    def effective_temperature(self) -> float:
        """The temperature the model samples at (0 when none is set for a LangChain class)."""
        if self.provider == "langchain":
            value = self.kwargs.get("temperature")
            return float(value) if isinstance(value, int | float) else 0.0
        return float(self.temperature or 0.0)

    @property
    def deterministic(self) -> bool:
        """Temperature 0: every trial of a prompt gets the same (cached) reply."""
        return self.effective_temperature == 0.0

    @property
    def label(self) -> str:
        """The model's name in reports and figures."""
        if self.provider == "text-reader":
            return f"{TEXT_READER} (offline text-reading stand-in, not a real model)"
        if self.provider == "langchain":
            args = ", ".join(f"{k}={v}" for k, v in _public(self.kwargs).items())
            return f"{self.name}({args})"
        temp = self.effective_temperature
        return self.name if temp == 0 else f"{self.name} (temperature {temp:g})"

    def identity(self) -> dict[str, Any]:
        """What the model's replies depend on.

        The cache key's model part (no key, no endpoint: the same model behind another URL shares
        the cache).
        """
        identity: dict[str, Any] = {"provider": self.provider, "name": self.name}
        identity["kwargs"] = _public(self.kwargs)
        if self.provider != "langchain":
            identity["temperature"] = self.effective_temperature
            identity["seed"] = self.seed
        if self.provider == "text-reader":
            identity["version"] = _TEXT_READER_VERSION
        return identity

    def build(self) -> Any:
        """The LangChain chat model (imports happen here; clear errors for what is missing)."""
        if self.provider == "langchain":
            return self._build_class()
        base_url = self.base_url
        if self.provider == "text-reader" and base_url is None:
            from .reader_server import shared_reader_url

            base_url = shared_reader_url()
        return self._build_openai(base_url)

    def _build_openai(self, base_url: str | None) -> Any:
        try:
            from langchain_openai import ChatOpenAI
            from pydantic import SecretStr
        except ImportError as exc:
            raise langchain_extra_missing(exc) from exc
        key = os.environ.get(self.api_key_env)
        if not key and base_url is None:
            raise ConfigurationError(
                f"model {self.name!r}: set {self.api_key_env} (or pass a base URL of an "
                "OpenAI-compatible server)"
            )
        options: dict[str, Any] = {
            "model": self.name,
            "temperature": self.effective_temperature,
            "base_url": base_url,
            "api_key": SecretStr(key or "not-needed"),
            "timeout": self.timeout,
            "max_retries": 0,  # the benchmark's call gate retries (and counts the retries)
        }
        if self.seed is not None:
            options["seed"] = self.seed
        return ChatOpenAI(**{**options, **with_token_cap(self.kwargs, base_url)})

    def _build_class(self) -> Any:
        module_name, _, class_name = self.name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            package = module_name.split(".")[0].replace("_", "-")
            raise ImportError(
                f"cannot import {module_name!r} for model {self.name!r}: pip install "
                f"{package} ({exc})"
            ) from exc
        cls = getattr(module, class_name, None)
        if cls is None:
            raise ConfigurationError(f"{module_name!r} has no class {class_name!r}")
        from langchain_core.runnables import Runnable

        if not (isinstance(cls, type) and issubclass(cls, Runnable)):
            raise ConfigurationError(f"{self.name!r} is not a LangChain chat model class")
        try:
            return cls(**self.kwargs)
        except Exception as exc:
            shown = _public(self.kwargs)
            raise ConfigurationError(f"cannot build {self.name} with {shown}: {exc}") from exc
