"""Strict settings: an unknown keyword raises, naming the closest valid setting.

Pydantic models that a user configures by keyword (``ClearanceConfig``, the LangChain and
LlamaIndex components) call :func:`reject_unknown` from a ``mode="before"`` validator, so
``trials=1`` on a retriever, ``on_eror="raise"`` or ``config=ClearanceConfig(...)`` fail at
construction instead of being ignored. The error says where the setting belongs: a valid
field with a similar name, an engine setting that goes into ``clearance=ClearanceConfig(...)``,
or the new name of a renamed setting.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, model_validator

from .errors import ConfigurationError

__all__ = [
    "RENAMED",
    "StrictSettings",
    "UnknownSettingError",
    "accepted_names",
    "reject_unknown",
    "strict_init",
]

F = TypeVar("F", bound=Callable[..., None])

RENAMED: dict[str, str] = {
    "on_error": (
        "on_error was renamed on_failure (one switch for the engine and the integrations): "
        "use on_failure='open' (was 'return_all') or on_failure='closed' (was 'raise')"
    ),
    "config": "engine settings go into clearance=ClearanceConfig(...)",
    "clearance_config": "engine settings go into clearance=ClearanceConfig(...)",
    "engine_config": "engine settings go into clearance=ClearanceConfig(...)",
}
"""Hints for names a user is likely to try (old spellings, other libraries' names)."""


class UnknownSettingError(ConfigurationError):
    """A keyword argument that the component does not have.

    A keyword argument that the component does not have (a ``ValueError``: pydantic
    reports it as a ``ValidationError`` with the path of the setting).
    """


def _suggestion(
    name: str,
    valid: list[str],
    engine: list[str] | Mapping[str, str],
    renamed: Mapping[str, str],
) -> str:
    if name in renamed:
        return renamed[name]
    if name in engine:
        where = engine[name] if isinstance(engine, Mapping) else f"{name}=..."
        return f"it is an engine setting: pass clearance=ClearanceConfig({where})"
    close = difflib.get_close_matches(name, [*valid, *renamed], n=1, cutoff=0.6)
    if close and close[0] in renamed and close[0] not in valid:
        return renamed[close[0]]
    if close:
        return f"did you mean {close[0]!r}?"
    close = difflib.get_close_matches(name, list(engine), n=1, cutoff=0.6)
    if close:
        where = engine[close[0]] if isinstance(engine, Mapping) else f"{close[0]}=..."
        return f"did you mean the engine setting clearance=ClearanceConfig({where})?"
    return "valid settings: " + ", ".join(sorted(valid))


def reject_unknown(
    owner: str,
    given: Any,
    valid: Iterable[str],
    *,
    engine: Iterable[str] | Mapping[str, str] = (),
    renamed: Mapping[str, str] = RENAMED,
) -> None:
    """Raise :class:`UnknownSettingError` for an unknown setting.

    Raise :class:`UnknownSettingError` for the first key of ``given`` (a mapping of
    keyword arguments; anything else is left to the model's own validation) that is not
    in ``valid``.

    Args:
        owner: the component's name, for the message.
        given: the keyword arguments.
        valid: the accepted names.
        engine: engine settings the component does not take (the hint names
            ``ClearanceConfig``); a mapping gives each one's spelling inside it.
        renamed: hints for old or likely names.

    Raises:
        UnknownSettingError: a key is not a valid setting.
    """
    if not isinstance(given, Mapping):
        return
    allowed = list(valid)
    unknown = [k for k in given if isinstance(k, str) and k not in allowed]
    if not unknown:
        return
    name = unknown[0]
    hint = _suggestion(
        name, allowed, engine if isinstance(engine, Mapping) else list(engine), renamed
    )
    raise UnknownSettingError(f"{owner} has no setting {name!r}: {hint}")


class StrictSettings(BaseModel):
    """A settings group whose unknown keys raise :class:`UnknownSettingError` with a hint.

    Subclasses set ``renamed_settings`` for hints on old spellings of their keys.
    """

    renamed_settings: ClassVar[Mapping[str, str]] = RENAMED

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: object) -> object:
        reject_unknown(cls.__name__, data, cls.model_fields, renamed=cls.renamed_settings)
        return data


def accepted_names(model: Any) -> list[str]:
    """Keyword arguments a pydantic model class accepts: its fields and their aliases.

    Args:
        model: a pydantic model class.

    Returns:
        The names.
    """
    fields = model.model_fields
    return [*fields, *(f.alias for f in fields.values() if f.alias)]


def strict_init(init: F) -> F:
    """Make a plain class's ``__init__`` reject unknown keywords.

    Decorate a plain class's ``__init__`` so an unknown keyword raises
    :class:`UnknownSettingError` naming the closest parameter (instead of Python's bare
    ``TypeError``).

    Args:
        init: the ``__init__`` to wrap.

    Returns:
        The checked ``__init__``.
    """
    names = [p for p in inspect.signature(init).parameters if p != "self"]

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        reject_unknown(type(self).__name__, kwargs, names)
        init(self, *args, **kwargs)

    return checked  # type: ignore[return-value]
