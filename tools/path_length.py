#!/usr/bin/env python
"""How long the library's path is for one simulated query: files, functions, depth.

A ``sys.setprofile`` hook (and ``threading.setprofile`` for the engine's worker threads)
records every Python function of ``meclear_integrations`` entered while one query runs on
the simulated model (the redundant-harm example, with its reference). The first query
warms up lazy imports and caches; the second is measured::

    python tools/path_length.py                 # ClearingRetriever.invoke (LangChain)
    python tools/path_length.py --target llama_index
    python tools/path_length.py --target engine --files   # the bare engine, file list

Prints the number of library files and functions entered, how deep the library's frames
stack (library frames only, on one thread), and the files entered most often. A second file
count leaves out the simulated model's own files (``simulation/`` and the integrations'
``simulated.py`` adapters): a real application's model is its own, not the library's.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGE = Path(__file__).resolve().parent.parent / "meclear_integrations"
MODEL_FILES = ("simulation/", "langchain/simulated.py", "llama_index/simulated.py")
"""The simulated model's own files (left out of :meth:`PathLength.library_files`)."""


@dataclass
class PathLength:
    """What one query entered: calls per file and per function, the deepest stack."""

    files: Counter[str] = field(default_factory=Counter)
    functions: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    max_depth: int = 0

    def summary(self) -> dict[str, Any]:
        """Files, functions and depth as plain numbers."""
        return {
            "files": len(self.files),
            "functions": len(self.functions),
            "max_depth": self.max_depth,
            "calls": sum(self.files.values()),
        }

    def library_files(self) -> list[str]:
        """The files entered, the simulated model's own (:data:`MODEL_FILES`) left out."""
        return sorted(f for f in self.files if not f.startswith(MODEL_FILES))


def _library_file(frame: FrameType, root: str) -> str | None:
    name = frame.f_code.co_filename
    return name[len(root) + 1 :] if name.startswith(root) else None


def measure(query: Callable[[], Any], package: Path = PACKAGE, *, warm: bool = False) -> PathLength:
    """Run ``query`` under a profile hook and return the library functions it entered.

    Args:
        query: One query.
        package: The package directory whose files count.
        warm: Run ``query`` once unrecorded first, under the same hook (so worker threads
            the first run starts and later runs reuse are followed too).

    Returns:
        Calls per library file and function, and the deepest library stack.
    """
    root = str(package.resolve())
    seen = PathLength()
    local = threading.local()
    recording = [not warm]

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        path = _library_file(frame, root)
        if path is None:
            return
        depth = getattr(local, "depth", 0)
        if event == "return":
            local.depth = max(depth - 1, 0)
            return
        local.depth = depth + 1
        if not recording[0]:
            return
        seen.max_depth = max(seen.max_depth, depth + 1)
        seen.files[path] += 1
        seen.functions[(path, frame.f_code.co_qualname, frame.f_code.co_firstlineno)] += 1

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        if warm:
            query()  # lazy imports, caches and worker threads
            recording[0] = True
        query()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return seen


def _langchain_query() -> Callable[[], Any]:
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from meclear_integrations.langchain import (
        ClearingRetriever,
        SimulatedChatModel,
        reference_config,
    )
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    documents = [
        Document(page_content=m.content, metadata=dict(m.metadata), id=m.id) for m in case.memories
    ]
    inner = RunnableLambda(lambda _: [d.model_copy(deep=True) for d in documents])
    retriever = ClearingRetriever(retriever=inner, llm=SimulatedChatModel.from_case(case))
    config = reference_config(case.reference)
    return lambda: retriever.invoke(case.query, config=config)


def _llama_index_query() -> Callable[[], Any]:
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import MeClearPostprocessor, SimulatedLLM
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    nodes = [NodeWithScore(node=TextNode(id_=m.id, text=m.content)) for m in case.memories]
    postprocessor = MeClearPostprocessor(llm=SimulatedLLM.from_case(case), reference=case.reference)
    return lambda: postprocessor.postprocess_nodes(nodes, query_str=case.query)


def _engine_query() -> Callable[[], Any]:
    from meclear_integrations import ClearanceConfig, MeClearEngine
    from meclear_integrations.simulation import redundant_harm_example

    case = redundant_harm_example()
    engine = MeClearEngine(ClearanceConfig())
    return lambda: engine.clear(case.memories, case.evaluator())


TARGETS: dict[str, Callable[[], Callable[[], Any]]] = {
    "langchain": _langchain_query,
    "llama_index": _llama_index_query,
    "engine": _engine_query,
}


def query_path(target: str = "langchain") -> PathLength:
    """The path of one warm query of ``target`` (``langchain``, ``llama_index``, ``engine``).

    Args:
        target: Which entry point runs the query.

    Returns:
        The measured path of the second of two identical queries.
    """
    return measure(TARGETS[target](), warm=True)


def main(argv: list[str] | None = None) -> int:
    """Print the path length of one query."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(TARGETS), default="langchain")
    parser.add_argument("--files", action="store_true", help="list every file entered")
    parser.add_argument(
        "--json", action="store_true", help="print the calls per file and per function as JSON"
    )
    args = parser.parse_args(argv)
    seen = query_path(args.target)
    if args.json:
        functions = [[f, name, line, n] for (f, name, line), n in seen.functions.items()]
        print(
            json.dumps(
                {
                    **seen.summary(),
                    "files_without_model": len(seen.library_files()),
                    "per_file": dict(seen.files),
                    "per_function": functions,
                }
            )
        )
        return 0
    summary = seen.summary()
    print(
        f"{args.target}: {summary['files']} library files, {summary['functions']} functions, "
        f"{summary['max_depth']} frames deep, {summary['calls']} calls; "
        f"{len(seen.library_files())} without the simulated model's own files"
    )
    shown = seen.files.most_common() if args.files else seen.files.most_common(10)
    for path, calls in shown:
        print(f"  {calls:6d}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
