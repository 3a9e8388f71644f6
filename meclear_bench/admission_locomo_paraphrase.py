"""The builder-written admission candidates reworded by a set no reader rule was written for.

The false claims, wrong corrections and CLARK-News facts of :mod:`.admission_locomo` are
worded by our builder ("Correction: A, not B.", "X is the position Y holds."), and the
offline reader was written knowing that wording. :func:`paraphrase` rewords each of them
with one of the hand-written templates of ``data/admission_paraphrases.json`` (chosen by a
seeded hash of the candidate's id, so a run is reproducible and the choice carries no
label): statements get a framing ("From what I gathered, ...", "Apparently ..."), wrong
corrections state the new claim and name the earlier answer as a mistake without any
negation the reader reads. The context and the label stay the same. Figures on the
paraphrased set show whether a reader's lead survives wording it was not written for.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files

from meclear_integrations.core.stopwords import OPENING_WORDS

from .admission_locomo import BenchCandidate

__all__ = ["PARAPHRASED_KINDS", "PARAPHRASE_RESOURCE", "paraphrase", "templates"]

PARAPHRASE_RESOURCE = "data/admission_paraphrases.json"
PARAPHRASED_KINDS = frozenset({"false_claim", "wrong_correction", "clark_stale", "clark_current"})
"""The builder-written kinds (the LoCoMo observations and turns are the data's own text)."""
_CORRECTION = re.compile(r"^Correction: (?P<a>.*), not (?P<b>.*)\.$", re.DOTALL)


@cache
def templates() -> dict[str, tuple[str, ...]]:
    """The templates: ``statement`` and ``correction`` lists.

    Returns:
        The shipped templates.
    """
    raw = json.loads(files(__package__).joinpath(PARAPHRASE_RESOURCE).read_text("utf-8"))
    return {k: tuple(raw[k]) for k in ("statement", "correction")}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


_LOWERED = OPENING_WORDS | frozenset({"adoption", "member", "minister"})
"""Sentence-initial words lowered inside a template (openers and three nouns the builder
opens with); any other capitalised first word is kept (a name such as "Caroline",
an acronym such as "UK")."""


def _low(text: str) -> str:
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first.lower() not in _LOWERED:
        return text
    return text[:1].lower() + text[1:]


def _pick(candidate_id: str, n: int, seed: int) -> int:
    digest = hashlib.sha256(f"{seed}:{candidate_id}".encode()).hexdigest()
    return int(digest[:8], 16) % n


def paraphrase(candidates: Sequence[BenchCandidate], *, seed: int = 0) -> list[BenchCandidate]:
    """The builder-written candidates, each reworded by one template (module docstring).

    Args:
        candidates: Any candidates; only the builder-written kinds are kept and reworded.
        seed: The template-choice seed.

    Returns:
        The reworded candidates (id suffixed ``:para``), same context, label and kind.
    """
    t = templates()
    out: list[BenchCandidate] = []
    for c in candidates:
        if c.kind not in PARAPHRASED_KINDS:
            continue
        text = c.candidate_memory.strip()
        m = _CORRECTION.match(text) if c.kind == "wrong_correction" else None
        if m is not None:
            a, b = m["a"].strip(), m["b"].strip()
            form = t["correction"][_pick(c.id, len(t["correction"]), seed)]
            new = form.format(a=_low(a), A=_cap(a), b=b)
        else:
            s = text.rstrip(".").strip()
            form = t["statement"][_pick(c.id, len(t["statement"]), seed)]
            new = form.format(s=_low(s), S=_cap(s))
        out.append(
            c.model_copy(
                update={
                    "id": f"{c.id}:para",
                    "candidate_memory": new,
                    "evidence": [*c.evidence, f"paraphrase of {text!r}"],
                }
            )
        )
    return out
