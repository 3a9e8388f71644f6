"""A missing optional extra, reported as one line naming it (exit status 2), not a traceback.

A command that needs an extra the install lacks (``meclear soak`` and the harness's
commands need ``bench``'s tqdm, ``worker --measure`` the ledger's SQLAlchemy...) stops with
``error: meclear soak needs the 'bench' extra (no module 'tqdm'): pip install
'meclear-integrations[bench]'``. An ImportError whose message already names what to install
(the package's own lazy imports) is printed as it is, on one line. Any other ImportError
(a module no extra provides) is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["EXTRA_OF", "missing_extra_message"]

EXTRA_OF: dict[str, str] = {
    "tqdm": "bench",
    "sklearn": "bench",
    "matplotlib": "bench",
    "rank_bm25": "bench",
    "lemminflect": "bench",
    "sqlalchemy": "ledger",
    "psycopg": "postgres",
    "procrastinate": "jobs",
    "langchain_core": "langchain",
    "langchain_openai": "langchain",
    "langsmith": "langchain",
    "llama_index": "llama-index",
    "opentelemetry": "otel",
    "langfuse": "langfuse",
    "phoenix": "phoenix",
    "shapiq": "shapiq",
}
"""Top-level module -> the extra that installs it (pyproject ``optional-dependencies``)."""


def _root_cause(exc: BaseException) -> ModuleNotFoundError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name:
            return current
        current = current.__cause__ or current.__context__
    return None


def missing_extra_message(exc: ImportError, command: str | None) -> str | None:
    """The one-line message for ``exc``, or None when no extra explains it (a bug).

    Args:
        exc: The ImportError a command raised.
        command: The command's name (``soak``, ``worker``...).

    Returns:
        The message (without ``error:``), or None.
    """
    where = f"meclear {command}" if command else "this command"
    missing = _root_cause(exc)
    if missing is not None and missing.name:
        extra = EXTRA_OF.get(missing.name.split(".")[0])
        if extra is not None:
            return (
                f"{where} needs the '{extra}' extra (no module '{missing.name}'): "
                f"pip install 'meclear-integrations[{extra}]'"
            )
    text = " ".join(str(exc).split())
    if "pip install" in text:
        return f"{where}: {text}"
    return None
