"""What the LangChain and LlamaIndex components do around one clearance (framework-free).

- The fail-open/closed switch has one name everywhere: ``on_failure`` (``"open"`` or
  ``"closed"``) on ``ClearanceConfig`` and on the components; a component's own
  ``on_failure``, when given, overrides ``clearance.failure.mode`` (:func:`failure_mode`).
- Loud misconfiguration (:meth:`LivePolicy.absorb`): a failure that retrying cannot heal
  (``core.failures.kind``: credentials, unknown URL or model, invalid request, a bug in the
  user's agent / judge / evaluator code) raises :class:`PermanentFailureError` on the
  first query, naming the cause and the setting to fix, whatever ``on_failure`` says.
  Transient failures fail open (or raise under ``on_failure="closed"``) and warn: a
  :class:`~meclear_integrations.core.failures.alerts.FailOpenWarning` once per reason per
  component instance, plus a logger warning every time.
- One name per failure (``core.failures.kind``): the warning says ``reason`` and ``kind``
  exactly as the document / node metadata, the ``error`` event and the span do
  (``evaluator_error`` / ``transient``, ``evaluator_error`` / ``content_rejected``...).
- A web page where an API reply was expected (a proxy's HTML error page) is transient,
  unless the component's first :data:`FIRST_CALLS` calls all got one and none was ever
  answered: then it is a wrong ``base_url`` and raises :class:`PermanentFailureError`
  naming the URL (:meth:`LivePolicy.check_endpoint`); after the provider has answered once,
  a page is a passing proxy error and fails open.
- A likely reference answer under a key the component does not read (``reference``,
  ``answer``, ``ground_truth``, ``expected``, ``gold``...) makes the query run reference-free;
  :meth:`LivePolicy.check_reference_keys` warns once per component instance
  (:class:`~meclear_integrations.core.failures.alerts.ReferenceKeyWarning`).
- :func:`is_deterministic` tells whether a model declares temperature 0 (the agent then
  answers each coalition once across trials).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ..core.config import ClearanceConfig
from ..core.errors import ConfigurationError
from ..core.failures.alerts import FailOpenWarning, ReferenceKeyWarning, WarnOnce
from ..core.failures.kind import (
    PermanentFailureError,
    describe_permanent,
    failure_kind,
    failure_url,
    is_not_api_reply,
)
from ..core.redaction import redact
from ..core.report import ClearanceReport
from ..judges.errors import MissingReferenceError
from ..runtime.payloads import NO_ANSWER_HINT, NO_ANSWER_REASON

__all__ = [
    "FIRST_CALLS",
    "LIKELY_REFERENCE_KEYS",
    "FailureSwitch",
    "LivePolicy",
    "failure_mode",
    "fold_clearance_scope",
    "is_deterministic",
    "likely_reference_keys",
]

logger = logging.getLogger(__name__)

FailureSwitch = Literal["open", "closed"]
FIRST_CALLS = 2
"""Failed calls at the start of a component's life that decide whether an HTML page is its
endpoint (all of them got one, none was answered) or a passing proxy error."""
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
    return on_failure if on_failure is not None else clearance.failure.mode


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


_URL_ATTRIBUTES = ("openai_api_base", "base_url", "api_base", "endpoint", "azure_endpoint")


def model_url(model: object, depth: int = 0) -> str | None:
    """The base URL a model object declares (``base_url``, ``api_base``...), redacted.

    Args:
        model: A LangChain chat model, a LlamaIndex LLM, a binding of one, or anything.
        depth: Bindings followed so far.

    Returns:
        The URL, or None.
    """
    if model is None or depth > 3:
        return None
    for name in _URL_ATTRIBUTES:
        value = getattr(model, name, None)
        if value is not None and str(value).startswith("http"):
            return redact(str(value))[:200]
    for name in ("bound", "llm", "model"):
        inner = getattr(model, name, None)
        if inner is not None and inner is not model and not isinstance(inner, str):
            url = model_url(inner, depth + 1)
            if url:
                return url
    return None


class _PageSeen(Exception):
    """A fail-open report's (redacted) error text, classified like the original."""


