"""Griffe extension for the API reference: ``Example:`` docstring sections render as examples.

The package's docstrings title their doctests ``Example:`` (Google style allows both
spellings); Griffe's Google parser reads only ``Examples:`` as an examples section and would
render the doctests as prose. Loaded by ``mkdocs.yml`` (mkdocstrings ``extensions``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", flags=re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename a docstring's ``Example:`` section titles to ``Examples:``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of each object as it is loaded.

        Args:
            obj: The object Griffe has just created.
            **kwargs: Other hook arguments (unused).
        """
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
