"""Every setting the README and the docs pages name exists: keyword arguments of the
package's components, functions and methods in their Python blocks and inline code are
accepted by them, and every ``meclear`` command line and settings file they show is valid.

A renamed or removed setting (``on_error`` for ``on_failure``, ``query=`` where the API
says ``query_str=``) fails here with the page and line that name it.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# The guides live on the docs site; the README keeps the front page. Both are checked.
PAGES = (README, *sorted((ROOT / "docs").rglob("*.md")))


def _where(page: Path, line: int) -> str:
    return f"{page.relative_to(ROOT)}:{line}"


MODULES = (
    "meclear_integrations",
    "meclear_integrations.core",
    "meclear_integrations.core.recency",  # RecencyPrior: an engine argument, imported from there
    "meclear_integrations.judges",
    "meclear_integrations.triggers",
    "meclear_integrations.telemetry",
    "meclear_integrations.admission",
    "meclear_integrations.langchain",
    "meclear_integrations.langchain.feedback",
    "meclear_integrations.langgraph",
    "meclear_integrations.llama_index",
    "meclear_integrations.ledger",
    "meclear_integrations.exports",
    "meclear_integrations.exports.langsmith",
    "meclear_integrations.exports.langfuse",
    "meclear_integrations.exports.phoenix",
    "meclear_integrations.simulation",
    "meclear_integrations.pipeline.settings",
    "meclear_integrations.writeback",
    "meclear_integrations.writeback.annotations",
    "meclear_integrations.writeback.graph_store",
)


def _public(module: Any) -> Iterator[tuple[str, Any]]:
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        value = getattr(module, name, None)
        if inspect.isclass(value) or inspect.isfunction(value):
            yield name, value


def _registry() -> dict[str, list[Callable[..., Any]]]:
    """Name -> callables it may stand for (a class, a function, or a method by its name)."""
    found: dict[str, list[Any]] = {}
    for module_name in MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an extra not installed: its names are not checked
            continue
        for name, value in _public(module):
            if value.__module__.split(".")[0] != "meclear_integrations":
                continue
            found.setdefault(name, []).append(value)
            if inspect.isclass(value):  # its methods, those of the package's bases included
                members = {
                    attr: member
                    for klass in reversed(value.__mro__)
                    if klass.__module__.split(".")[0] == "meclear_integrations"
                    for attr, member in vars(klass).items()
                }
                for attr, member in members.items():
                    if attr.startswith("_"):
                        continue
                    target = member
                    if isinstance(member, classmethod | staticmethod):
                        target = member.__func__
                    if inspect.isfunction(target):
                        found.setdefault(f".{attr}", []).append(target)
    return {k: list({id(v): v for v in vs}.values()) for k, vs in found.items()}


def _accepts(target: Any, keyword: str) -> bool:
    fields = getattr(target, "model_fields", None)
    if fields is not None and (
        keyword in fields or any(f.alias == keyword for f in fields.values())
    ):
        return True
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return True
    params = signature.parameters
    if keyword in params:
        return True
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) and not fields


def _code() -> Iterator[tuple[str, str]]:
    """(page:line, code) of every Python block and inline code span of the pages."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        # ```python blocks run as written (tests/integration_tests); ```py blocks are fragments.
        for match in re.finditer(r"```(?:python|py)\n(.*?)```", text, flags=re.S):
            yield _where(page, text[: match.start()].count("\n") + 2), match.group(1)
        prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for match in re.finditer(r"`([^`]+)`", prose):  # inline code may wrap a line
            line = prose[: match.start()].count("\n") + 1
            yield _where(page, line), match.group(1).replace("\n", " ")


def _calls(code: str) -> Iterator[tuple[str, list[str]]]:
    """(name, keywords) of every call in ``code`` (method calls named ``.attr``)."""
    try:
        tree = ast.parse(code.replace(", ...", "").replace("...,", ""))
    except SyntaxError:
        yield from _fragment_calls(code)  # prose-like inline code: ``f(a, b=c)`` and so on
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            keywords = [k.arg for k in node.keywords if k.arg is not None]
            func = node.func
            if isinstance(func, ast.Name):
                yield func.id, keywords
            elif isinstance(func, ast.Attribute):
                owner = func.value
                if isinstance(owner, ast.Name) and owner.id[:1].isupper():
                    yield func.attr, keywords  # Class.classmethod(...)
                    yield f".{func.attr}", keywords
                else:
                    yield f".{func.attr}", keywords


def _fragment_calls(code: str) -> Iterator[tuple[str, list[str]]]:
    """Calls in text that is not Python: each call's own (top-level) keywords."""
    for match in re.finditer(r"([A-Za-z_][\w.]*)\(", code):
        depth, start, args = 1, match.end(), []
        current = ""
        for char in code[start:]:
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    break
            if char == "," and depth == 1:
                args.append(current)
                current = ""
            elif depth >= 1:
                current += char
        args.append(current)
        pattern = re.compile(r"\s*([a-z_][a-z0-9_]*)\s*=(?!=)")
        keywords = [m.group(1) for a in args if (m := pattern.match(a))]
        name = match.group(1)
        owner, _, attr = name.rpartition(".")
        if not owner:
            yield name, keywords
        elif owner[:1].isupper():
            yield attr, keywords
            yield f".{attr}", keywords
        else:
            yield f".{attr}", keywords


REGISTRY = _registry()


