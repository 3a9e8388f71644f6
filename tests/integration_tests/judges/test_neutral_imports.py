"""Judges, payloads and prompts load with every framework blocked."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('langchain_core', 'langsmith', 'llama_index', 'openai'):
            raise ImportError('blocked ' + name)
sys.meta_path.insert(0, Block())
import meclear_integrations.judges
import meclear_integrations.runtime.payloads
import meclear_integrations.judges.answer_prompts
from meclear_integrations.judges import ReferenceLLMJudge
from meclear_integrations.judges.protocol import read_nonce, verdict_reply

import pytest

pytestmark = pytest.mark.slow  # each test starts an interpreter
judge = ReferenceLLMJudge(lambda p: verdict_reply(read_nonce(p), True))
assert judge.score('q', 'a', reference='a').score == 1
"""


def test_neutral_modules_import_no_framework() -> None:
    result = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
