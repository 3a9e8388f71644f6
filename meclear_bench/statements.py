"""Turning a LoCoMo question and an answer into a declarative memory record.

Injected faults must read like ordinary memory records ("Caroline went to the support group
on 7 June 2023."), not like question/answer pairs. A small rule set covers the common
question shapes (wh-word, auxiliary, named subject, verb); the verb is inflected with
``lemminflect`` (``did go`` -> ``went``). Questions outside the rules fall back to
``The answer to "<question>" is <answer>.``, which is still unambiguous for a reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["AUX_VERBS", "Statement", "lower_first", "parse_question", "statement"]

AUX_VERBS = frozenset(
    {"did", "does", "do", "was", "is", "are", "were", "has", "have", "had"}
    | {"would", "will", "can", "could", "should"}
)
"""Auxiliaries that open a yes/no or wh- question and move when it becomes a statement."""
_DO = {"did", "does", "do"}
_MODAL = {"would", "will", "can", "could", "should"}
_LINKS = {"and", "&"}
_POSSESSIVE_PRONOUNS = {"her", "his", "their", "my", "our"}
_PREPOSITIONS = ("in ", "at ", "on ", "to ", "from ", "near ", "inside ", "under ", "by ")
_LOWER_STARTERS = {
    "The",
    "A",
    "An",
    "On",
    "In",
    "At",
    "It",
    "This",
    "That",
    "Last",
    "Next",
    "Around",
    "About",
    "Between",
    "During",
    "Before",
    "After",
    "Since",
    "Every",
    "Once",
    "Twice",
    "By",
    "Because",
    "To",
    "Yes",
    "No",
    "Likely",
    "Probably",
}
_DAY = re.compile(
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+[A-Z][a-z]+\.?,?\s+\d{4}\b|\b[A-Z][a-z]+\.?\s+\d{1,2}(?:st|nd|rd|th)?\b"
)
_MONTH_OR_YEAR = re.compile(r"^(?:[A-Z][a-z]+\.?,?\s+)?\d{4}$")


def lower_first(text: str) -> str:
    """Lower-case the first word when it is a common word (never a name).

    Args:
        text: The text.

    Returns:
        The text.
    """
    first = text.split(" ", 1)[0]
    return text[0].lower() + text[1:] if first in _LOWER_STARTERS else text


@dataclass(frozen=True)
class Statement:
    """A question split into its wh-phrase, auxiliary, subject and predicate."""

    wh: str
    """The wh-phrase ("When", "What kind of art"); empty for yes/no questions."""
    aux: str
    """The auxiliary after the wh-phrase ("did", "is", "would")."""
    subject: str
    """The named subject ("Caroline", "Melanie and her family"); empty when the wh-phrase
    is the subject ("What area was hit by a flood")."""
    predicate: str
    """The predicate in declarative form ("went to the support group")."""
    noun_phrase: bool = False
    """A copula question about a possessive noun phrase ("What is Jon's favorite dance")."""

    @property
    def clause(self) -> str:
        """The subject and predicate as one clause."""
        return f"{self.subject} {self.predicate}".strip()


def _subject_length(tokens: list[str]) -> int:
    """How many leading tokens form a named subject (0 when it is not a named one)."""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok[:1].isupper():
            i += 1
            if tok.endswith(("'s", "’s")) and i < len(tokens) and not tokens[i][:1].isupper():
                i += 1  # "Caroline's mom"
            continue
        if i and tok in _LINKS and i + 1 < len(tokens):
            nxt = tokens[i + 1]
            if nxt[:1].isupper():
                i += 1
                continue
            if nxt in _POSSESSIVE_PRONOUNS and i + 2 < len(tokens):
                i += 3  # "and her family"
                continue
        break
    return i


def _lemminflect():
    try:
        import lemminflect
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "fault texts need lemminflect: pip install 'meclear-integrations[bench]'"
        ) from exc
    return lemminflect


def _is_verb(word: str) -> bool:
    return bool(_lemminflect().getAllInflections(word.lower(), upos="VERB"))


def _inflect(verb: str, aux: str, plural: bool) -> str | None:
    if not _is_verb(verb):
        return None
    if aux == "do" or (aux == "does" and plural):
        return verb
    tag = "VBD" if aux == "did" else "VBZ"
    forms = _lemminflect().getInflection(verb.lower(), tag=tag)
    return forms[0] if forms else None


def _inflect_predicate(tail: list[str], aux: str, plural: bool) -> str | None:
    """Inflect the verb after a do-auxiliary, skipping one adverb ("recently watch")."""
    start = 1 if len(tail) > 1 and tail[0].endswith("ly") and not _is_verb(tail[0]) else 0
    verb = _inflect(tail[start], aux, plural)
    if verb is None:
        return None
    words = [*tail[:start], verb, *tail[start + 1 :]]
    at = start + 2  # "watch and enjoy" -> "watched and enjoyed"
    if at < len(words) and words[at - 1] == "and" and (second := _inflect(words[at], aux, plural)):
        words[at] = second
    return " ".join(words)


def parse_question(question: str) -> Statement | None:
    """Split a question with a named subject; ``None`` when no rule applies.

    Args:
        question: The question.

    Returns:
        Its subject and predicate, or None.
    """
    text = re.sub(r"^According to [^,]+,\s*", "", question.strip()).rstrip("?").strip()
    tokens = text.split()
    if not tokens:
        return None
    aux_at = next((i for i, t in enumerate(tokens) if t.lower() in AUX_VERBS), None)
    if aux_at is None or aux_at > 5:
        return _wh_subject(tokens)
    wh, aux, rest = " ".join(tokens[:aux_at]), tokens[aux_at].lower(), tokens[aux_at + 1 :]
    if not rest:
        return None
    copula = aux in {"is", "are", "was", "were"}
    if copula and wh and rest[0].endswith(("'s", "s'", "’s")):
        return Statement(wh=wh, aux=aux, subject=" ".join(rest), predicate="", noun_phrase=True)
    n = _subject_length(rest)
    if n == 0:
        if copula and wh and wh.split()[0].lower() in {"what", "which", "who"}:
            return Statement(wh=wh, aux=aux, subject="", predicate=" ".join([aux, *rest]))
        return None
    if n >= len(rest) and aux in _DO:
        return None
    subject, tail = " ".join(rest[:n]), rest[n:]
    if aux in _DO:
        predicate = _inflect_predicate(tail, aux, any(t in _LINKS for t in rest[:n]))
        if predicate is None:
            return None
    else:
        predicate = " ".join([aux, *tail])
    return Statement(wh=wh, aux=aux, subject=subject, predicate=predicate)


def _wh_subject(tokens: list[str]) -> Statement | None:
    """Split a wh-subject question into its wh-phrase and predicate.

    Example:
        "Which song motivates Caroline" -> wh-phrase "Which song", predicate "motivates ...".
    """
    if tokens[0].lower() not in {"what", "which", "who"}:
        return None
    for at in range(1, min(4, len(tokens))):
        word = tokens[at]
        if word.endswith(("s", "ed")) and _is_verb(word) and not word[:1].isupper():
            return Statement(
                wh=" ".join(tokens[:at]), aux="", subject="", predicate=" ".join(tokens[at:])
            )
    return None


def _when(clause: str, answer: str) -> str:
    if _MONTH_OR_YEAR.match(answer):
        return f"{clause} in {answer}"
    if _DAY.match(answer):
        return f"{clause} on {answer}"
    return f"{clause} {lower_first(answer)}"


def statement(question: str, answer: str) -> str:
    """A memory record asserting ``answer`` as the answer to ``question``.

    Args:
        question: The question.
        answer: The answer asserted.

    Returns:
        The record's text.
    """
    parsed = parse_question(question)
    answer = answer.strip().rstrip(".")
    if parsed is None:
        return f'The answer to "{question.strip()}" is {answer}.'
    wh = parsed.wh.lower()
    clause = parsed.clause
    if parsed.noun_phrase:
        return f"{parsed.subject} {parsed.aux} {answer}."
    if not parsed.subject and parsed.aux:  # "What area was hit by a flood"
        return f"{answer[0].upper()}{answer[1:]} {parsed.predicate}."
    if not parsed.aux:  # "Which song motivates Caroline"
        head = re.sub(r"^(what|which|who)\b", "the one", wh) if " " not in wh else wh
        head = re.sub(r"^(what|which)\s+", "the ", head)
        return f"{answer[0].upper()}{answer[1:]} is {head} that {parsed.predicate}."
    if not wh:  # yes/no question
        return f"On whether {clause}: {lower_first(answer)}."
    if wh == "when":
        return f"{_when(clause, answer)}."
    if wh == "why":
        joined = lower_first(answer)
        if not joined.startswith(("because", "to ", "so ", "since", "as ")):
            joined = f"because {joined}"
        return f"{clause} {joined}."
    if wh == "where" and answer.lower().startswith(_PREPOSITIONS):
        return f"{clause} {lower_first(answer)}."
    head = re.sub(r"^(what|which)\s+(?!of\b)", r"the ", wh) if " " in wh else wh
    copula = "are" if re.search(r", [A-Za-z]| and ", answer) else "is"
    return f"{answer[0].upper()}{answer[1:]} {copula} {head} {clause}."
