"""Trim each subpackage's ``__all__`` to its user-facing names and re-point the imports.

Re-runnable: ``python tools/public_surface.py`` (from the repository root), then
``ruff check --select I --fix . && ruff format .``. For every subpackage in ``KEEP`` it

1. removes the names not kept from the subpackage's ``__init__.py`` (its imports and
   ``__all__``), and
2. rewrites every ``from meclear_integrations.<pkg> import ...`` (and the relative form
   inside the package) of a removed name, in the package, tests, cookbook and the
   Markdown docs, to import from the module that defines the name.

A name imported from a subpackage but no longer exported there is found by reading the
subpackage's ``__init__`` (``from .module import Name``); names it loads lazily through a
module ``__getattr__`` stay exported.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "meclear_integrations"

KEEP: dict[str, list[str]] = {
    "core": [
        "MeClearEngine",
        "ClearanceConfig",
        "Memory",
        "Evaluator",
        "StageEvent",
        "AnswerCache",
        "ClearanceReport",
        "MemoryAttribution",
        "PairInteraction",
        "ClearanceCandidate",
        "ClearanceCost",
        "ClearanceStatus",
        "ClearanceFailure",
        "Estimator",
        "AutoShapley",
        "PermutationShapley",
        "ExactShapley",
        "RetryPolicy",
        "MeClearError",
        "ConfigurationError",
        "EvaluatorError",
        "ScoreOutOfRangeError",
        "DuplicateMemoryError",
        "BudgetExceededError",
        "ClearanceFailedError",
        "InvalidRetrievalError",
        # the nested settings groups of ClearanceConfig
        "Budget",
        "EarlyStops",
        "FailurePolicy",
        "Verification",
    ],
    "admission": [
        "ConMemAdmitter",
        "AdmissionConfig",
        "cheap_config",
        "AdmissionDecision",
        "Decision",
        "AdmissionHook",
        "OnError",
        "BackgroundAdmission",
        "AdmissionTicket",
        "AdmissionRecord",
        "AdmissionEvent",
        "AdmissionError",
        "AdmissionFailedError",
        "TextModel",
        "FunctionTextModel",
        "DedupTextModel",
    ],
    "judges": [
        "Judge",
        "BaseJudge",
        "JudgeVerdict",
        "CallableJudge",
        "ExactMatchJudge",
        "TokenF1Judge",
        "LLMJudge",
        "ReferenceLLMJudge",
        "ReferenceFreeLLMJudge",
        "TextModel",
        "FunctionTextModel",
        "StructuredTextModel",
        "TaskEvaluator",
        "AsyncTaskEvaluator",
        "task_evaluator",
        "JudgeError",
        "MissingReferenceError",
        "VerdictParseError",
    ],
    "ledger": [
        "HarmLedger",
        "content_hash",
        "ScopedHarm",
        "RunRecord",
        "FeedbackRecord",
        "MemoryRecord",
        "MemoryHistory",
        "RunMode",
        "SuccessSignal",
        "ReviewProposal",
        "replay_feedback",
        "areplay_feedback",
        "replay_pending",
        "ReplayResult",
        "ReplayError",
        "LedgerLookupError",
        "SchemaVersionError",
    ],
    "llama_index": [
        "MeClearPostprocessor",
        "Limits",
        "Loop",
        "Documents",
        "query_reference",
        "current_reference",
        "MeClearStageEvent",
        "MeClearStageStartEvent",
        "MeClearStageEndEvent",
        "MeClearProgressEvent",
        "LlamaIndexReferenceJudge",
        "LlamaIndexReferenceFreeJudge",
        "LlamaIndexTextModel",
        "as_text_model",
        "SimulatedLLM",
        "HashEmbedding",
    ],
    "langchain": [
        "ClearingRetriever",
        "MeClearCompressor",
        "Limits",
        "Loop",
        "Documents",
        "reference_config",
        "AdmissionGate",
        "AdmissionRunnable",
        "GateResult",
        "admitter_from_langchain",
        "LangChainReferenceJudge",
        "LangChainReferenceFreeJudge",
        "LangChainTextModel",
        "as_text_model",
        "SimulatedChatModel",
        "INTERNAL_TAG",
    ],
    "pipeline": [
        "Limits",
        "Loop",
        "Documents",
        "QuerySettings",
        "clearance_flow",
        "FlowResult",
        "FlowEvent",
        "run_sync",
        "run_async",
        "SyncHost",
        "AsyncHost",
    ],
    "triggers": [
        "Trigger",
        "TriggerContext",
        "TriggerDecision",
        "Always",
        "EveryN",
        "EverySeconds",
        "Sampling",
        "OnKnownHarm",
        "OnNegativeFeedback",
        "WhenJudgeFails",
        "TokenBudget",
        "AllOf",
        "AnyOf",
    ],
    "jobs": [
        "JobStore",
        "AuditQueue",
        "Auditor",
        "AuditTicket",
        "AuditOutcome",
        "AuditWorker",
        "WorkerPool",
        "ProcrastinateQueue",
    ],
}

IMPORT_RE = re.compile(
    r"^(?P<indent>[ \t]*(?:>>>[ \t]+)?)from[ \t]+(?P<module>\.*[\w.]*)[ \t]+import[ \t]+"
    r"(?P<names>\([^)]*\)|[^\n]*)",
    re.M,
)


def init_path(pkg: str) -> Path:
    """Return the ``__init__.py`` of subpackage ``pkg``."""
    return ROOT / PACKAGE / pkg / "__init__.py"


def defining_modules(pkg: str) -> dict[str, str]:
    """Map each name ``pkg/__init__.py`` imports to its absolute defining module."""
    found: dict[str, str] = {}
    tree = ast.parse(init_path(pkg).read_text())
    base = f"{PACKAGE}.{pkg}"
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            parts = base.split(".")
            parent = ".".join(parts[: len(parts) - node.level + 1])
            module = f"{parent}.{node.module}" if node.module else parent
            for alias in node.names:
                found[alias.asname or alias.name] = module
    return found


def definitions(pkg: str) -> dict[str, str]:
    """Map each top-level class, function and constant in ``pkg``'s modules to its module."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / PACKAGE / pkg).rglob("*.py")):
        if path.name == "__init__.py":
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(node.name, module)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, module)
    return found


