"""A ``ChatOpenAI`` for the commands that can use a real chat model (lazy, clear errors)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["chat_openai"]


def chat_openai(
    model: str,
    *,
    base_url: str | None,
    temperature: float,
    seed: int | None,
    flag: str,
    extra: Mapping[str, Any] | None = None,
) -> Any:
    """``langchain_openai.ChatOpenAI`` for ``model``; the key comes from ``OPENAI_API_KEY``.

    ``base_url`` points it at any OpenAI-compatible server (then no key is needed). Exits
    with a message naming the missing extra or key; ``flag`` is the option that asked.
    ``extra`` holds further ``ChatOpenAI`` keyword arguments (``max_tokens``...), which
    win over the ones above.
    """
    try:
        from langchain_openai import ChatOpenAI
        from pydantic import SecretStr
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SystemExit(
            f"{flag} needs the 'langchain' extra: pip install "
            f"'meclear-integrations[langchain]' ({exc})"
        ) from exc
    key = os.environ.get("OPENAI_API_KEY")
    if not key and not base_url:
        raise SystemExit(f"{flag} needs OPENAI_API_KEY (or a base URL)")
    options: dict[str, Any] = {
        "model": model,
        "temperature": temperature,
        "seed": seed,
        "base_url": base_url,
        "api_key": SecretStr(key or "not-needed"),
    }
    return ChatOpenAI(**{**options, **(extra or {})})
