"""What ``meclear ledger`` shows a reviewer, and the short ids it accepts back.

A proposal alone is an id and a hash; a person needs the memory's text and the questions
it was proven harmful on. :func:`review_entries` joins each proposal with the latest
recorded (redacted) text of that memory at that content hash and the recorded texts of
its harmful queries (the ledger keeps them by default; with ``store_text=False``, the
privacy switch, only hashes). A ``get_documents(ids)`` hook reads the texts from your store
instead (a mapping ``{id: text}``, or LangChain documents / LlamaIndex nodes): a text is shown
only when it still has the content hash the evidence is about, otherwise the entry says
it changed. :func:`carrier_entries` does the same for the carriers of
verified harms (``HarmLedger.carrier_review``: memories that alone gave the failing answer,
kept by minimal clearance) and :func:`carrier_lines` prints them with their evidence.
:func:`resolve_run_ref` and :func:`resolve_feedback_ref`
accept the 8-character prefixes the CLI prints wherever a full id is accepted: a prefix
that matches one id stands for it, one that matches several is refused with the matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import ConfigurationError
from ..core.redaction import redact

__all__ = [
    "MIN_PREFIX",
    "CarrierEntry",
    "GetDocuments",
    "ReviewEntry",
    "carrier_entries",
    "carrier_lines",
    "entries_csv",
    "resolve_feedback_ref",
    "resolve_run_ref",
    "review_entries",
    "text_line",
]

MIN_PREFIX = 6
"""The shortest id prefix accepted (shorter ones match too much to be safe)."""

_MATCHES_SHOWN = 5

GetDocuments = Callable[[Sequence[str]], Any]
"""``get_documents(ids)``: your store's texts by memory id, as ``{id: text}`` or as objects
with an id (``id`` / ``id_`` / ``node_id``) and a text (``page_content`` / ``get_content()`` /
``text``), e.g. ``vector_store.get_by_ids`` or ``docstore.get_nodes``."""


class ReviewEntry(BaseModel):
    """A review proposal with what a person needs to decide on it."""

    model_config = ConfigDict(frozen=True)

    proposal: dict[str, Any]
    """The proposal (``ReviewProposal`` fields)."""
    memory_text: str | None = None
    """The memory's text at the proposal's content hash (redacted): from your store
    (``get_documents``) or as the ledger recorded it; None when neither has it."""
    questions: dict[str, str | None] = Field(default_factory=dict)
    """Query id -> recorded question text (redacted; None when not kept), harmful queries."""
    text_source: Literal["store", "ledger"] | None = None
    """Where ``memory_text`` came from."""
    text_note: str | None = None
    """Why there is no text, or why the store's was not used (changed since the evidence)."""


def review_entries(
    ledger: Any, proposals: Sequence[Any], *, get_documents: GetDocuments | None = None
) -> list[ReviewEntry]:
    """Each proposal with its memory's text and the questions it was proven harmful on.

    Args:
        ledger: The ``HarmLedger``.
        proposals: Its review proposals (either tier).
        get_documents: Reads the memories' texts from your store (:data:`GetDocuments`);
            None: the texts the ledger kept.

    Returns:
        One entry per proposal, in order.
    """
    return [ReviewEntry(**fields) for fields in _entries(ledger, proposals, get_documents)]


def _entries(
    ledger: Any, proposals: Sequence[Any], get_documents: GetDocuments | None
) -> list[dict[str, Any]]:
    found = _recorded_texts(ledger, proposals)
    stored = _store_texts(get_documents, [p.memory_id for p in proposals])
    out: list[dict[str, Any]] = []
    for p, (recorded, questions) in zip(proposals, found, strict=True):
        text, source, note = _pick_text(p, recorded, stored, get_documents is not None)
        out.append(
            {
                "proposal": p.model_dump(mode="json"),
                "memory_text": text,
                "questions": questions,
                "text_source": source,
                "text_note": note,
            }
        )
    return out


def _pick_text(
    proposal: Any, recorded: str | None, stored: Mapping[str, str], asked_store: bool
) -> tuple[str | None, Literal["store", "ledger"] | None, str | None]:
    """The text to show: the store's when it still has the evidence's hash, else the ledger's."""
    from ..runtime.hashing import content_hash

    current = stored.get(proposal.memory_id)
    if current is not None and (
        proposal.content_hash is None or content_hash(current) == proposal.content_hash
    ):
        return redact(current), "store", None
    if current is not None:
        note = "changed in your store since the evidence (content hash differs)"
    elif asked_store:
        note = "not in your store any more"
    else:
        note = None
    if recorded is not None:
        return recorded, "ledger", note
    if note is None:
        note = (
            "not kept: the ledger stores no texts (store_text=False); pass get_documents= "
            "(CLI: --texts FILE or --get-documents module:function) to read your store"
        )
    return None, None, note


