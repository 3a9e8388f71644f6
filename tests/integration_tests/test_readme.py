"""The README's commands and quickstart stay true."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
CI = Path(__file__).resolve().parents[2] / ".ci" / "run"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_the_two_commands_and_ci_runs_the_test_one() -> None:
    bash = blocks("bash")
    assert 'pip install -e ".[dev]" && meclear demo' in bash[0]
    test_command = bash[1].strip()
    assert test_command == "python -m pytest"
    assert test_command in CI.read_text()


def test_engine_quickstart_runs(capsys) -> None:
    code = next(b for b in blocks("python") if "MeClearEngine" in b)
    exec(compile(code, "README quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert "['f1', 'f2']" in out


def test_shared_limits_example_runs(capsys) -> None:
    code = next(b for b in blocks("python") if "CallLimiter(" in b)
    exec(compile(code, "README shared limits", "exec"), {})
    assert capsys.readouterr().out.split() == ["4", "0", "330"]


def test_progress_examples_run(capsys) -> None:
    code = next(b for b in blocks("python") if "meclear.progress" in b)
    exec(compile(code, "README progress (LangChain)", "exec"), {})
    lines = capsys.readouterr().out.split("\n")[:-1]
    assert lines[0] == "screening batch 1: 0/2"
    assert "screening batch 2: 47/47" in lines and lines[-1] == "clearance batch 3: 3/3"

    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
    from meclear_integrations.simulation import redundant_harm_example

    code = next(b for b in blocks("python") if "ProgressPrinter" in b)
    root = get_dispatcher()
    before = list(root.event_handlers)
    exec(compile(code, "README progress (LlamaIndex)", "exec"), {})
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
    assert lines[0] == "screening 1 0/2" and lines[-1] == "clearance 3 3/3"


def test_streaming_example_prints_the_answer_only(capsys) -> None:
    code = next(b for b in blocks("python") if "on_chat_model_stream" in b)
    exec(compile(code, "README streaming", "exec"), {})
    assert capsys.readouterr().out.split("\n")[:-1] == ["'December '", "'2023'"]


def test_carriers_example_runs(capsys) -> None:
    code = next(b for b in blocks("python") if "heavy_redundancy_example" in b)
    exec(compile(code, "README carriers", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["['f1', 'f2']", "['f3', 'f4']", "['f3', 'f4']"]
    assert lines[3] == "January 2023 January 2023"
    assert lines[4] == "['g1', 'b1', 'b2'] 2"
