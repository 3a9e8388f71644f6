"""One query flow for both integrations, sync and async, live and in the background.

The flow around a query (guard, trigger, ledger lookup, clearance, events, ledger write)
is written once, framework-free, as a generator of steps (:mod:`.steps`, :mod:`.flow`), in
the engine's style; :func:`run_sync` and :func:`run_async` drive it. The LangChain and
LlamaIndex components are thin hosts: they turn their items into memories, run the
engine with their agent and judge, report events their framework's way and copy their
items with the metadata of :func:`result_metadata`. The background mode's request path
(:mod:`.background`) and its audit (:mod:`.audit`) are two more drivers of the same flow.
The components' shared settings and runtime are :class:`~.component.ClearingComponent`;
their grouped settings :class:`Limits`, :class:`Loop` and :class:`Documents`
(:mod:`.settings`). Each name is imported from its module on first use (PEP 562).
"""

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

if TYPE_CHECKING:
    from .flow import AsyncHost, QuerySettings, SyncHost, clearance_flow, run_async, run_sync
    from .settings import Documents, Limits, Loop
    from .steps import FlowEvent, FlowResult

__all__ = [
    "AsyncHost",
    "Documents",
    "FlowEvent",
    "FlowResult",
    "Limits",
    "Loop",
    "QuerySettings",
    "SyncHost",
    "clearance_flow",
    "run_async",
    "run_sync",
]

_LAZY = {
    **dict.fromkeys(
        [
            "AsyncHost",
            "QuerySettings",
            "SyncHost",
            "clearance_flow",
            "run_async",
            "run_sync",
        ],
        ".flow",
    ),
    **dict.fromkeys(
        [
            "Documents",
            "Limits",
            "Loop",
        ],
        ".settings",
    ),
    **dict.fromkeys(
        [
            "FlowEvent",
            "FlowResult",
        ],
        ".steps",
    ),
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