def _store_texts(get_documents: GetDocuments | None, ids: Sequence[str]) -> dict[str, str]:
    """``{id: text}`` from the user's store (``GetDocuments``'s accepted shapes)."""
    if get_documents is None or not ids:
        return {}
    result = get_documents(list(dict.fromkeys(ids)))
    if isinstance(result, Mapping):
        return {str(k): str(v) for k, v in result.items() if v is not None}
    texts: dict[str, str] = {}
    for item in result or ():
        item = getattr(item, "node", item)  # a LlamaIndex NodeWithScore
        key = next(
            (v for a in ("id", "id_", "node_id") if (v := getattr(item, a, None)) is not None),
            None,
        )
        text = getattr(item, "page_content", None)
        if text is None and callable(getattr(item, "get_content", None)):
            text = item.get_content()
        if text is None:
            text = getattr(item, "text", None)
        if key is not None and isinstance(text, str):
            texts[str(key)] = text
    return texts


class CarrierEntry(BaseModel):
    """A carrier proposal (``ledger.review.CarrierProposal``) with its text and questions."""

    model_config = ConfigDict(frozen=True)

    proposal: dict[str, Any]
    """The proposal (``CarrierProposal`` fields: answers alone, harmful answers, runs)."""
    memory_text: str | None = None
    """The memory's text at the proposal's content hash (redacted), from your store or the
    ledger (as :class:`ReviewEntry`)."""
    questions: dict[str, str | None] = Field(default_factory=dict)
    """Query id -> recorded question text (redacted; None when not kept)."""
    text_source: Literal["store", "ledger"] | None = None
    """Where ``memory_text`` came from."""
    text_note: str | None = None
    """Why there is no text, or why the store's was not used."""


def carrier_entries(
    ledger: Any, proposals: Sequence[Any], *, get_documents: GetDocuments | None = None
) -> list[CarrierEntry]:
    """Each carrier proposal with its memory's text and the questions it carried the harm on.

    Args:
        ledger: The ``HarmLedger``.
        proposals: Its carrier proposals (``HarmLedger.carrier_review``).
        get_documents: Reads the texts from your store (as :func:`review_entries`).

    Returns:
        One entry per proposal, in order.
    """
    return [CarrierEntry(**fields) for fields in _entries(ledger, proposals, get_documents)]


def carrier_lines(entries: Sequence[CarrierEntry], width: int = 300) -> str:
    """The carriers as text blocks for ``meclear ledger review`` (hostile text made safe).

    Args:
        entries: The carrier entries.
        width: The longest memory text shown (questions get half).

    Returns:
        The section, starting with its heading; one line when there is no carrier.
    """
    if not entries:
        return "carriers: none recorded (the carriers search runs with find_carriers=True)"
    lines = [
        "carriers: memories that alone gave the failing answer of a verified harm "
        "(redundant copies minimal clearance kept)"
    ]
    for entry in entries:
        p = entry.proposal
        withheld = f", withheld in {p['withheld']} runs" if p["withheld"] else ""
        digest = (p["content_hash"] or "-")[:12]
        lines.append(f"  memory {_clip(p['memory_id'], 80)}  (hash {digest})")
        lines.append(f"    a carrier on {p['queries']} queries{withheld}")
        answers = "; ".join(_clip(a, 80) for a in p["answers"]) or "-"
        harmful = "; ".join(_clip(a, 80) for a in p["harmful_answers"]) or "-"
        lines.append(f"    answer alone: {answers}  (failing answer: {harmful})")
        lines.append(text_line(entry, width))
        lines.append("    carried the harm on:")
        for query_id, question in entry.questions.items():
            shown = _clip(question, width // 2) if question is not None else "(not kept)"
            lines.append(f"      {_clip(query_id[:8], 8)}  {shown}")
    return "\n".join(lines)


def text_line(entry: ReviewEntry | CarrierEntry, width: int = 300) -> str:
    """The ``text:`` line of an entry: its text and source, or why there is none.

    Args:
        entry: A review or carrier entry.
        width: The longest text shown.

    Returns:
        The indented line.
    """
    if entry.memory_text is None:
        return f"    text: ({entry.text_note or 'not kept'})"
    source = f"  [{entry.text_source}" + (f"; {entry.text_note}]" if entry.text_note else "]")
    return f"    text: {_clip(entry.memory_text, width)}{source}"


def _clip(text: str, width: int) -> str:
    text = text.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _recorded_texts(
    ledger: Any, proposals: Sequence[Any]
) -> list[tuple[str | None, dict[str, str | None]]]:
    """The redacted memory text and question texts of each proposal, as recorded."""
    if not proposals:
        return []
    from sqlalchemy import select

    from ..ledger import schema as t
    from ..ledger.database import read_transaction

    m, r = t.run_memories, t.runs
    found: list[tuple[str | None, dict[str, str | None]]] = []
    with read_transaction(ledger.engine) as conn:
        for p in proposals:
            text = None
            if p.content_hash is not None:
                text = conn.execute(
                    select(m.c.memory_text)
                    .where(
                        m.c.namespace == ledger.namespace,
                        m.c.memory_id == p.memory_id,
                        m.c.content_hash == p.content_hash,
                        m.c.memory_text.is_not(None),
                    )
                    .order_by(m.c.id.desc())
                    .limit(1)
                ).scalar()
            questions: dict[str, str | None] = {}
            for query_id in p.query_ids:
                questions[query_id] = _safe(
                    conn.execute(
                        select(r.c.query_text)
                        .where(
                            r.c.namespace == ledger.namespace,
                            r.c.query_id == query_id,
                            r.c.query_text.is_not(None),
                        )
                        .order_by(r.c.id.desc())
                        .limit(1)
                    ).scalar()
                )
            found.append((_safe(text), questions))
    return found


def _formula_safe(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula gets a leading ``'``."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def entries_csv(entries: Sequence[ReviewEntry]) -> str:
    """The review entries as CSV: the proposal's columns, the memory text and its questions.

    Memory texts, ids and questions are hostile text: a cell that would start a spreadsheet
    formula is prefixed with ``'``.

    Args:
        entries: The review entries.

    Returns:
        The CSV text, with a header row (questions joined by `` | ``).
    """
    import csv
    import io

    from ..ledger.review import ReviewProposal

    fields = [f for f in ReviewProposal.model_fields if f not in ("query_ids", "run_ids")]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*fields, "memory_text", "questions"])
    for entry in entries:
        questions = " | ".join(q or f"({qid}: text not kept)" for qid, q in entry.questions.items())
        row = [entry.proposal.get(f) for f in fields] + [entry.memory_text or "", questions]
        writer.writerow([_formula_safe(v) for v in row])
    return out.getvalue()


