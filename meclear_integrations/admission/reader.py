"""An offline TEXT-READING stand-in for every admission role (not an LLM).

:class:`AdmissionReading` is an admission script of the package's one offline stand-in model
(:class:`~meclear_integrations.simulation.StandInModel`); :class:`AdmissionReader` is that
model configured with it alone. It answers the prompts ConMem and the baselines send a chat
model (:mod:`.prompts`, :mod:`.baselines.prompts`), reading only the prompt text: the
``# Task:`` line and the delimited data sections. It never sees a benchmark label, a candidate's
kind or id (the prompts carry none), and each role sees only what the paper gives that role:
the blind judge never sees the candidate memory, the responders never see the historical
context. Its reading of a memory against a context is :func:`.reading.read` (support,
unsupported specifics, a later update, specificity).

Roles:

- *probe generator*: relevant probe = a request about the memory's topic words for its
  subject (no memory content); irrelevant probe = a general-knowledge request (one of a
  fixed few, so identical control answers recur across candidates); risk probe = the
  latest update on the memory's topic when the context holds one, else the same request
  for another person named in the context ("for X, not <subject>").
- *probe auditor*: a probe is invalid when it repeats most of the memory, when the
  irrelevant probe shares the memory's topic words, or when the risk probe has no
  observable shift (another person, an update).
- *responder*: the control answers generally; the treatment applies the memory when the
  query shares its topic words and is about the memory's subject, bringing in the memory's
  particulars the query lacks (at most :data:`PARTICULARS` words: "Tailored answer to: ...
  (with your shellfish, allergic)") and never the memory's sentence, so the blind judge
  cannot read the memory back; it does not carry the memory over to another person; given
  an update that the memory does not already state, it answers from the update and names
  the memory's particulars as an earlier note.
- *blind judge*: reads only the particulars an answer shows against the history: prefers
  the plain answer when a later turn updates them, TIE when they cannot be checked (most
  never appear in the history, or a number or name the history never mentions) or are
  almost empty, else the personal answer. It never sees the memory, so it cannot apply
  the auditor's reading of it (a contradiction, the memory's own support). Where it
  disagrees with the auditor (a utility it does not confirm), the probe contributes 0 and
  the tie-break reads that disagreement in the evidence: removing the judge changes those
  decisions (docs, Admission: ablations).
- *attribution auditor*: neutral when the treatment equals the control; risk when the
  memory is not grounded in the context (unsupported specifics or correction, low support,
  a later update); unnecessary when the query does not concern the memory; utility when
  it is specific; neutral otherwise.
- *tie-break*: reads the raw evidence first: DO_NOT_STORE when on some probe the auditor
  saw utility and the blind judge found no better answer (the benefit is unconfirmed:
  this is where the judge's verdict decides, so removing the judge changes decisions);
  else STORE when the memory is grounded and at least :data:`TIE_SPECIFIC` specific.
- *reason classifier*: stale_memory_use (a later update), false_memory_use (unsupported
  specifics or correction), over_inference (low support), granularity_mismatch (vague).
- *baseline feature raters*: importance and utility from specificity, content type from
  wording, relevance from support: what a rater of the memory text alone would say.

Figures it produces are OFFLINE TEXT-READER figures: they show what these reading rules
decide on real data, never how a real LLM would do.
"""

from __future__ import annotations

import hashlib
import json
import re

from ..simulation.standin import StandInModel
from . import prompts as P
from .feature_prompts import TASK_FEATURES, is_admission_prompt
from .reading import GENERIC, SUPPORT_FLOOR, Reading, content_words, parse_turns, read

__all__ = ["IRRELEVANT_PROBES", "TIE_SPECIFIC", "AdmissionReader", "AdmissionReading"]

