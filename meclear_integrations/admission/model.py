"""The neutral text-model interface every ConMem stage and baseline talks to.

This is the project's single text-model protocol, defined in
:mod:`meclear_integrations.judges.model` and re-exported here: a model answers a prompt with
text, synchronously (``complete``) and asynchronously (``acomplete``); a model that can
constrain its output to a JSON schema also offers ``complete_json`` / ``acomplete_json``,
which ConMem then uses for every structured stage (the output is still validated strictly).
Framework adapters (LangChain, LlamaIndex) are thin wrappers implementing it.
"""

from __future__ import annotations

from ..judges.model import (
    FunctionTextModel,
    StructuredTextModel,
    TextModel,
    as_text_model,
    supports_structured_output,
)

__all__ = [
    "FunctionTextModel",
    "StructuredTextModel",
    "TextModel",
    "as_text_model",
    "supports_structured_output",
]
