"""Scale games: one question over a large retrieved context with sparse harm (SIMULATED).

A game is a :class:`~.examples.SimulatedCase`: K memories written as ordinary records about
a handful of people, of which one states the answer (gold), a few contradict it (faults)
and the rest is background about the same people and the same kinds of facts, so that
word overlap alone does not separate them. The reader is the simulated evidence world
(:mod:`.world`), not a model.

Structures (``structure``):

- ``direct``: one fault that alone outweighs the gold memory;
- ``redundant``: ``copies`` faults stating the same wrong answer, each alone outweighing
  the gold memory (a stale fact repeated across sessions: nothing short of clearing every
  copy recovers the answer);
- ``joint``: two hedged faults, each weaker than the gold memory, that outweigh it
  together (clearing either recovers the answer).

Copies are written either as repeats of one sentence with small edits (``style="repeat"``)
or as paraphrases (``"paraphrase"``); ``"mixed"`` draws one per game.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from meclear_integrations.core.errors import ConfigurationError
from meclear_integrations.core.memory import Memory
from meclear_integrations.simulation.examples import SimulatedCase
from meclear_integrations.simulation.world import Claim, EvidenceWorld

__all__ = ["ScaleFamily", "scale_game", "scale_games"]

Structure = Literal["direct", "redundant", "joint"]
CopyStyle = Literal["repeat", "paraphrase", "mixed"]


def _words(text: str) -> list[str]:
    return text.split()


_PEOPLE = _words(
    "Alice Carter Ben Okafor Chloe Dubois Daniel Kim Emma Rossi Farid Haddad Grace Liu "
    "Hugo Silva Ines Moreau Jonas Berg Kara Singh Leo Novak Maya Cohen Nils Larsen "
    "Olivia Grant Pedro Alves Quinn Murphy Rosa Jimenez Sami Khan Tara Walsh"
)
PEOPLE = [f"{a} {b}" for a, b in zip(_PEOPLE[::2], _PEOPLE[1::2], strict=True)]

# topic -> (answers, gold/fault templates (paraphrases), question)
_TOPICS: dict[str, tuple[list[str], list[str], str]] = {
    "city": (
        _words("Lisbon Oslo Prague Toronto Nairobi Seoul Lima Dublin Krakow Porto Quito Hanoi"),
        [
            "{p} moved to {a} in the spring.",
            "{first} said the new flat in {a} is finally unpacked.",
            "Since the move, {first} has been living in {a}.",
        ],
        "Where does {p} live now?",
    ),
    "job": (
        [
            "nurse",
            "architect",
            "baker",
            "pilot",
            "teacher",
            "chemist",
            "translator",
            "carpenter",
            "journalist",
            "dentist",
        ],
        [
            "{p} works as a {a} these days.",
            "{first} started a new job as a {a} this year.",
            "At the reunion {first} told everyone about life as a {a}.",
        ],
        "What does {p} do for a living?",
    ),
    "pet": (
        _words("Biscuit Luna Pepper Milo Nala Ziggy Olive Rocky Mochi Bruno"),
        [
            "{p} adopted a dog called {a}.",
            "{first}'s dog {a} loves the beach.",
            "{first} posted a photo of the puppy, {a}, asleep on the sofa.",
        ],
        "What is the name of {p}'s dog?",
    ),
    "hobby": (
        [
            "pottery",
            "rock climbing",
            "salsa dancing",
            "chess",
            "sailing",
            "birdwatching",
            "archery",
            "the cello",
            "beekeeping",
            "fencing",
        ],
        [
            "{p} took up {a} last autumn.",
            "{first} spends most weekends on {a} now.",
            "{first} joined a club for {a} near the office.",
        ],
        "Which hobby did {p} take up?",
    ),
}

_REPEAT_EDITS = (
    "{s}",
    "Noted again: {s}",
    "{s} (mentioned in a later session)",
    "Reminder: {s}",
    "As said before, {s}",
    "{s} ({first} repeated this)",
)


@dataclass(frozen=True)
class ScaleFamily:
    """A kind of scale game: its harm structure and how many faults it has."""

    structure: Structure
    """``direct``, ``redundant`` or ``joint``."""
    copies: int = 1
    """The number of faulty copies of ``redundant xN``; 1 for ``direct`` (``joint`` has 2)."""

    @property
    def name(self) -> str:
        """The family's label (``redundant xN`` for N redundant copies)."""
        if self.structure == "redundant":
            return f"redundant x{self.copies}"
        return self.structure

    @property
    def faults(self) -> int:
        """The number of faulty memories a game of this family holds."""
        return 2 if self.structure == "joint" else self.copies