def trim_init(pkg: str, keep: set[str]) -> None:
    """Drop the names not in ``keep`` from ``pkg/__init__.py``'s imports and ``__all__``."""
    path = init_path(pkg)
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    exported = set(_all_names(tree))
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            names = [a for a in node.names if a.name != "*"]
            kept = [
                a
                for a in names
                if (a.asname or a.name) in keep or (a.asname or a.name) not in exported
            ]
            if len(kept) == len(names):
                continue
            first = lines[node.lineno - 1]
            comment = "  # noqa: E402" if "noqa: E402" in first else ""
            module = "." * node.level + (node.module or "")
            new = ""
            if kept:
                spelled = ", ".join(
                    a.name if not a.asname else f"{a.name} as {a.asname}" for a in kept
                )
                new = f"from {module} import {spelled}{comment}\n"
            edits.append((node.lineno - 1, node.end_lineno or node.lineno, new))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            assert isinstance(node.value, (ast.List, ast.Tuple))
            current = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            kept_all = [n for n in current if n in keep]
            body = "".join(f'    "{n}",\n' for n in sorted(kept_all, key=_all_order))
            edits.append(
                (node.lineno - 1, node.end_lineno or node.lineno, f"__all__ = [\n{body}]\n")
            )
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = [new] if new else []
    path.write_text("".join(lines))