def _safe(text: str | None) -> str | None:
    return None if text is None else redact(text)


def _unique(ref: str, matches: list[str], what: str) -> str | None:
    distinct = sorted(set(matches))
    if len(distinct) > 1:
        shown = ", ".join(distinct[:_MATCHES_SHOWN])
        more = "" if len(distinct) <= _MATCHES_SHOWN else f" and {len(distinct) - 5} more"
        raise ConfigurationError(
            f"{what} prefix {ref!r} is ambiguous: {shown}{more}; give more characters"
        )
    return distinct[0] if distinct else None


def _prefix_matches(ledger: Any, column: Any, ref: str, table: Any) -> list[str]:
    from sqlalchemy import select

    from ..ledger.database import read_transaction

    with read_transaction(ledger.engine) as conn:
        rows = conn.execute(
            select(column)
            .where(table.c.namespace == ledger.namespace, column.startswith(ref, autoescape=True))
            .distinct()
            .limit(_MATCHES_SHOWN + 20)
        ).scalars()
        return [str(v) for v in rows if v is not None]


def resolve_run_ref(ledger: Any, ref: str) -> str:
    """A full run, tracing-run or query id for ``ref`` (itself, or the id it is a prefix of).

    An exact id is returned as it is (the ledger looks it up); a prefix of at least
    :data:`MIN_PREFIX` characters that matches exactly one run id, tracing run id or query id
    (in that order) stands for it.

    Args:
        ledger: The ``HarmLedger``.
        ref: A full id or a printed prefix.

    Returns:
        The id to look up.

    Raises:
        ConfigurationError: The prefix matches several ids of one kind.
    """
    from ..ledger import LedgerLookupError
    from ..ledger import schema as t

    try:
        ledger.find_run(ref)
        return ref
    except LedgerLookupError:
        if len(ref) < MIN_PREFIX:
            raise
    r = t.runs
    for column, what in ((r.c.run_id, "run id"), (r.c.trace_run_id, "tracing run id")):
        found = _unique(ref, _prefix_matches(ledger, column, ref, r), what)
        if found is not None:
            return found
    found = _unique(ref, _prefix_matches(ledger, r.c.query_id, ref, r), "query id")
    return found if found is not None else ref


def resolve_feedback_ref(ledger: Any, ref: str) -> str:
    """A full feedback id for ``ref`` (itself, or the one id it is a prefix of).

    Args:
        ledger: The ``HarmLedger``.
        ref: A full feedback id or a printed prefix (at least :data:`MIN_PREFIX` characters).

    Returns:
        The feedback id.

    Raises:
        ConfigurationError: The prefix matches several feedback ids.
    """
    from ..ledger import schema as t

    if len(ref) < MIN_PREFIX:
        return ref
    f = t.feedback
    found = _unique(ref, _prefix_matches(ledger, f.c.feedback_id, ref, f), "feedback id")
    return found if found is not None else ref
