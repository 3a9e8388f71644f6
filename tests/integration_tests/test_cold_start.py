"""What importing the package and its integrations loads, each in a fresh interpreter.

The exported names load on first use (PEP 562), so importing a subpackage loads none of
the engine; the first name loads what it needs and no database driver. The cost ratio
against the framework's own import is measured by ``tools/import_cost.py`` (never timed
here).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _own(modules: list[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] == "meclear_integrations"}


@pytest.mark.slow  # starts a subprocess
def test_importing_the_package_loads_only_its_init() -> None:
    modules = _loaded("import meclear_integrations")
    assert _own(modules) == {"meclear_integrations"}
    assert "numpy" not in modules


@pytest.mark.slow  # starts a subprocess
@pytest.mark.parametrize(
    ("package", "framework"), [("langchain", "langchain_core"), ("llama_index", "llama_index.core")]
)
def test_importing_an_integration_loads_nothing_beyond_the_framework(
    package: str, framework: str
) -> None:
    modules = _loaded(f"import meclear_integrations.{package}")
    extra = set(modules) - set(_loaded(f"import {framework}"))
    assert extra == {
        "meclear_integrations",
        f"meclear_integrations.{package}",
        f"meclear_integrations.{package}._imports",
    }


@pytest.mark.slow  # starts a subprocess
def test_the_first_name_loads_its_module_and_no_database() -> None:
    modules = _loaded("from meclear_integrations.langchain import ClearingRetriever")
    assert "meclear_integrations.langchain.retriever" in modules
    assert "meclear_integrations.core.engine" not in modules  # loaded by the first run
    assert "meclear_integrations.langchain.admission" not in modules  # not asked for
    assert not {"sqlalchemy", "psycopg"} & {m.split(".")[0] for m in modules}


@pytest.mark.slow  # starts a subprocess
def test_every_exported_name_still_resolves() -> None:
    code = (
        "import meclear_integrations as m, meclear_integrations.langchain as lc, "
        "meclear_integrations.llama_index as li\n"
        "for p in (m, lc, li):\n"
        "    missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
        "    assert not missing, (p.__name__, missing)\n"
        "    assert set(p.__all__) <= set(dir(p))\n"
        "assert m.core.MeClearEngine is m.MeClearEngine\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


# What ``from <integration> import <component>`` may load (a ratchet on modules, never on
# time: tools/import_cost.py measures the time against the framework piece it extends).
# numpy, the engine and its stages load with the first clearance (and, for LangChain, the
# query flow and the judges); LangChain's language models with the first model call.
NOT_ON_IMPORT = {
    "meclear_integrations.langchain:ClearingRetriever": (
        "numpy",
        "meclear_integrations.core.engine",
        "meclear_integrations.core.stages",
        "meclear_integrations.core.verification.sequential",
        "meclear_integrations.pipeline.flow",  # the component's methods import the flow,
        "meclear_integrations.judges.task",  # the judges and the guard on first use
        "meclear_integrations.pipeline.shaping",  # with the gated metadata
        "meclear_integrations.core.estimators.auto",  # the settings name only ``Estimator``
        "langchain_core.language_models.chat_models",
        "langchain_core.language_models.llms",
    ),
    "meclear_integrations.llama_index:MeClearPostprocessor": (
        "meclear_integrations.core.engine",
        "meclear_integrations.core.estimators.auto",
        "meclear_integrations.core.stages",
        "meclear_integrations.core.verification.sequential",
    ),
}
MAX_OWN_MODULES = {
    "meclear_integrations.langchain:ClearingRetriever": 49,
    "meclear_integrations.llama_index:MeClearPostprocessor": 105,
}


@pytest.mark.slow  # starts a subprocess
@pytest.mark.parametrize("target", sorted(NOT_ON_IMPORT))
def test_importing_a_component_loads_no_engine(target: str) -> None:
    package, name = target.split(":")
    code = (
        f"import sys; from {package} import {name};"
        f"loaded = [m for m in {NOT_ON_IMPORT[target]!r} if m in sys.modules];"
        "assert not loaded, loaded;"
        "print(sum(m.startswith('meclear_integrations') for m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) <= MAX_OWN_MODULES[target], result.stdout
