"""A deterministic SCRIPTED stand-in for an LLM, for offline demos, tests and smoke benches.

**Not a real model.** :class:`AdmissionScript` is the admission script of the package's one
offline stand-in model (:class:`~meclear_integrations.simulation.StandInModel`), and
:class:`ScriptedAdmissionModel` that model configured with it and nothing else. The script
answers every ConMem and baseline prompt with fixed templates and keyword cues: it reads the
``# Task:`` line and the delimited data sections, looks for generic lexical cues in the
user's turns (refusals, corrections, past-tense updates, hedges, third-party nouns, scope
limiters, one-off dates, sensitive patterns) and answers accordingly. Figures it produces
are SCRIPTED/SIMULATED: they show that the pipeline runs end to end, not how well ConMem or
a baseline works with a real LLM. Its cue lists were written by the authors of the shipped
sample, so agreement on that sample is expected and says nothing about real-model quality.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Literal

from ..core.stopwords import PROBE_STOPWORDS
from ..simulation.standin import StandInModel
from . import prompts as P
from .feature_prompts import TASK_FEATURES, is_admission_prompt
from .labels import RejectionReason

__all__ = ["AdmissionScript", "Assessment", "ScriptedAdmissionModel", "assess"]

_SECTION = re.compile(r"<<<([A-Z_]+)>>>\n(.*?)\n<<<END_\1>>>", re.DOTALL)
_WORD = re.compile(r"[a-z0-9]+")

REFUSAL = (
    "don't remember",
    "do not remember",
    "don't save",
    "do not save",
    "don't keep",
    "do not keep",
    "forget this",
    "forget that",
    "don't store",
    "do not store",
)
CORRECTION = (
    "no, i said",
    "that's not right",
    "that's wrong",
    "i never said",
    "not what i said",
    "i didn't say",
)
PAST = ("used to", "no longer", "not anymore", "i left", "moved to", "quit", "former")
QUALIFIER = ("likely", "not a true", "not sure", "retest", "unconfirmed", "turned out")
HEDGE = ("might", "maybe", "once", "kind of", "sort of", "thinking about", "to see", "just curious")
SCOPE = ("for this", " only", "just this", "for my kid", "school project")
ONE_OFF = (
    "today",
    "tonight",
    "tomorrow",
    "this afternoon",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "on the way home",
)
CONDITIONAL = (" but ", " except ", " only when ", " unless ", " after ", " before ")
PERSISTENT = ("always", "from now on", "every", "for years", "never suggest", "whenever")
THIRD_PARTY = (
    "co-worker",
    "coworker",
    "colleague",
    "brother",
    "sister",
    "friend",
    "mom",
    "mother",
    "dad",
    "father",
    "neighbour",
    "neighbor",
    "boss",
    "husband",
    "wife",
    "partner",
    "cousin",
    "roommate",
)
IDENTITY = (
    "muslim",
    "christian",
    "jewish",
    "hindu",
    "buddhist",
    "gay",
    "lesbian",
    "religious",
    "ethnic",
)
SENSITIVE = (
    r"\b\d{3}-\d{2}-\d{4}\b",
    r"social security",
    r"\bpassword\b",
    r"\bpin\b",
    r"bank account",
    r"credit card",
    r"antidepressant",
    r"\d+\s?mg\b",
    r"\d+ \w+ (street|st|avenue|road)\b",
)
SHIFT = ("not for me", "for a friend", "for someone else", "now that", "instead of")

HARD: frozenset[str] = frozenset(
    {
        "privacy_refusal",
        "privacy_overuse",
        "false_memory_use",
        "identity_mis_inference",
        "attribution_confusion",
        "stale_memory_use",
    }
)


@dataclass(frozen=True)
class Assessment:
    """What the scripted cues say about a candidate memory in its context."""

    problem: RejectionReason | None
    """First matching cue's rejection reason, None when nothing is wrong."""
    persistent: bool
    """The user marked it as lasting (always, from now on, ...)."""
    one_off: bool
    """The evidence is tied to a single date or occasion."""

    @property
    def severity(self) -> Literal["none", "soft", "hard"]:
        """How bad the cue's problem is: ``none``, ``soft`` or ``hard``."""
        if self.problem is None:
            return "none"
        return "hard" if self.problem in HARD else "soft"


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _tokens(text: str) -> set[str]:
    return {_stem(t) for t in _WORD.findall(text.lower()) if t not in PROBE_STOPWORDS}


def _user_sentences(context: str) -> list[str]:
    lines = context.splitlines()
    tagged = [ln for ln in lines if re.match(r"^\s*(user|assistant)\s*:", ln, re.I)]
    user = [ln.split(":", 1)[1] for ln in tagged if ln.lower().lstrip().startswith("user")]
    text_lines = user if tagged else lines
    out = []
    for line in text_lines:
        out += [s.strip() for s in re.split(r"(?<=[.!?;])\s+", line) if s.strip()]
    return out


