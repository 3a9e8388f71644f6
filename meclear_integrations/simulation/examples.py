"""Built-in cases of the paper's harm structures on the simulated evidence world."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..core.memory import Memory
from .evaluator import SimulatedEvaluator
from .world import Claim, EvidenceWorld

__all__ = ["SimulatedCase", "heavy_redundancy_example", "redundant_harm_example"]


class SimulatedCase(BaseModel):
    """A query, its frozen context, the gold answer and the world that drives the reader."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    """The case's id."""
    query: str
    """The question."""
    reference: str
    """The gold answer."""
    memories: list[Memory]
    """The frozen context, in retrieval order."""
    world: EvidenceWorld
    """The evidence world that answers on this context."""
    targets: list[str]
    """Ids of the verified harmful memories."""

    def evaluator(self) -> SimulatedEvaluator:
        """The case's simulated evaluator (the exact-match judge).

        Returns:
            A :class:`SimulatedEvaluator` for the case's world and reference.
        """
        return SimulatedEvaluator(self.world, self.reference, case_id=self.case_id)

    @property
    def texts(self) -> dict[str, str]:
        """Memory id -> text."""
        return {m.id: m.content for m in self.memories}


def redundant_harm_example() -> SimulatedCase:
    """The paper's redundant-harm case (Table 1, case A): John in Italy.

    Returns:
        The case: its memories, simulated world, reference and the two verified faults.

    One gold memory says December 2023; two paraphrased faults say January 2023 and each
    alone outweighs the gold one (the failure floor), so deleting either fault alone
    changes nothing: leave-one-out sees no harm. Three background memories make no claim.

    Example:
        >>> case = redundant_harm_example()
        >>> [m.id for m in case.memories], case.targets
        (['g1', 'b1', 'f1', 'b2', 'f2', 'b3'], ['f1', 'f2'])
    """
    memories = [
        Memory(
            id="g1",
            content="John said he spent December 2023 travelling around Italy.",
            metadata={"session": 12, "kind": "gold"},
        ),
        Memory(
            id="b1",
            content="John enjoys trying local food whenever he travels abroad.",
            metadata={"session": 3},
        ),
        Memory(
            id="f1",
            content="John's trip to Italy took place in January 2023.",
            metadata={"session": 14, "kind": "fault"},
        ),
        Memory(
            id="b2",
            content="John keeps a photo journal of the cities he visits.",
            metadata={"session": 7},
        ),
        Memory(
            id="f2",
            content="John mentioned that he was in Italy in January 2023.",
            metadata={"session": 15, "kind": "fault"},
        ),
        Memory(
            id="b3",
            content="John's friend Maria recommended visiting Florence.",
            metadata={"session": 9},
        ),
    ]
    world = EvidenceWorld(
        claims={
            "g1": Claim(answer="December 2023", weight=1.0),
            "f1": Claim(answer="January 2023", weight=1.5),
            "f2": Claim(answer="January 2023", weight=1.5),
        },
        temperature=0.0,
        abstain="I don't know",
        aggregate="sum",
    )
    return SimulatedCase(
        case_id="john-italy",
        query="Which month was John in Italy?",
        reference="December 2023",
        memories=memories,
        world=world,
        targets=["f1", "f2"],
    )


def heavy_redundancy_example() -> SimulatedCase:
    """Four copies of one wrong claim, of unequal strength: John in Italy again.

    Returns:
        The case; its targets are the four copies.

    Two strong copies (each alone outweighs the gold memory) and two weak ones (together
    still below it): minimal clearance removes the strong two and keeps the weak ones,
    which alone still make the reader answer January 2023; they are the *carriers* of
    the harm (``core.stages.carriers``), withheld too under ``clearance_scope="complete"``.

    Example:
        >>> case = heavy_redundancy_example()
        >>> case.targets
        ['f1', 'f2', 'f3', 'f4']
    """
    texts = {
        "g1": "John said he spent December 2023 travelling around Italy.",
        "b1": "John enjoys trying local food whenever he travels abroad.",
        "f1": "John's trip to Italy took place in January 2023.",
        "f2": "John mentioned that he was in Italy in January 2023.",
        "b2": "John keeps a photo journal of the cities he visits.",
        "f3": "Maybe John was in Italy in January 2023, he was not sure.",
        "f4": "Someone thought John visited Italy in January 2023.",
    }
    weights = {"f1": 1.5, "f2": 1.5, "f3": 0.3, "f4": 0.2}
    claims = {"g1": Claim(answer="December 2023", weight=1.0)} | {
        f: Claim(answer="January 2023", weight=w) for f, w in weights.items()
    }
    return SimulatedCase(
        case_id="john-italy-heavy",
        query="Which month was John in Italy?",
        reference="December 2023",
        memories=[Memory(id=i, content=t) for i, t in texts.items()],
        world=EvidenceWorld(claims=claims, ties="prompt"),
        targets=list(weights),
    )
