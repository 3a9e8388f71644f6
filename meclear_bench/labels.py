"""What produced a run's task values, as reports and figures name it.

A simulated run is labelled SIMULATED; a real-model run names its agent and judge models
(``results["models"]``), and a partial run (stopped by a budget) says so.
"""

from __future__ import annotations

from typing import Any

__all__ = ["figure_label", "report_note", "run_label"]


def _models(results: dict[str, Any]) -> dict[str, str] | None:
    models = results.get("models")
    if results.get("simulated", True) or not isinstance(models, dict):
        return None
    return {role: str(info.get("label", "?")) for role, info in models.items()}


def run_label(results: dict[str, Any]) -> str:
    """``SIMULATED evidence world`` or ``agent X, judge Y`` (``, PARTIAL`` when stopped).

    Args:
        results: The ``results.json`` document.

    Returns:
        The label.
    """
    models = _models(results)
    if models is None:
        label = "SIMULATED evidence world"
    elif models.get("agent") == models.get("judge"):
        label = f"agent and judge {models.get('agent')}"
    else:
        label = f"agent {models.get('agent')}, judge {models.get('judge')}"
    return f"{label}, PARTIAL" if results.get("stopped") else label


def figure_label(results: dict[str, Any]) -> str:
    """The short label in figure titles (``SIMULATED`` or the models).

    Args:
        results: The ``results.json`` document.

    Returns:
        The label.
    """
    return "SIMULATED" if _models(results) is None else run_label(results)


def report_note(results: dict[str, Any]) -> str:
    """The report's opening statement of where the task values come from.

    Args:
        results: The ``results.json`` document.

    Returns:
        The statement (Markdown).
    """
    models = _models(results)
    if models is None:
        note = (
            "**SIMULATED**: task values come from the simulated evidence world (a documented "
            "stand-in for an LLM agent and judge), not from a real model."
        )
    else:
        roles = ", ".join(f"{role}: `{label}`" for role, label in models.items())
        grader = "the grader" if "grader" in models else "the judge"
        note = (
            f"**Real models** ({roles}). Task values come from these models' replies. "
            "Recovery and accuracy grade fresh agent answers (draws no method saw; one "
            f"draw when the agent is deterministic) with {grader} against the gold "
            "reference, whatever judge the methods were given."
        )
    if results.get("stopped"):
        note += (
            f"\n\n**PARTIAL**: the run stopped early ({results['stopped']}); the tables cover "
            f"the {results.get('n_cases', 0)} cases every method finished "
            f"({len(results.get('incomplete', []))} left unfinished)."
        )
    return note
