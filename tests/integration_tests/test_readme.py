"""The README's commands and the docs pages' runnable examples stay true.

The guides moved from the README to the docs site (``docs/``): each example is read from the
page that now holds it and run as written.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CI = ROOT / ".ci" / "run"


def blocks(language: str, page: Path = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.S)


def test_readme_has_the_two_commands_and_ci_runs_the_test_one() -> None:
    bash = blocks("bash")
    assert 'pip install -e ".[dev]" && meclear demo' in bash[0]
    test_command = bash[1].strip()
    assert test_command == "python -m pytest"
    assert test_command in CI.read_text()


def test_engine_quickstart_runs(capsys) -> None:
    code = next(b for b in blocks("python", DOCS / "engine.md") if "MeClearEngine" in b)
    exec(compile(code, "docs/engine.md quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert "['f1', 'f2']" in out


def test_shared_limits_example_runs(capsys) -> None:
    code = next(
        b for b in blocks("python", DOCS / "production" / "limits.md") if "CallLimiter(" in b
    )
    exec(compile(code, "docs/production/limits.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["4", "0", "330"]


def test_progress_examples_run(capsys) -> None:
    page = DOCS / "production" / "progress.md"
    code = next(b for b in blocks("python", page) if "meclear.progress" in b)
    exec(compile(code, "docs/production/progress.md (LangChain)", "exec"), {})
    lines = capsys.readouterr().out.split("\n")[:-1]
    assert lines[0] == "screening batch 1: 0/2"
    assert "screening batch 2: 7/7" in lines and "screening batch 3: 40/40" in lines
    assert lines[-1] == "clearance batch 4: 3/3"

    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
    from meclear_integrations.simulation import redundant_harm_example

    code = next(b for b in blocks("python", page) if "ProgressPrinter" in b)
    root = get_dispatcher()
    before = list(root.event_handlers)
    exec(compile(code, "docs/production/progress.md (LlamaIndex)", "exec"), {})
    try:
        case = redundant_harm_example()
        nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
        postprocessor = MeClearPostprocessor(
            llm=SimulatedLLM.from_case(case), reference=case.reference
        )
        postprocessor.postprocess_nodes(nodes, query_str=case.query)
    finally:
        root.event_handlers[:] = before
    lines = capsys.readouterr().out.split("\n")[:-1]
    assert lines[0] == "screening 1 0/2" and lines[-1] == "clearance 4 3/3"


def test_streaming_example_prints_the_answer_only(capsys) -> None:
    code = next(b for b in blocks("python", DOCS / "langchain.md") if "on_chat_model_stream" in b)
    exec(compile(code, "docs/langchain.md streaming", "exec"), {})
    assert capsys.readouterr().out.split("\n")[:-1] == ["'December '", "'2023'"]


def test_carriers_example_runs(capsys) -> None:
    code = next(
        b for b in blocks("python", DOCS / "carriers.md") if "heavy_redundancy_example" in b
    )
    exec(compile(code, "docs/carriers.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["['f1', 'f2']", "['f3', 'f4']", "['f3', 'f4']"]
    assert lines[3] == "January 2023 January 2023"
    assert lines[4] == "['g1', 'b1', 'b2'] 2"


def test_readme_is_short_and_its_links_resolve() -> None:
    """The README is the front page (under 300 lines); every guide it links to exists."""
    text = README.read_text()
    assert len(text.splitlines()) < 300
    targets = re.findall(r"\]\((?!https?://)([^)#]+)(?:#[^)]*)?\)", text)
    assert len(targets) > 20
    missing = [t for t in targets if not (ROOT / t).is_file()]
    assert not missing, missing


def test_docs_home_has_the_two_commands() -> None:
    home = DOCS / "index.md"
    bash = blocks("bash", home)
    assert 'pip install -e ".[dev]" && meclear demo' in bash[0]
    assert bash[1].strip() == blocks("bash")[1].strip()
