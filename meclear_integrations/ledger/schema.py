"""The ledger's tables (SQLAlchemy Core), one portable definition for SQLite and PostgreSQL.

Every history table is append-only: the package inserts rows and never updates or deletes them.
A restore, a feedback or a replay is a new row that refers to earlier ones.

- ``meclear_runs``: one clearance decision (or a skip) for one query.
- ``meclear_run_memories``: every memory of that decision's context: id, content hash,
  position, LOO effect and label, Shapley value and interval, rank, harmful / cleared flags,
  whether it was offered as a prior candidate; the text only when the ledger stores texts.
- ``meclear_run_candidates``: the verified candidates (the verdicts of Eq. 18-19).
- ``meclear_feedback`` / ``meclear_feedback_memories``: feedback on a run and the memories
  it names.
- ``meclear_memory_events``: the audit trail of one memory's verdicts, who gave each, when,
  why and the evidence run: ``restored`` (a person or a verified replay says it was
  wrongly suppressed), and the settlement verdicts of ``ledger.settlement`` (``lifted``,
  ``upheld``, ``checked``, ``reinstated``).
- ``meclear_memory_scopes`` (version 2): state kept up to date on write, one row per
  memory, content hash and question with a verified verdict: when a verified clearance of
  that question removed it, proved it, acquitted it or found it needed, when it was last
  restored, and the question's lexical signature (hashed words), its name signature (the
  hashed names among them, version 3) and embedding. Unlike the
  append-only tables its rows are updated in place by :meth:`HarmLedger.record` and
  :meth:`HarmLedger.restore` (``scope_state``); it is derived from them and can be rebuilt.
- ``meclear_harm_texts`` / ``meclear_harm_text_keys`` (version 4): one row per memory a
  verified clearance removed, keyed by its content hash and the hash of its normalised text,
  with its hashed content words and their MinHash band keys (``content``): admission and
  clearance recognise a verified harmful text under any id, or a near-duplicate of it.
  Append-only; no text is stored.
- ``meclear_review_decisions`` (version 5): a person's decision on a review proposal
  (accepted or rejected), who made it, why, where (CLI, Python, a LangSmith / Phoenix /
  Langfuse annotation) and the evidence runs (``tombstones``).
- ``meclear_tombstones`` (version 5): what an accepted review did to the memory store: a
  memory retired (soft delete, with the memory kept for a restore), restored, found
  already gone upstream, or a failed removal; append-only like the rest.
- ``meclear_schema_version``: the migrations applied (``migrations``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-19.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "candidates",
    "feedback",
    "feedback_memories",
    "harm_text_keys",
    "harm_texts",
    "memory_events",
    "memory_scopes",
    "metadata",
    "review_decisions",
    "run_memories",
    "runs",
    "schema_version",
    "tombstones",
]

metadata = MetaData()

_PK = BigInteger().with_variant(Integer, "sqlite")
"""64-bit keys on PostgreSQL; SQLite's INTEGER PRIMARY KEY is its rowid."""
_TIME = DateTime(timezone=True)

schema_version = Table(
    "meclear_schema_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", String(200), nullable=False),
    Column("applied_at", _TIME, nullable=False),
)