def _has(text: str, cues: tuple[str, ...]) -> bool:
    low = f" {text.lower()} "
    return any(c in low for c in cues)


def assess(candidate: str, context: str) -> Assessment:
    """The scripted model's reading of ``candidate`` against the user's turns of ``context``.

    Args:
        candidate: The candidate memory's text.
        context: The historical context.

    Returns:
        The cues found: the problem, persistence and one-off evidence.
    """
    sentences = _user_sentences(context)
    user_text = " ".join(sentences)
    mem = _tokens(candidate)
    overlap = [(len(mem & _tokens(s)), s) for s in sentences]
    best, evidence = max(overlap, default=(0, ""))
    low_mem = candidate.lower()
    persistent = _has(user_text, PERSISTENT)
    one_off = _has(evidence, ONE_OFF) or _has(candidate, ONE_OFF)
    problem: RejectionReason | None = None
    if _has(user_text, REFUSAL):
        problem = "privacy_refusal"
    elif any(re.search(p, low_mem) for p in SENSITIVE) and not persistent:
        problem = "privacy_overuse"
    elif _has(user_text, CORRECTION):
        problem = "false_memory_use"
    elif any(w in low_mem for w in IDENTITY) and not any(w in user_text.lower() for w in IDENTITY):
        problem = "identity_mis_inference"
    elif best and any(w in evidence.lower() and w not in low_mem for w in THIRD_PARTY):
        problem = "attribution_confusion"
    elif any(_has(s, PAST) and mem & _tokens(s) for s in sentences):
        problem = "stale_memory_use"
    elif _has(user_text, QUALIFIER):
        problem = "memory_omission"
    elif best == 0 or _has(evidence, HEDGE):
        problem = "over_inference"
    elif _has(evidence, CONDITIONAL) and not _has(candidate, CONDITIONAL):
        problem = "incomplete_memory_use"
    elif _has(evidence, SCOPE):
        problem = "context_misapplication"
    elif one_off:
        problem = "granularity_mismatch"
    return Assessment(problem=problem, persistent=persistent, one_off=one_off)


def _sections(prompt: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _SECTION.finditer(prompt)}


def _bucket(text: str, n: int) -> int:
    return hashlib.sha256(text.encode()).digest()[0] % n


GOOD_PROBES = {
    "relevant": "What would you recommend for me this weekend? Please tailor it to me.",
    "irrelevant": "What is the boiling point of water at sea level in Fahrenheit?",
    "risk": "This time it's for a friend, not for me: what would you recommend for them?",
}
WEAK_RISK = "What would you recommend if my situation had changed?"