_SECTION = re.compile(r"<<<([A-Z_]+)>>>\n(.*?)\n<<<END_\1>>>", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
IRRELEVANT_PROBES = (
    "How many grams are in a pound?",
    "What is a good way to get a coffee stain out of a cotton shirt?",
    "Can you explain how compound interest works?",
    "What is the difference between weather and climate?",
)
"""General-knowledge requests of the irrelevant probe (one per candidate, by hash)."""
LEAK_SHARE = 0.9
"""A probe repeating this share of the memory's topic words, at least :data:`LEAK_WORDS` of
them and every name it gives, leaks it."""
LEAK_WORDS = 3
"""... and at least this many of them (one topic word cannot restate a fact)."""
JUDGE_SPECIFIC = 2
"""Least specificity of a personal note the blind judge prefers to a plain answer."""
TIE_SPECIFIC = 3
"""Least specificity of a grounded memory the tie-break stores."""
_UPDATE = "Here is the latest update I have:"
_SHIFT = re.compile(r"\bfor ([A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?), not ([A-Z][\w'.-]*|me)\b")
_NOTE = re.compile(r"\(with your (.*?)\)\s*$|earlier note on: (.*?)\)\s*$", re.DOTALL)
PARTICULARS = 4
"""Most of the memory's particulars a treatment answer applies."""


def _sections(prompt: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _SECTION.finditer(prompt)}


def _bucket(text: str, n: int) -> int:
    return hashlib.sha256(text.encode()).digest()[0] % n


def _topic(candidate: str, subject: str, n: int = 3) -> str:
    """The memory's first ``n`` specific words (surface form), its topic."""
    out: list[str] = []
    seen: set[str] = set()
    for w in _WORD.findall(candidate):
        low = w.lower().removesuffix("'s")
        forms = content_words(w)
        if not forms or forms & GENERIC or low == subject.lower() or low in seen:
            continue
        seen.add(low)
        out.append(w.removesuffix("'s"))
        if len(out) == n:
            break
    return " ".join(out) or "this"


def _topic_words(candidate: str) -> set[str]:
    return {w for w in content_words(candidate) if w not in GENERIC}


def _names(text: str) -> set[str]:
    """Capitalised words after the first (names, places, titles): a fact's particulars."""
    return {w.lower() for w in _WORD.findall(text)[1:] if w[0].isupper()}


def _particulars(memory: str, query: str) -> str:
    """What an answer applying ``memory`` to ``query`` brings in (never its sentence).

    The memory's specific words the query does not already have, at most
    :data:`PARTICULARS` of them.
    """
    asked = content_words(query)
    out: list[str] = []
    seen: set[frozenset[str]] = set()
    for w in _WORD.findall(memory)[1:]:  # the first word is the memory's subject
        forms = content_words(w)
        if not forms or forms & GENERIC or forms & asked or forms in seen:
            continue
        seen.add(forms)
        out.append(w.removesuffix("'s").removesuffix("’s"))
        if len(out) == PARTICULARS:
            break
    return ", ".join(out) or "details"


def _shared_words(candidate: str, query: str) -> int:
    """How many of the memory's distinct lower-case topic words (names aside) the query has."""
    present = content_words(query)
    groups = {
        frozenset(content_words(w))
        for w in _WORD.findall(candidate)
        if not w[0].isupper() and content_words(w) and not content_words(w) & GENERIC
    }
    return sum(1 for g in groups if g & present)


def _shares_topic(candidate: str, query: str) -> float:
    mine = _topic_words(candidate)
    if not mine:
        return 0.0
    return len(mine & content_words(query)) / len(mine)


def _problem(r: Reading) -> str:
    if r.superseded_by:
        return "a later turn of the context updates it"
    if r.unsupported_correction:
        return "it denies what the context states and asserts what it never says"
    if r.unsupported:
        return f"the context never mentions {', '.join(r.unsupported[:3])}"
    return f"only {r.support:.0%} of its content is in the context"


class AdmissionReading:
    """The admission text-reading script of the stand-in model (module docstring).

    Deterministic; it reads every admission role's prompt from its text alone.
    """

    @staticmethod
    def handles(prompt: str) -> bool:
        """Whether ``prompt``'s first line is one of the admission task lines.

        Args:
            prompt: The prompt.

        Returns:
            True for a ConMem or baseline-feature prompt.
        """
        return is_admission_prompt(prompt)

    def reply(self, prompt: str) -> str:
        """Answer ``prompt`` from its text alone.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.

        Raises:
            ValueError: The prompt is none of the admission prompts.
        """
        return self._answer(prompt)

    # -- dispatch ------------------------------------------------------------------
    def _answer(self, prompt: str) -> str:
        task = prompt.split("\n", 1)[0]
        s = _sections(prompt)
        if task == P.TASK_GENERATE:
            return json.dumps(self._probes(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"]))
        if task == P.TASK_VALIDATE:
            return json.dumps(self._validate(s))
        if task == P.TASK_REPAIR:
            role = re.search(r"Role to repair: (\w+)", prompt)
            probes = self._probes(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"], repair=True)
            return json.dumps({"query": probes[role.group(1) if role else "risk"]})
        if task == P.TASK_RESPOND:
            return self._respond(s["CURRENT_QUERY"], s.get("USER_INFORMATION"))
        if task == P.TASK_JUDGE:
            return json.dumps(self._judge(s))
        if task == P.TASK_AUDIT:
            return json.dumps(self._audit(s))
        if task == P.TASK_TIE_BREAK:
            return json.dumps(self._tie_break(s))
        if task == P.TASK_REASON:
            return json.dumps(self._reason(s))
        if task.startswith(TASK_FEATURES):
            return json.dumps(self._features(task, s))
        raise ValueError(f"admission reader: unknown task line {task!r}")

    # -- probes --------------------------------------------------------------------
    def _probes(self, candidate: str, context: str, *, repair: bool = False) -> dict[str, str]:
        r = read(candidate, context)
        subject = r.subject
        topic = _topic(candidate, subject, n=max(1, min(2, r.specificity // 2)))
        whom = "me" if subject == "the user" else subject
        relevant = f"Can you suggest something about {topic} for {whom}?"
        start = _bucket(candidate, len(IRRELEVANT_PROBES))
        pool = IRRELEVANT_PROBES[start:] + IRRELEVANT_PROBES[:start]
        irrelevant = next((q for q in pool if _shares_topic(candidate, q) == 0), pool[0])
        if r.superseded_by and not repair:
            risk = f"{_UPDATE} {r.superseded_by} What should I keep in mind now?"
        else:
            others = [
                t.speaker
                for t in parse_turns(context)
                if t.speaker and t.speaker not in {subject, "user", "assistant"}
            ]
            other = others[0] if others else "Sam"
            risk = f"This one is for {other}, not {whom}: can you suggest something about {topic}?"
        return {"relevant": relevant, "irrelevant": irrelevant, "risk": risk}

    @staticmethod
    def _validate(s: dict[str, str]) -> dict[str, dict[str, object]]:
        probes = json.loads(s["CURRENT_PROBES"])
        memory = s["CANDIDATE_MEMORY"]
        out: dict[str, dict[str, object]] = {}
        for role, query in probes.items():
            issue = ""
            shared = _shares_topic(memory, query)
            if (
                shared >= LEAK_SHARE
                and _shared_words(memory, query) >= LEAK_WORDS
                and _names(memory) <= _names(query)
            ):
                issue = "the probe repeats the candidate memory"
            elif role == "irrelevant" and shared > 0:
                issue = "the irrelevant probe touches the memory's topic"
            elif role == "risk" and not (_SHIFT.search(query) or query.startswith(_UPDATE)):
                issue = "no observable shift (another person or an update)"
            out[role] = {"valid": not issue, "issue": issue}
        return out

    # -- responses -----------------------------------------------------------------
    @staticmethod
    def _respond(query: str, memory: str | None) -> str:
        general = f"General answer: here is widely applicable advice for: {query}"
        if memory is None:
            return general
        if _SHIFT.search(query):
            return general  # a different person: the memory does not carry over
        shared = _shares_topic(memory, query)
        if query.startswith(_UPDATE):
            if shared >= 0.8:
                return general  # the update already states the memory
            if shared > 0:
                note = _particulars(memory, query)
                return f"{general} (going by your update; earlier note on: {note})"
            return general
        if shared > 0:  # applies the memory's particulars, never quotes the memory
            return f"Tailored answer to: {query} (with your {_particulars(memory, query)})"
        return general

    @staticmethod
    def _note(response: str) -> str | None:
        m = _NOTE.search(response)
        return (m.group(1) or m.group(2)) if m else None

    def _judge(self, s: dict[str, str]) -> dict[str, str]:
        a, b = s["RESPONSE_A"], s["RESPONSE_B"]
        notes = {"A": self._note(a), "B": self._note(b)}
        if a == b or notes["A"] == notes["B"]:
            return {"preference": "TIE", "explanation": "the answers say the same"}
        personal = "A" if notes["A"] else "B"
        plain = "B" if personal == "A" else "A"
        # the personal answer as a whole: the request it answers and the details it adds
        r = read(f"{s.get('CURRENT_QUERY', '')} {notes[personal] or ''}", s["HISTORICAL_CONTEXT"])
        if r.superseded_by:
            return {
                "preference": plain,
                "explanation": f"the personal details in {personal} are out of date: {_problem(r)}",
            }
        if r.support < SUPPORT_FLOOR or r.unsupported:
            return {
                "preference": "TIE",
                "explanation": "the personal details cannot be checked against the history",
            }
        if r.specificity < JUDGE_SPECIFIC:
            return {"preference": "TIE", "explanation": "the personal note adds nothing concrete"}
        return {
            "preference": personal,
            "explanation": f"{personal} uses a detail the history supports",
        }

    def _audit(self, s: dict[str, str]) -> dict[str, object]:
        control, treatment = s["CONTROL_RESPONSE"], s["TREATMENT_RESPONSE"]
        memory, context, query = s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"], s["CURRENT_QUERY"]
        if control == treatment:
            return {
                "memory_used": False,
                "materially_changed": False,
                "label": "neutral",
                "explanation": "the treatment response does not use the memory",
            }
        r = read(memory, context)
        label, why = "utility", "relevant, supported by the history and in scope"
        if not r.grounded:
            label, why = "risk", f"conflicting or unsupported use: {_problem(r)}"
        elif _shares_topic(memory, query) == 0:
            label, why = "unnecessary", "the request does not concern the memory"
        elif not r.specific:
            label, why = "neutral", "the memory adds nothing concrete to the answer"
        return {
            "memory_used": True,
            "materially_changed": label != "neutral",
            "label": label,
            "explanation": why,
        }

    @staticmethod
    def _tie_break(s: dict[str, str]) -> dict[str, str]:
        unconfirmed = _unconfirmed_utility(s.get("COUNTERFACTUAL_EVIDENCE", ""))
        if unconfirmed:
            return {
                "decision": "DO_NOT_STORE",
                "explanation": f"the blind judge found no better answer on the {unconfirmed} "
                "probe, where the auditor saw utility",
            }
        r = read(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"])
        if r.grounded and r.specificity >= TIE_SPECIFIC:
            return {"decision": "STORE", "explanation": "supported, attributed and reusable"}
        why = _problem(r) if not r.grounded else "too vague to reuse"
        return {"decision": "DO_NOT_STORE", "explanation": why}

    @staticmethod
    def _reason(s: dict[str, str]) -> dict[str, object]:
        r = read(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"])
        if r.superseded_by:
            reason, conf = "stale_memory_use", 0.8
        elif r.unsupported_correction or r.unsupported:
            reason, conf = "false_memory_use", 0.7
        elif not r.grounded:
            reason, conf = "over_inference", 0.5
        else:
            reason, conf = "granularity_mismatch", 0.4
        return {"reason_type": reason, "confidence": conf, "explanation": _problem(r)}

    # -- baseline features ------------------------------------------------------------
    @staticmethod
    def _features(task: str, s: dict[str, str]) -> dict[str, object]:
        memory = s["CANDIDATE_MEMORY"]
        r = read(memory, s["HISTORICAL_CONTEXT"])
        importance = max(1, min(10, 1 + r.specificity))
        if "(a-mac)" in task:
            return {"utility": min(1.0, r.specificity / 8), "content_type": _content_type(memory)}
        if "(a-mem)" in task:
            return {"importance": importance}
        return {"importance": importance, "relevance": round(min(1.0, r.support), 3)}


_TYPES = (
    ("transient", r"\b(today|tonight|tomorrow|this (morning|afternoon|evening))\b"),
    ("preference", r"\b(likes?|loves?|prefers?|favou?rite|enjoys?|fan of)\b"),
    ("goal", r"\b(plans?|planning|wants? to|hopes? to|goal|aims? to|going to|dreams? of)\b"),
    ("opinion", r"\b(thinks?|believes?|feels?|finds?|considers?)\b"),
    (
        "relationship",
        r"\b(wife|husband|partner|son|daughter|kids?|children|mother|father|mom|dad|friend)s?\b",
    ),
    ("event", r"\b(went|attended|visited|ran|took|had|joined|started|finished|last)\b"),
)


_EVIDENCE_ROLE = re.compile(r"^\[(\w+) probe\]", re.MULTILINE)


def _unconfirmed_utility(evidence: str) -> str | None:
    """The role of the first probe with an audited utility the blind judge did not confirm.

    The tie-break reads the raw evidence, as the paper's does: a probe whose audit says
    utility and whose blind verdict did not prefer the answer with the memory.
    """
    for block in evidence.split("\n\n"):
        role = _EVIDENCE_ROLE.search(block)
        if (
            role
            and "label=utility" in block
            and "quality judge preferred: the response WITH memory access" not in block
        ):
            return role.group(1)
    return None


def _content_type(memory: str) -> str:
    low = memory.lower()
    for kind, pattern in _TYPES:
        if re.search(pattern, low):
            return kind
    return "stable_fact"


class AdmissionReader(StandInModel):
    """OFFLINE TEXT-READING stand-in for every admission role (module docstring).

    The stand-in model with only the :class:`AdmissionReading` script. Deterministic; counts
    the prompts it answered in ``calls``.
    """

    def __init__(self) -> None:
        super().__init__(script=AdmissionReading())