def _fill(template: str, person: str, answer: str) -> str:
    return template.format(p=person, first=person.split()[0], a=answer)


def _background(rng: np.random.Generator, n: int, avoid: set[str]) -> list[str]:
    """``n`` distinct background records about the same people and kinds of facts."""
    out: list[str] = []
    seen = set(avoid)
    topics = list(_TOPICS)
    while len(out) < n:
        topic = topics[int(rng.integers(len(topics)))]
        answers, templates, _ = _TOPICS[topic]
        person = PEOPLE[int(rng.integers(len(PEOPLE)))]
        text = _fill(
            templates[int(rng.integers(len(templates)))],
            person,
            answers[int(rng.integers(len(answers)))],
        )
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def scale_game(
    k: int,
    family: ScaleFamily,
    seed: int,
    *,
    style: CopyStyle = "mixed",
    temperature: float = 0.0,
) -> SimulatedCase:
    """One reproducible game of ``k`` memories (see module docstring).

    Args:
        k: The number of memories.
        family: The harm structure and its number of faults.
        seed: The game's seed.
        style: How the fault copies are worded.
        temperature: The reader's temperature (0: deterministic).

    Returns:
        The game, with its verified faults as targets.

    Raises:
        ConfigurationError: ``k`` cannot hold the gold memory and the faults.
    """
    if k < family.faults + 1:
        raise ConfigurationError(f"K={k} cannot hold the gold memory and {family.faults} faults")
    rng = np.random.default_rng([seed, k, family.faults, family.structure == "joint"])
    topic = list(_TOPICS)[int(rng.integers(len(_TOPICS)))]
    answers, templates, question = _TOPICS[topic]
    person = PEOPLE[int(rng.integers(len(PEOPLE)))]
    right, wrong = (answers[int(i)] for i in rng.choice(len(answers), size=2, replace=False))
    gold_template = int(rng.integers(len(templates)))
    gold = _fill(templates[gold_template], person, right)
    if style == "mixed":
        style = "repeat" if rng.random() < 0.5 else "paraphrase"
    fault_texts: list[str] = []
    base_template = int(rng.integers(len(templates)))
    for j in range(family.faults):
        if style == "repeat":
            sentence = _fill(templates[base_template], person, wrong)
            edit = _REPEAT_EDITS[j % len(_REPEAT_EDITS)]
            fault_texts.append(edit.format(s=sentence, first=person.split()[0]))
        else:
            template = templates[(base_template + j) % len(templates)]
            text = _fill(template, person, wrong)
            if j >= len(templates):
                text = _REPEAT_EDITS[1 + j // len(templates) % 5].format(
                    s=text, first=person.split()[0]
                )
            fault_texts.append(text)
    background = _background(rng, k - 1 - family.faults, {gold, *fault_texts})
    positions = rng.permutation(k)
    texts: list[str] = [""] * k
    ids: list[str] = [""] * k
    texts[positions[0]], ids[positions[0]] = gold, "gold"
    for j, text in enumerate(fault_texts):
        texts[positions[1 + j]], ids[positions[1 + j]] = text, f"fault{j + 1}"
    rest = iter(background)
    background_no = 0
    for i in range(k):
        if not ids[i]:
            background_no += 1
            texts[i], ids[i] = next(rest), f"bg{background_no}"
    low, high = (0.55, 0.9) if family.structure == "joint" else (1.2, 2.0)
    claims = {"gold": Claim(answer=right, weight=1.0)}
    for j in range(family.faults):
        claims[f"fault{j + 1}"] = Claim(answer=wrong, weight=float(rng.uniform(low, high)))
    memories = [Memory(id=mid, content=text) for mid, text in zip(ids, texts, strict=True)]
    return SimulatedCase(
        case_id=f"scale-{family.name.replace(' ', '')}-k{k}-s{seed}",
        query=question.format(p=person),
        reference=right,
        memories=memories,
        world=EvidenceWorld(claims=claims, temperature=temperature),
        targets=[f"fault{j + 1}" for j in range(family.faults)],
    )


def scale_games(
    k: int,
    family: ScaleFamily,
    n: int,
    *,
    seed: int = 0,
    style: CopyStyle = "mixed",
    temperature: float = 0.0,
) -> Iterator[SimulatedCase]:
    """``n`` games of one family at size ``k`` (seeds ``seed`` .. ``seed + n - 1``).

    Args:
        k: The number of memories.
        family: The harm structure and its number of faults.
        n: The number of games.
        seed: The first game's seed.
        style: How the fault copies are worded.
        temperature: The reader's temperature (0: deterministic).

    Yields:
        The games.
    """
    for s in range(seed, seed + n):
        yield scale_game(k, family, s, style=style, temperature=temperature)
