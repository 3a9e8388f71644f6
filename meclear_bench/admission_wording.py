"""Does the offline reader read meaning or our builder's wording (wrong corrections)?

``python -m meclear_bench.admission_wording --locomo DIR [--clark DIR] [--split test]``
counts, per candidate kind of the LoCoMo admission benchmark, how many candidates the
offline reader (``admission.reading.read``) finds not grounded in their context, the
reading every ConMem role of the stand-in builds on. Wrong corrections are counted in the
builder's wording ("Correction: A, not B.") and in two rewordings no reader rule was
written against: "A, rather than B." and "To be precise, A." (no negation at all), and every
builder-written kind also in the hand-written paraphrase set of
:mod:`.admission_locomo_paraphrase` (``paraphrased``). Real LoCoMo observations
(``useful`` / ``unused``) show the price: true memories flagged.

Figures are OFFLINE TEXT READER figures: a reading rule on real data, never an LLM's.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from meclear_integrations.admission.reading import read

from .admission_locomo import BenchCandidate, build_locomo_admission
from .admission_locomo_paraphrase import PARAPHRASED_KINDS, paraphrase

__all__ = ["REWORDINGS", "main", "wording_table"]

_BUILDER = re.compile(r"^Correction: (?P<a>.*), not (?P<b>.*)\.$")


def _rather(text: str) -> str:
    m = _BUILDER.match(text)
    return text if m is None else f"{m['a'][:1].upper()}{m['a'][1:]}, rather than {m['b']}."


def _precise(text: str) -> str:
    m = _BUILDER.match(text)
    return text if m is None else f"To be precise, {m['a']}."


REWORDINGS: dict[str, Callable[[str], str]] = {
    "builder": lambda text: text,
    "rather_than": _rather,
    "no_negation": _precise,
}
"""Wordings of a wrong correction: the builder's and two rewordings."""


def _flagged(candidates: Sequence[BenchCandidate], word: Callable[[str], str]) -> int:
    return sum(
        1 for c in candidates if not read(word(c.candidate_memory), c.historical_context).grounded
    )


def wording_table(candidates: Sequence[BenchCandidate], split: str) -> dict[str, object]:
    """Not-grounded counts per kind (and per wording for wrong corrections).

    Args:
        candidates: The benchmark's candidates.
        split: ``dev``, ``test`` or ``all``.

    Returns:
        ``{kind: {"n", "not_grounded"}}``, wrong corrections per wording.
    """
    picked = [c for c in candidates if split == "all" or c.split == split]
    out: dict[str, object] = {}
    for kind in sorted({c.kind for c in picked}):
        group = [c for c in picked if c.kind == kind]
        row: dict[str, object]
        if kind == "wrong_correction":
            row = {
                "n": len(group),
                "not_grounded": {w: _flagged(group, f) for w, f in REWORDINGS.items()},
            }
        else:
            row = {"n": len(group), "not_grounded": _flagged(group, REWORDINGS["builder"])}
        if kind in PARAPHRASED_KINDS:
            row["not_grounded_paraphrased"] = _flagged(paraphrase(group), REWORDINGS["builder"])
        out[kind] = row
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table as JSON.

    Args:
        argv: Command-line arguments.

    Returns:
        The exit code.
    """
    parser = argparse.ArgumentParser(
        prog="python -m meclear_bench.admission_wording", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--locomo", required=True, type=Path)
    parser.add_argument("--clark", type=Path, default=None)
    parser.add_argument("--split", choices=("dev", "test", "all"), default="test")
    args = parser.parse_args(argv)
    clark = args.clark or (args.locomo.parent / "clark_news")
    candidates = build_locomo_admission(args.locomo, clark=clark if clark.is_dir() else None)
    table = wording_table(candidates, args.split)
    print("OFFLINE TEXT READER (admission.reading), not an LLM")
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