def _mentions() -> list[tuple[str, str, str]]:
    out = []
    for line, code in _code():
        for name, keywords in _calls(code):
            if name not in REGISTRY and f".{name}" in REGISTRY:
                name = f".{name}"  # a method named without its object: clear_nodes(...)
            if name in REGISTRY:
                out.extend((line, name, k) for k in keywords)
    return out


def test_the_readme_names_settings_at_all() -> None:
    mentions = _mentions()
    names = {name for _, name, _ in mentions}
    assert len(mentions) > 40
    assert {"ClearanceConfig", "ClearingRetriever", "MeClearPostprocessor"} <= names


@pytest.mark.parametrize(("line", "name", "keyword"), _mentions(), ids=lambda v: str(v))
def test_every_named_setting_exists(line: str, name: str, keyword: str) -> None:
    targets = REGISTRY[name]
    assert any(_accepts(t, keyword) for t in targets), (
        f"{line}: {name.lstrip('.')}({keyword}=...) is accepted by none of "
        f"{[getattr(t, '__qualname__', t) for t in targets]}"
    )


def _all_settings() -> set[str]:
    names: set[str] = set()
    for targets in REGISTRY.values():
        for target in targets:
            names |= set(getattr(target, "model_fields", {}) or {})
            try:
                names |= set(inspect.signature(target).parameters)
            except (TypeError, ValueError):
                continue
    return names


def _bare_settings() -> list[tuple[str, str]]:
    """Inline spans that name one setting with its value, e.g. ``early_exit=True``."""
    out = []
    for line, code in _code():
        match = re.fullmatch(r"\s*([a-z_][a-z0-9_]*)\s*=\s*[^=\s].*", code)
        if match and "(" not in code.split("=", 1)[0]:
            out.append((line, match.group(1)))
    return out


SETTINGS = _all_settings()
NOT_OURS = {
    "outcome": "a field of a stage event's payload, not a setting",
    "max_retries": "the provider models' own setting (ChatOpenAI, LlamaIndex OpenAI)",
    "finish_reason": "a field of an OpenAI-compatible server's reply, not a setting",
}


def test_the_readme_names_bare_settings() -> None:
    assert len(_bare_settings()) > 30


@pytest.mark.parametrize(("line", "name"), _bare_settings(), ids=lambda v: str(v))
def test_every_bare_setting_exists(line: str, name: str) -> None:
    assert name in SETTINGS or name in NOT_OURS, (
        f"{line}: `{name}=...` is no setting of any component"
    )


def test_the_readme_settings_files_load(tmp_path: Path) -> None:
    """Every ``toml`` block of the pages loads into its command without an unknown key."""
    import tomllib

    from meclear_integrations.cli import build_parser
    from meclear_integrations.cli.config_file import apply_config

    documents = [
        body
        for page in PAGES
        for body in re.findall(r"```toml\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    ]
    assert documents
    for number, body in enumerate(documents):
        path = tmp_path / f"readme-{number}.toml"
        path.write_text(body, encoding="utf-8")
        for command in tomllib.loads(body):
            apply_config(build_parser(), [*command.split(), "--config", str(path)])


def _command_lines() -> list[tuple[str, str]]:
    """Every ``meclear ...`` command line of the pages (bash blocks and inline code)."""
    found: list[tuple[str, str]] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"```bash\n(.*?)```", text, flags=re.S):
            start = text[: match.start()].count("\n") + 2
            body = match.group(1).replace("\\\n", " ")
            for offset, line in enumerate(body.splitlines()):
                for part in line.split("&&"):
                    part = part.split("#")[0].strip()
                    if part.startswith("meclear "):
                        found.append((_where(page, start + offset), part))
    for line, span in _code():
        if span.startswith("meclear "):
            found.append((line, span))
    from meclear_integrations.cli import build_parser

    # Every command ``meclear`` parses, the harness's plugin commands included.
    subs = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(subs[0].choices)
    # Prose such as `meclear harm` (an annotation's name) or `meclear COMMAND --help` is not
    # a command line; `meclear --help` has no flag to check beyond --help.
    return [(n, c) for n, c in found if c.split()[1] in commands]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """``meclear``'s parser, built once: the checks below only read it."""
    from meclear_integrations.cli import build_parser

    return build_parser()


def _flags_of(words: list[str]) -> tuple[str, set[str]]:
    parser: Any = _parser()
    path: list[str] = []
    for word in words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            parser = subs[0].choices[word]
            path.append(word)
    flags: set[str] = set()
    chain = _parser()
    for depth in range(len(path) + 1):  # the command's options and its parents'
        node: Any = chain
        for word in path[:depth]:
            node = next(
                a for a in node._actions if isinstance(a, argparse._SubParsersAction)
            ).choices[word]
        flags |= {s for s, a in node._option_string_actions.items() if a.help != argparse.SUPPRESS}
    return " ".join(path), flags


def test_the_readme_shows_commands() -> None:
    assert len(_command_lines()) > 20


@pytest.mark.parametrize(("line", "command"), _command_lines(), ids=lambda v: str(v)[:60])
def test_every_flag_the_readme_shows_exists(line: str, command: str) -> None:
    words = [w.strip("[]()`|,;") for w in command.split()[1:]]  # [--flag VALUE] in prose
    name, flags = _flags_of([w for w in words if not w.startswith("-")])
    assert name, f"{line}: {command!r} names no meclear command"
    shown = {w.split("=", 1)[0] for w in words if w.startswith("--")}
    unknown = sorted(shown - flags)
    assert not unknown, f"{line}: meclear {name} has no {unknown}"
