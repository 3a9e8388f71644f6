"""A ``[langchain]``-only install: every command that needs another extra says which, in one
line, exit status 2 (before: a bare ``ModuleNotFoundError: tqdm`` from ``soak`` and
``admission-bench``, 26-60 lines of traceback from ``explain``, ``bench-sweep`` and
``worker --measure``). The extras' modules are hidden by a meta-path blocker in a fresh
interpreter, as if never installed. ``bench-sweep`` meets matplotlib only after a whole
sweep; the same handler in ``meclear_integrations.cli.main`` answers it
(``tests/unit_tests/test_cli_extras.py`` covers any command)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What a `pip install meclear-integrations[langchain]` lacks.
HIDDEN = [
    "tqdm",
    "sklearn",
    "matplotlib",
    "rank_bm25",
    "lemminflect",
    "sqlalchemy",
    "psycopg",
    "procrastinate",
    "llama_index",
    "langfuse",
    "phoenix",
    "opentelemetry",
    "openinference",
    "shapiq",
]
RUNNER = textwrap.dedent(
    """
    import importlib.abc, sys
    HIDDEN = set(sys.argv[1].split(","))

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    from meclear_integrations.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUNNER, ",".join(HIDDEN), *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MECLEAR_NO_PROGRESS": "1"},
        timeout=600,
    )


@pytest.mark.parametrize(
    ("argv", "extra", "module"),
    [
        (("soak", "--queries", "2"), "bench", "tqdm"),
        (("admission-bench", "--out", "out"), "bench", "tqdm"),
        (("explain", "--case-id", "builtin-ana-ben-q1-direct", "--out", "out"), "bench", None),
        (("worker", "--measure"), "ledger", "sqlalchemy"),
        (("ledger", "stats"), "ledger", None),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v),
)
def test_one_line_naming_the_extra(tmp_path: Path, argv, extra, module) -> None:
    done = _run(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert f"meclear-integrations[{extra}]" in done.stderr
    if module is not None:
        assert f"no module '{module}'" in done.stderr
