"""Scripted text models for judge tests (no network)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from meclear_integrations.judges.protocol import read_nonce


class ScriptedTextModel:
    """Replies with the scripted texts in turn; records every prompt. ``{nonce}`` in a
    scripted text becomes the prompt's verdict nonce (the judge protocol's)."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        reply = self.replies[(len(self.prompts) - 1) % len(self.replies)]
        return reply.replace("{nonce}", read_nonce(prompt) or "")

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(0)
        return self.complete(prompt)


class ScriptedStructuredModel(ScriptedTextModel):
    """Also answers ``complete_json`` with scripted objects (or raw text)."""

    def __init__(self, *objects: Mapping[str, Any] | str) -> None:
        super().__init__("The text path was used.\nVERDICT {nonce}: INCORRECT")
        self.objects = list(objects)
        self.schemas: list[Mapping[str, Any]] = []

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | str:
        self.prompts.append(prompt)
        self.schemas.append(schema)
        return self.objects[(len(self.schemas) - 1) % len(self.objects)]

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]):
        await asyncio.sleep(0)
        return self.complete_json(prompt, schema)
