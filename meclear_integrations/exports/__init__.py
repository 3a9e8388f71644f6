"""Per-memory scores where teams already review: LangSmith, Langfuse, Phoenix.

A clearance's per-memory results (harm score, Shapley value and interval, verdict) and the
ledger's review proposals, written into the observability tool a team already uses, next
to the traced run they belong to:

- :mod:`.langsmith`: feedback on the traced run (``langsmith.Client.create_feedback``);
- :mod:`.langfuse`: scores on the trace or observation (``Langfuse.create_score``; the
  ``langfuse`` extra);
- :mod:`.phoenix`: document annotations on the retriever (or reranker) span
  (``phoenix.client.Client``; the ``phoenix`` extra).

Each is optional and imports its client only when called. The scores themselves
(:func:`memory_scores`) are framework-free and come from a
:class:`~meclear_integrations.core.ClearanceReport` or a recorded ledger run. Memory texts
are never sent: ids, content hashes and numbers only.
"""

from __future__ import annotations

from .scores import MemoryScore, Verdict, memory_scores

__all__ = ["MemoryScore", "Verdict", "memory_scores"]