runs = Table(
    "meclear_runs",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("run_id", String(36), nullable=False, unique=True),
    Column("namespace", String(200), nullable=False),
    Column("created_at", _TIME, nullable=False),
    Column("query_id", String(80), nullable=False),
    Column("query_text", Text),
    Column("origin", String(20), nullable=False),
    Column("mode", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("status_reason", String(200)),
    Column("recovered", Boolean, nullable=False),
    Column("baseline_value", Float),
    Column("final_value", Float),
    Column("success_signal", String(40), nullable=False),
    Column("agent_model", String(200)),
    Column("judge_model", String(200)),
    Column("model_calls", Integer),
    Column("evaluator_calls", Integer, nullable=False),
    Column("coalitions", Integer, nullable=False),
    Column("rounds", Integer, nullable=False),
    Column("wall_seconds", Float, nullable=False),
    Column("cost", JSON, nullable=False),
    Column("estimator", String(40)),
    Column("clearance_search", String(20)),
    Column("harm_tolerance", Float),
    Column("trace_run_id", String(100)),
    Column("trace_system", String(40)),
    Column("trigger", String(200)),
    Column("trigger_reason", String(200)),
    Column("replay_of", String(36)),
    Column("feedback_id", String(36)),
    Column("config", JSON),
    Column("extra", JSON),
    Index("ix_meclear_runs_query", "namespace", "query_id"),
    Index("ix_meclear_runs_trace", "trace_run_id"),
)

run_memories = Table(
    "meclear_run_memories",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("run_pk", _PK, ForeignKey("meclear_runs.id"), nullable=False),
    Column("namespace", String(200), nullable=False),
    Column("memory_id", String(512), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("position", Integer, nullable=False),
    Column("memory_text", Text),
    Column("loo_effect", Float),
    Column("loo_label", String(20)),
    Column("shapley", Float),
    Column("shapley_lo", Float),
    Column("shapley_hi", Float),
    Column("rank", Integer),
    Column("harmful", Boolean, nullable=False),
    Column("cleared", Boolean, nullable=False),
    Column("offered_as_prior", Boolean, nullable=False),
    Index("ix_meclear_run_memories_memory", "namespace", "memory_id"),
    Index("ix_meclear_run_memories_run", "run_pk"),
)

candidates = Table(
    "meclear_run_candidates",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("run_pk", _PK, ForeignKey("meclear_runs.id"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("size", Integer, nullable=False),
    Column("memory_ids", JSON, nullable=False),
    Column("value", Float, nullable=False),
    Column("gain", Float, nullable=False),
    Column("recovered", Boolean, nullable=False),
    Column("admissible", Boolean, nullable=False),
    Column("trials", Integer, nullable=False),
    Index("ix_meclear_run_candidates_run", "run_pk"),
)

feedback = Table(
    "meclear_feedback",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("feedback_id", String(36), nullable=False, unique=True),
    Column("namespace", String(200), nullable=False),
    Column("created_at", _TIME, nullable=False),
    Column("run_id", String(36), nullable=False),
    Column("query_id", String(80), nullable=False),
    Column("correct", Boolean, nullable=False),
    Column("correction", Text),
    Column("source", String(40), nullable=False),
    Column("source_id", String(100)),
    Column("comment", Text),
    Column("authority", String(16)),
    Index("ix_meclear_feedback_query", "namespace", "query_id"),
    Index("ix_meclear_feedback_run", "run_id"),
)

feedback_memories = Table(
    "meclear_feedback_memories",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("feedback_pk", _PK, ForeignKey("meclear_feedback.id"), nullable=False),
    Column("namespace", String(200), nullable=False),
    Column("memory_id", String(512), nullable=False),
    Index("ix_meclear_feedback_memories_memory", "namespace", "memory_id"),
)

memory_events = Table(
    "meclear_memory_events",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("namespace", String(200), nullable=False),
    Column("created_at", _TIME, nullable=False),
    Column("memory_id", String(512), nullable=False),
    Column("event", String(20), nullable=False),
    Column("reason", Text),
    Column("actor", String(200)),
    Column("feedback_id", String(36)),
    Column("run_id", String(36)),
    Index("ix_meclear_memory_events_memory", "namespace", "memory_id"),
)

memory_scopes = Table(
    "meclear_memory_scopes",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("namespace", String(200), nullable=False),
    Column("memory_id", String(512), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("query_id", String(80), nullable=False),
    Column("signature", JSON),
    Column("names", JSON),
    Column("embedding", JSON),
    Column("active", Boolean, nullable=False),
    Column("tested", Boolean, nullable=False),
    Column("settled", Boolean, nullable=False),
    Column("carrier", Boolean, nullable=False),
    Column("cleared_at", _TIME),
    Column("cleared_run_id", String(36)),
    Column("rooted_at", _TIME),
    Column("rooted_run_id", String(36)),
    Column("proven_at", _TIME),
    Column("settled_at", _TIME),
    Column("acquitted_at", _TIME),
    Column("needed_at", _TIME),
    Column("needed_run_id", String(36)),
    Column("helpful_at", _TIME),
    Column("shapley_sum", Float, nullable=False),
    Column("shapley_count", Integer, nullable=False),
    Column("restored_at", _TIME),
    Column("harm_runs", Integer, nullable=False),
    Column("needed_runs", Integer, nullable=False),
    Column("updated_at", _TIME, nullable=False),
    UniqueConstraint(
        "namespace", "memory_id", "content_hash", "query_id", name="uq_meclear_memory_scopes"
    ),
    Index(
        "ix_meclear_memory_scopes_recent",
        "namespace",
        "memory_id",
        "content_hash",
        "active",
        "cleared_at",
    ),
    Index("ix_meclear_memory_scopes_query", "namespace", "query_id"),
    Index(
        "ix_meclear_memory_scopes_content",
        "namespace",
        "content_hash",
        "active",
        "cleared_at",
    ),
)

harm_texts = Table(
    "meclear_harm_texts",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("namespace", String(200), nullable=False),
    Column("memory_id", String(512), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("text_hash", String(64)),
    Column("signature", JSON),
    Column("run_id", String(36), nullable=False),
    Column("created_at", _TIME, nullable=False),
    Index("ix_meclear_harm_texts_text", "namespace", "text_hash"),
    Index("ix_meclear_harm_texts_content", "namespace", "content_hash"),
)

harm_text_keys = Table(
    "meclear_harm_text_keys",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("text_pk", _PK, ForeignKey("meclear_harm_texts.id"), nullable=False),
    Column("namespace", String(200), nullable=False),
    Column("band_key", String(40), nullable=False),
    Index("ix_meclear_harm_text_keys_key", "namespace", "band_key"),
)

review_decisions = Table(
    "meclear_review_decisions",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("decision_id", String(36), nullable=False, unique=True),
    Column("namespace", String(200), nullable=False),
    Column("created_at", _TIME, nullable=False),
    Column("memory_id", String(512), nullable=False),
    Column("content_hash", String(64)),
    Column("decision", String(20), nullable=False),
    Column("actor", String(200)),
    Column("reason", Text),
    Column("source", String(40), nullable=False),
    Column("source_id", String(200)),
    Column("run_ids", JSON, nullable=False),
    Column("query_ids", JSON, nullable=False),
    UniqueConstraint("namespace", "source", "source_id", name="uq_meclear_review_source"),
    Index("ix_meclear_review_decisions_memory", "namespace", "memory_id"),
)

tombstones = Table(
    "meclear_tombstones",
    metadata,
    Column("id", _PK, primary_key=True, autoincrement=True),
    Column("tombstone_id", String(36), nullable=False),
    Column("namespace", String(200), nullable=False),
    Column("created_at", _TIME, nullable=False),
    Column("memory_id", String(512), nullable=False),
    Column("content_hash", String(64)),
    Column("event", String(20), nullable=False),
    Column("store", String(200), nullable=False),
    Column("actor", String(200)),
    Column("reason", Text),
    Column("decision_id", String(36)),
    Column("run_ids", JSON, nullable=False),
    Column("payload", JSON),
    Column("detail", Text),
    UniqueConstraint("tombstone_id", "event", name="uq_meclear_tombstone_event"),
    Index("ix_meclear_tombstones_memory", "namespace", "memory_id"),
    Index("ix_meclear_tombstones_decision", "decision_id"),
)
