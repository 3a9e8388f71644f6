"""One stopword list (``core.stopwords``): its named subsets, and no other list anywhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import meclear_integrations
from meclear_bench.retrieval import tokenize
from meclear_integrations.admission.features import tokens
from meclear_integrations.admission.reading import content_words
from meclear_integrations.core import stopwords as sw
from meclear_integrations.ledger.scope import content_tokens

ROOT = Path(meclear_integrations.__file__).parent.parent
WORD = re.compile(r"[a-z'’]+")
SUBSETS = [name for name in sw.__all__ if name != "STOPWORDS"]


@pytest.mark.parametrize("name", SUBSETS)
def test_every_named_subset_is_part_of_the_one_list(name: str) -> None:
    subset = getattr(sw, name)
    assert subset and subset <= sw.STOPWORDS


def test_the_one_list_is_the_union_of_its_subsets() -> None:
    assert frozenset().union(*(getattr(sw, n) for n in SUBSETS)) == sw.STOPWORDS


def test_each_reader_skips_its_own_subset() -> None:
    # question scope skips how requests are phrased; BM25 keeps them but skips "because"
    assert content_tokens("please remind me where John lives") == content_tokens("John lives")
    assert "remind" in tokenize("please remind me where John lives")
    assert "because" not in tokenize("because John moved")
    assert content_tokens("because John moved") == {"because", "john", "moved"}
    # the admission features skip how a conversation names its speaker, nothing vague
    assert tokens("the user dog went home") == ["dog", "went", "home"]
    # the admission reader skips words that place nothing
    assert content_words("John went home yesterday") >= {"john", "home"}
    assert not content_words("went yesterday")


def _word_lists(path: Path) -> list[str]:
    """Module-level names bound to a list of distinct lowercase words, mostly stopwords."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        words = [
            word
            for leaf in ast.walk(node.value)
            if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str)
            for word in leaf.value.split()
        ]
        listed = len(set(words)) == len(words) and all(WORD.fullmatch(w) for w in words)
        if listed and len(words) >= 20 and len(set(words) & sw.STOPWORDS) >= len(words) / 2:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.append(f"{path.relative_to(ROOT)}: {ast.unparse(target)}")
    return found


def test_no_other_module_keeps_a_stopword_list() -> None:
    sources = sorted((ROOT / "meclear_integrations").rglob("*.py")) + sorted(
        (ROOT / "meclear_bench").rglob("*.py")
    )
    lists = [hit for path in sources for hit in _word_lists(path)]
    home = "meclear_integrations/core/stopwords.py"
    assert any(hit.startswith(home) for hit in lists)  # the check sees word lists
    assert [hit for hit in lists if not hit.startswith(home)] == []
