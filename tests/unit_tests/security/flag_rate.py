"""How often the instruction-like classifier flags ordinary memories (a false-alarm rate).

Run: ``python -m tests.unit_tests.security.flag_rate /path/to/locomo10`` (LoCoMo's
conversation turns and extracted observations; real data, no model involved).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from meclear_integrations.core.instructions import instruction_cues


def main(folder: str) -> None:
    """Print the share of LoCoMo turns and observations flagged, and the flagged turns."""
    turns, observations = [], []
    for path in sorted(Path(folder).glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        for key, value in conversation.items():
            if key.startswith("session_") and key[8:].isdigit() and isinstance(value, list):
                turns += [t.get("text", "") for t in value]
            if key.endswith("_observation") and isinstance(value, dict):
                observations += [f[0] for facts in value.values() for f in facts]
    for name, texts in (("turns", turns), ("observations", observations)):
        flagged = [t for t in texts if instruction_cues(t)]
        print(f"{name}: {len(flagged)} of {len(texts)} flagged ({len(flagged) / len(texts):.2%})")
        for text in flagged:
            print(f"  {instruction_cues(text)} {text[:100]!r}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/locomo10")
