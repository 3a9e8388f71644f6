"""LangChain callback handlers that collect what a run dispatched."""

from __future__ import annotations

from langchain_core.callbacks import BaseCallbackHandler


class Payloads(BaseCallbackHandler):
    """The data of every custom event, in order."""

    def __init__(self) -> None:
        self.payloads: list[object] = []

    def on_custom_event(self, name, data, **kwargs):  # type: ignore[no-untyped-def]
        self.payloads.append(data)