class LivePolicy:
    """Per component instance: the warn-once memory and the failure decisions.

    Args:
        component: The component's name, used in warnings.
        settings: Maps a role (agent, judge, evaluator) to the setting supplying it, named
            in the messages of permanent failures.
    """

    def __init__(
        self,
        component: str,
        settings: dict[str, str],
        *,
        models: Callable[[], Sequence[object]] | None = None,
    ) -> None:
        """``settings`` maps a role to its setting; ``models`` gives the models (their URLs)."""
        self.models = models
        self.component = component
        self.settings = settings
        self.warn = WarnOnce()
        self._answered = False
        self._pages = 0
        self._abstained = False
        self._lock = threading.Lock()

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
        self.check_endpoint(exc, answered=False)
        if mode == "closed":
            raise exc
        error = redact(f"{type(exc).__name__}: {exc}")[:300]
        self.fail_open_warning("integration_error", error, kind=kind)

    def check_endpoint(self, exc: BaseException | None, *, answered: bool) -> None:
        """Raise when the component's first queries all got a web page instead of a reply.

        Args:
            exc: the query's failure (a fail-open report's cause, or what the run raised).
            answered: the provider answered at least one call of the query.

        Raises:
            PermanentFailureError: ``base_url`` points at a web page (its URL named).
        """
        page = exc is not None and is_not_api_reply(exc)
        with self._lock:
            if answered or not page:
                self._answered = self._answered or answered
                if not page:
                    return
            if self._answered:
                return
            self._pages += 1
            loud = self._pages >= FIRST_CALLS
        if loud and exc is not None:
            url = failure_url(exc) or self._model_urls() or "the model's base_url"
            raise PermanentFailureError(
                f"MeClear: {self.component}'s first {FIRST_CALLS} calls got a web page "
                f"where an API reply was expected (from {url}); this is not a passing proxy "
                f"error. Fix: check base_url (it usually ends in /v1) of the agent and judge "
                f"models ({', '.join(sorted(set(self.settings.values())))}).",
                kind_detail="bad_endpoint",
                role=None,
            ) from exc

    def _model_urls(self) -> str | None:
        """The base URLs of the component's models, when they declare one."""
        if self.models is None:
            return None
        found = []
        for model in self.models():
            url = model_url(model)
            if url and url not in found:
                found.append(url)
        return " / ".join(found) or None

    def fail_open_warning(self, reason: str, detail: str, *, kind: str | None = None) -> None:
        """Warn (once per ``reason`` and ``kind``) and log that a query failed open.

        Args:
            reason: The metadata's ``reason`` (``evaluator_error``, ``circuit_open``...).
            detail: The redacted error text.
            kind: The failure's kind (``core.failures.kind``), as in the metadata.
        """
        label = f"reason {reason!r}" + (f", kind {kind!r}" if kind else "")
        self.warn(
            f"{reason}/{kind}" if kind else reason,
            f"{self.component}: clearance failed open ({label}); the context was returned "
            f"unchanged: {detail}",
            FailOpenWarning,
            stacklevel=5,
        )

    def abstention_warning(self) -> None:
        """Log once per component (WARNING) that clearance abstains on a non-answer verdict."""
        with self._lock:
            if self._abstained:
                return
            self._abstained = True
        logger.warning("MeClear %s: %s", self.component, NO_ANSWER_HINT)

    def report_warning(self, report: ClearanceReport) -> None:
        """Warn when the engine's report says the run failed open.

        Args:
            report: The engine's report.
        """
        failure = report.failure
        if report.status in ("complete", "unverified"):
            self.check_endpoint(None, answered=True)
        if report.status == "unverified" and report.status_reason == NO_ANSWER_REASON:
            self.abstention_warning()
        if report.status != "failed" or failure is None:
            return
        if failure.kind == "transient" and failure.coalitions_evaluated == 0:
            texts = [f.error for f in failure.failed_coalitions]
            pages = [t for t in texts if is_not_api_reply(_PageSeen(t))]
            for text in pages or [failure.error]:
                self.check_endpoint(_PageSeen(text), answered=False)
        elif failure.coalitions_evaluated > 0:
            self.check_endpoint(None, answered=True)
        self.fail_open_warning(
            failure.reason, f"{failure.error_type}: {failure.error}"[:300], kind=failure.kind
        )

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
            f"reference-free (see the docs, docs/without-reference.md)",
            ReferenceKeyWarning,
            stacklevel=5,
        )
