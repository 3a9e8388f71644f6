"""What the LangChain and LlamaIndex components do around one clearance (framework-free).

- The fail-open/closed switch has one name everywhere: ``on_failure`` (``"open"`` or
  ``"closed"``) on ``ClearanceConfig`` and on the components; a component's own
  ``on_failure``, when given, overrides ``clearance.on_failure`` (:func:`failure_mode`).
- Loud misconfiguration (:meth:`LivePolicy.absorb`): a failure that retrying cannot heal
  (``core.failure_kind``: credentials, unknown URL or model, invalid request, a bug in the
  user's agent / judge / evaluator code) raises :class:`PermanentFailureError` on the
  first query, naming the cause and the setting to fix, whatever ``on_failure`` says.
  Transient failures fail open (or raise under ``on_failure="closed"``) and warn: a
  :class:`~.core.alerts.FailOpenWarning` once per reason per component instance, plus a
  logger warning every time.
- A likely reference answer under a key the component does not read (``reference``,
  ``answer``, ``ground_truth``, ``expected``, ``gold``...) makes the query run reference-free;
  :meth:`LivePolicy.check_reference_keys` warns once per component instance
  (:class:`~.core.alerts.ReferenceKeyWarning`).
- :func:`is_deterministic` tells whether a model declares temperature 0 (the agent then
  answers each coalition once across trials).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .core.alerts import FailOpenWarning, ReferenceKeyWarning, WarnOnce
from .core.config import ClearanceConfig
from .core.errors import ConfigurationError
from .core.failure_kind import describe_permanent, failure_kind
from .core.redaction import redact
from .core.report import ClearanceReport
from .judges.errors import MissingReferenceError

__all__ = [
    "LIKELY_REFERENCE_KEYS",
    "FailureSwitch",
    "LivePolicy",
    "failure_mode",
    "fold_clearance_scope",
    "is_deterministic",
    "likely_reference_keys",
]

FailureSwitch = Literal["open", "closed"]
_ALWAYS_RAISE = (ConfigurationError, MissingReferenceError)


def fold_clearance_scope(data: Any) -> Any:
    """An integration's ``clearance_scope=`` folded into its ``clearance`` configuration.

    The integrations take ``clearance_scope`` (``"minimal"`` / ``"complete"``, see
    ``ClearanceConfig.clearance_scope``) as a passthrough of their own; None (or absent)
    leaves ``clearance`` as given.

    Args:
        data: The keyword arguments of the integration (a model validator's input).

    Returns:
        The arguments with ``clearance`` updated.
    """
    if not isinstance(data, Mapping) or data.get("clearance_scope") is None:
        return data
    out = dict(data)
    config = out.get("clearance")
    update = {"clearance_scope": out["clearance_scope"]}
    if config is None:
        out["clearance"] = ClearanceConfig(**update)
    elif isinstance(config, ClearanceConfig):
        out["clearance"] = config.model_copy(update=update)
    elif isinstance(config, Mapping):
        out["clearance"] = {**config, **update}
    return out


def failure_mode(clearance: ClearanceConfig, on_failure: FailureSwitch | None) -> FailureSwitch:
    """The effective switch: the component's ``on_failure`` when set, else the config's.

    Args:
        clearance: The component's engine configuration.
        on_failure: The component's own switch, if set.

    Returns:
        ``"open"`` or ``"closed"``.
    """
    return on_failure if on_failure is not None else clearance.on_failure


LIKELY_REFERENCE_KEYS = frozenset(
    {
        "reference",
        "reference_answer",
        "answer",
        "gold",
        "gold_answer",
        "ground_truth",
        "groundtruth",
        "ground_truth_answer",
        "expected",
        "expected_answer",
        "expected_output",
        "target",
        "label",
        "correct_answer",
    }
)
"""Keys under which users commonly put a gold answer (compared case-insensitively)."""


def likely_reference_keys(metadata: Mapping[str, Any] | None, read_key: str) -> list[str]:
    """Keys of ``metadata`` other than ``read_key`` that look like a reference answer.

    A key looks like one when it holds text under a name of :data:`LIKELY_REFERENCE_KEYS`.

    Args:
        metadata: The run's config metadata.
        read_key: The key the component reads the reference from.

    Returns:
        The suspicious keys.
    """
    found = []
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or key == read_key or not isinstance(value, str):
            continue
        if key.lower().replace("-", "_") in LIKELY_REFERENCE_KEYS:
            found.append(key)
    return found


def is_deterministic(model: object) -> bool:
    """Whether the model declares temperature 0.

    A simulated world, whose every trial of a prompt gets the same answer, counts too.

    Args:
        model: A model object, or None.

    Returns:
        True when every call with the same prompt gets the same answer.
    """
    if model is None:
        return False
    temperature = getattr(model, "temperature", None)
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        return float(temperature) == 0.0
    world = getattr(model, "world", None)
    return bool(getattr(world, "deterministic", False))


class LivePolicy:
    """Per component instance: the warn-once memory and the failure decisions.

    Args:
        component: The component's name, used in warnings.
        settings: Maps a role (agent, judge, evaluator) to the setting supplying it, named
            in the messages of permanent failures.
    """

    def __init__(self, component: str, settings: dict[str, str]) -> None:
        """``settings`` maps a role (agent, judge, evaluator) to the setting supplying it."""
        self.component = component
        self.settings = settings
        self.warn = WarnOnce()

    def absorb(self, exc: BaseException, mode: FailureSwitch) -> None:
        """Return when ``exc`` fails open (after warning); raise otherwise.

        Cancellation and other ``BaseException``s propagate unchanged; configuration
        errors (``ConfigurationError``, ``MissingReferenceError``) always raise; permanent
        failures raise :class:`PermanentFailureError`; with ``mode="closed"`` every other
        failure propagates unchanged.

        Args:
            exc: The failure.
            mode: The effective fail-open/closed switch.

        Raises:
            PermanentFailureError: A failure retrying cannot heal.
            ConfigurationError: A configuration error (re-raised as is).
        """
        if not isinstance(exc, Exception):
            raise exc
        kind = failure_kind(exc)
        if kind == "permanent":
            if isinstance(exc, _ALWAYS_RAISE):
                raise exc
            raise describe_permanent(exc, settings=self.settings) from exc
        if mode == "closed":
            raise exc
        error = redact(f"{type(exc).__name__}: {exc}")[:300]
        self.fail_open_warning(kind, error)

    def fail_open_warning(self, reason: str, detail: str) -> None:
        """Warn (once per ``reason``) and log that a query failed open.

        Args:
            reason: The failure kind (the warn-once key).
            detail: The redacted error text.
        """
        self.warn(
            reason,
            f"{self.component}: clearance failed open ({reason}); the context was returned "
            f"unchanged: {detail}",
            FailOpenWarning,
            stacklevel=5,
        )

    def report_warning(self, report: ClearanceReport) -> None:
        """Warn when the engine's report says the run failed open.

        Args:
            report: The engine's report.
        """
        failure = report.failure
        if report.status != "failed" or failure is None:
            return
        transient = [f for f in failure.failed_coalitions if f.transient]
        reason: str = failure.reason
        if reason == "evaluator_error":
            reason = "transient" if transient else "unreadable"
        self.fail_open_warning(reason, f"{failure.error_type}: {failure.error}"[:300])

    def check_reference_keys(
        self, metadata: Mapping[str, Any] | None, read_key: str, *, where: str
    ) -> None:
        """Warn (once per instance) about a likely reference under another key.

        The warning fires when ``metadata`` carries one under a key other than ``read_key``
        while the query has no reference.

        Args:
            metadata: The run's config metadata.
            read_key: The key the component reads the reference from.
            where: What carries the metadata (e.g. "invoke config metadata"), named in the
                warning.
        """
        keys = likely_reference_keys(metadata, read_key)
        if not keys:
            return
        self.warn(
            "reference_key",
            f"{self.component}: the query's {where} carries {keys[0]!r}, which looks like a "
            f"reference answer, but the component reads {read_key!r}; the query ran "
            f"reference-free (see the README, 'Without a reference answer')",
            ReferenceKeyWarning,
            stacklevel=5,
        )