def _all_names(tree: ast.Module) -> list[str]:
    """Return the names listed in a module's ``__all__``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            assert isinstance(node.value, (ast.List, ast.Tuple))
            return [str(e.value) for e in node.value.elts if isinstance(e, ast.Constant)]
    return []


def _all_order(name: str) -> tuple[int, str]:
    """Sort like ruff's RUF022: constants, then classes, then functions."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _absolute(module: str, file: Path) -> str | None:
    """Resolve a (possibly relative) ``from`` module spelled in ``file``."""
    if not module.startswith("."):
        return module
    level = len(module) - len(module.lstrip("."))
    try:
        rel = file.relative_to(ROOT).with_suffix("")
    except ValueError:
        return None
    parts = list(rel.parts[:-1])  # the containing package, for a module or an __init__
    parts = parts[: len(parts) - level + 1]
    rest = module.lstrip(".")
    return ".".join(parts + ([rest] if rest else []))


def _relative(target: str, file: Path) -> str:
    """Spell absolute ``target`` relative to ``file``'s package, as the file did."""
    rel = file.relative_to(ROOT).with_suffix("")
    here = list(rel.parts[:-1])
    tparts = target.split(".")
    common = 0
    while common < min(len(here), len(tparts)) and here[common] == tparts[common]:
        common += 1
    level = len(here) - common + 1
    return "." * level + ".".join(tparts[common:])


def rewrite_imports(text: str, file: Path, removed: dict[str, dict[str, str]]) -> str:
    """Re-point imports of removed names in ``text`` to their defining modules."""

    def replace(match: re.Match[str]) -> str:
        module = match.group("module")
        absolute = _absolute(module, file)
        if absolute is None or not absolute.startswith(f"{PACKAGE}."):
            return match.group(0)
        pkg = absolute.split(".", 1)[1]
        if "." in pkg or pkg not in removed:
            return match.group(0)
        gone = removed[pkg]
        raw = match.group("names")
        code = raw.strip()
        trailer = ""
        if not code.startswith("("):
            code, _, comment = code.partition("#")
            trailer = f"  #{comment}" if comment else ""
            code = code.strip()
        try:
            node = ast.parse(f"from x import {code}").body[0]
        except SyntaxError:
            return match.group(0)
        assert isinstance(node, ast.ImportFrom)
        moved = [a for a in node.names if a.name in gone]
        if not moved:
            return match.group(0)
        indent = match.group("indent")
        stay = [a for a in node.names if a.name not in gone]
        groups: dict[str, list[ast.alias]] = {}
        if stay:
            groups[absolute] = stay
        for alias in moved:
            groups.setdefault(gone[alias.name], []).append(alias)
        out = []
        for target, aliases in groups.items():
            spelled = ", ".join(
                a.name if not a.asname else f"{a.name} as {a.asname}" for a in aliases
            )
            where = _relative(target, file) if module.startswith(".") else target
            out.append(f"{indent}from {where} import {spelled}{trailer}")
        return "\n".join(out)

    return IMPORT_RE.sub(replace, text)


def main() -> int:
    """Trim every subpackage in ``KEEP`` and rewrite the imports across the repository."""
    removed: dict[str, dict[str, str]] = {}
    for pkg, names in KEEP.items():
        modules = defining_modules(pkg)
        keep = set(names)
        exported = set(_all_names(ast.parse(init_path(pkg).read_text())))
        removed[pkg] = {n: m for n, m in modules.items() if n not in keep and n in exported}
        # A name another branch still imports from the subpackage after an earlier trim:
        # find the module that defines it.
        for name, module in definitions(pkg).items():
            if name not in keep and name not in modules:
                removed[pkg].setdefault(name, module)
    files = [
        *ROOT.glob(f"{PACKAGE}/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("cookbook/**/*.py"),
        *ROOT.glob("tools/**/*.py"),
        *ROOT.glob("docs/**/*.md"),
        ROOT / "README.md",
    ]
    changed = 0
    for file in files:
        if (
            file.name == "__init__.py"
            and file.parent.name in KEEP
            and file.parent.parent.name == PACKAGE
        ):
            continue
        if file == Path(__file__).resolve():
            continue
        text = file.read_text()
        new = rewrite_imports(text, file, removed)
        if new != text:
            file.write_text(new)
            changed += 1
    for pkg, names in KEEP.items():
        trim_init(pkg, set(names))
    print(
        f"rewrote imports in {changed} files; trimmed {len(KEEP)} __init__ files", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