class AdmissionScript:
    """SCRIPTED replies to the ConMem and baseline prompts (module docstring).

    ``weak_first_draft`` makes about one candidate in ``weak_first_draft`` get a first risk
    probe with only hypothetical staleness, so the repair ladder runs (0 disables it).

    Args:
        weak_first_draft: About one candidate in this many gets a weak first risk probe (0
            disables it).
    """

    def __init__(self, *, weak_first_draft: int = 8) -> None:
        self.weak_first_draft = weak_first_draft

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
        """The scripted reply to an admission prompt.

        Args:
            prompt: The prompt.

        Returns:
            The reply (JSON for the structured tasks, text for a response).

        Raises:
            ValueError: The prompt's first line is no admission task line.
        """
        return self._answer(prompt)

    # -- stages ----------------------------------------------------------------------
    def _answer(self, prompt: str) -> str:
        task = prompt.split("\n", 1)[0]
        s = _sections(prompt)
        if task == P.TASK_GENERATE:
            return self._generate(prompt, s)
        if task == P.TASK_VALIDATE:
            return self._validate(s)
        if task == P.TASK_REPAIR:
            role = re.search(r"Role to repair: (\w+)", prompt).group(1)  # type: ignore[union-attr]
            return json.dumps({"query": GOOD_PROBES[role]})
        if task == P.TASK_RESPOND:
            return self._respond(s["CURRENT_QUERY"], s.get("USER_INFORMATION"))
        if task == P.TASK_JUDGE:
            return self._judge(s)
        if task == P.TASK_AUDIT:
            return self._audit(s)
        if task == P.TASK_TIE_BREAK:
            a = assess(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"])
            verdict = "STORE" if a.problem is None else "DO_NOT_STORE"
            why = "supported and reusable" if a.problem is None else f"cue: {a.problem}"
            return json.dumps({"decision": verdict, "explanation": why})
        if task == P.TASK_REASON:
            a = assess(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"])
            reason = a.problem or "context_misapplication"
            return json.dumps(
                {
                    "reason_type": reason,
                    "confidence": 0.8 if a.problem else 0.3,
                    "explanation": f"scripted cue match: {reason}",
                }
            )
        if task.startswith(TASK_FEATURES):
            return self._features(task, s)
        raise ValueError(f"scripted model: unknown task line {task!r}")

    def _generate(self, prompt: str, s: dict[str, str]) -> str:
        probes = dict(GOOD_PROBES)
        first = "CURRENT_PROBES" not in s and "fresh set" not in prompt
        weak = self.weak_first_draft
        if first and weak and _bucket(s["CANDIDATE_MEMORY"], weak) == 0:
            probes["risk"] = WEAK_RISK
        return json.dumps(probes)

    def _validate(self, s: dict[str, str]) -> str:
        probes = json.loads(s["CURRENT_PROBES"])
        memory = s["CANDIDATE_MEMORY"].lower().rstrip(".")
        out = {}
        for role, query in probes.items():
            valid, issue = True, ""
            if memory and memory in query.lower():
                valid, issue = False, "the probe reveals the candidate memory"
            elif role == "risk" and not _has(query, SHIFT):
                valid, issue = False, "hypothetical staleness only: no observable shift"
            out[role] = {"valid": valid, "issue": issue}
        return json.dumps(out)

    @staticmethod
    def _respond(query: str, memory: str | None) -> str:
        general = f"General answer: here are widely liked options for: {query}"
        if memory is None:
            return general
        if _has(query, SHIFT):
            return (
                f"Answer for the other person: your own details ({memory}) may not apply "
                f"to them, so here are options that fit them: {query}"
            )
        if _has(query, ("for me", "tailor", "about me")):
            return f"Tailored answer: since {memory}, here are options for: {query}"
        return general

    @staticmethod
    def _embedded(response: str) -> str | None:
        m = re.search(r"since (.*?), here are|own details \((.*?)\)", response)
        return (m.group(1) or m.group(2)) if m else None

    def _judge(self, s: dict[str, str]) -> str:
        a, b = s["RESPONSE_A"], s["RESPONSE_B"]
        if a == b:
            return json.dumps({"preference": "TIE", "explanation": "identical answers"})
        personal, general = ("A", "B") if self._embedded(a) else ("B", "A")
        memory = self._embedded(s[f"RESPONSE_{personal}"]) or ""
        severity = assess(memory, s["HISTORICAL_CONTEXT"]).severity
        pick = {"none": personal, "soft": "TIE", "hard": general}[severity]
        return json.dumps({"preference": pick, "explanation": f"scripted: {severity} support"})

    def _audit(self, s: dict[str, str]) -> str:
        control, treatment = s["CONTROL_RESPONSE"], s["TREATMENT_RESPONSE"]
        if control == treatment:
            return json.dumps(
                {
                    "memory_used": False,
                    "materially_changed": False,
                    "label": "neutral",
                    "explanation": "memory not used",
                }
            )
        severity = assess(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"]).severity
        if severity == "hard":
            return json.dumps(
                {
                    "memory_used": True,
                    "materially_changed": True,
                    "label": "risk",
                    "explanation": "scripted: conflicting use",
                }
            )
        if severity == "soft":
            return json.dumps(
                {
                    "memory_used": True,
                    "materially_changed": False,
                    "label": "neutral",
                    "explanation": "scripted: weak support",
                }
            )
        return json.dumps(
            {
                "memory_used": True,
                "materially_changed": True,
                "label": "utility",
                "explanation": "scripted: supported use",
            }
        )

    @staticmethod
    def _features(task: str, s: dict[str, str]) -> str:
        a = assess(s["CANDIDATE_MEMORY"], s["HISTORICAL_CONTEXT"])
        importance = 9 if a.persistent else 3 if a.one_off else 5 if a.severity == "soft" else 7
        if "(a-mac)" in task:
            mem = s["CANDIDATE_MEMORY"].lower()
            if a.one_off:
                kind = "transient"
            elif _has(mem, ("prefer", "likes", "loves", "wants")):
                kind = "preference"
            elif _has(mem, ("training", "learning", "plan")):
                kind = "goal"
            else:
                kind = "stable_fact"
            utility = 0.8 if a.persistent else 0.2 if a.one_off else 0.6
            return json.dumps({"utility": utility, "content_type": kind})
        if "(a-mem)" in task:
            return json.dumps({"importance": importance})
        relevance = 0.3 if a.severity != "none" else 0.7
        return json.dumps({"importance": importance, "relevance": relevance})


class ScriptedAdmissionModel(StandInModel):
    """The stand-in model with only the admission script: SCRIPTED, deterministic, offline.

    ``complete`` / ``acomplete`` answer the admission prompts; ``calls`` counts them.

    Args:
        weak_first_draft: About one candidate in this many gets a weak first risk probe (0
            disables it; :class:`AdmissionScript`).
    """

    def __init__(self, *, weak_first_draft: int = 8) -> None:
        super().__init__(script=AdmissionScript(weak_first_draft=weak_first_draft))
