"""The components' field descriptions come from their attribute docstrings (pipeline.field_docs).

They are read from the class's block of source instead of pydantic's frame walk
(``use_attribute_docstrings``), with the same result.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from meclear_integrations.langchain import ClearingRetriever, MeClearCompressor
from meclear_integrations.langchain.clearing_step import ClearanceSettings
from meclear_integrations.llama_index import MeClearPostprocessor
from meclear_integrations.pipeline.component import ClearingComponent
from meclear_integrations.pipeline.field_docs import attribute_docstrings
from meclear_integrations.pipeline.settings import Documents, Limits, Loop

DOCUMENTED = [
    Limits,
    Loop,
    Documents,
    ClearingComponent,
    ClearanceSettings,
    ClearingRetriever,
    MeClearCompressor,
    MeClearPostprocessor,
]


@pytest.mark.parametrize("cls", DOCUMENTED, ids=lambda c: c.__name__)
def test_the_docstrings_are_pydantics(cls: type[BaseModel]) -> None:
    assert attribute_docstrings(cls) == extract_docstrings_from_cls(cls, use_inspect=True)


@pytest.mark.parametrize("cls", DOCUMENTED, ids=lambda c: c.__name__)
def test_each_docstring_is_its_fields_description(cls: type[BaseModel]) -> None:
    docs = attribute_docstrings(cls)
    for name, doc in docs.items():
        if name in cls.model_fields:
            assert cls.model_fields[name].description == doc, name


def test_a_component_defined_in_a_function_is_described_too() -> None:
    class Local(ClearingComponent):
        size: int = 1
        """How many."""
        name: str = "x"

    assert Local.model_fields["size"].description == "How many."
    assert Local.model_fields["name"].description is None
    inherited = ClearingComponent.model_fields["mode"].description
    assert inherited and Local.model_fields["mode"].description == inherited


def test_the_schema_is_built_on_first_use_with_the_descriptions() -> None:
    schema = Documents.model_json_schema()["properties"]["metadata_key"]
    assert schema["description"] == Documents.model_fields["metadata_key"].description
