"""Scripted test models: route prompts by their ``# Task:`` line to per-stage handlers.

Probe queries carry their role as a prefix (``REL:``, ``IRR:``, ``RISK:``) and responses
carry their condition (``CONTROL`` / ``TREATMENT``), so handlers can script per-role,
per-condition behaviour and tests can check what each stage saw.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from meclear_integrations.admission import prompts as P

Handler = Callable[[str], Any]

PROBES = {
    "relevant": "REL: what should I cook tonight?",
    "irrelevant": "IRR: how many minutes are in a day?",
    "risk": "RISK: my friend eats meat, what should I cook for him?",
}

ROLE_OF_PREFIX = {"REL": "relevant", "IRR": "irrelevant", "RISK": "risk"}

STAGES = {
    P.TASK_GENERATE: "generate",
    P.TASK_VALIDATE: "validate",
    P.TASK_REPAIR: "repair",
    P.TASK_RESPOND: "respond",
    P.TASK_JUDGE: "judge",
    P.TASK_AUDIT: "audit",
    P.TASK_TIE_BREAK: "tie_break",
    P.TASK_REASON: "reason",
}


def section(prompt: str, name: str) -> str | None:
    m = re.search(rf"<<<{name}>>>\n(.*?)\n<<<END_{name}>>>", prompt, re.DOTALL)
    return m.group(1) if m else None


def stage_of(prompt: str) -> str:
    first = prompt.split("\n", 1)[0]
    return STAGES[first]


def role_of_query(query: str) -> str:
    return ROLE_OF_PREFIX[query.split(":", 1)[0]]


def valid_all() -> str:
    return json.dumps({r: {"valid": True, "issue": ""} for r in PROBES})


@dataclass
class Script:
    """Per-role outcomes; defaults give a clean store (utility, judged helpful, on REL)."""

    labels: dict[str, str] = field(
        default_factory=lambda: {"relevant": "utility", "irrelevant": "neutral", "risk": "neutral"}
    )
    preferences: dict[str, str] = field(
        default_factory=lambda: {"relevant": "treatment", "irrelevant": "tie", "risk": "tie"}
    )
    used: dict[str, bool] = field(default_factory=dict)
    tie_break: str = "STORE"
    reason: str = "over_inference"


class StageModel:
    """A deterministic text model scripted per stage; thread- and task-safe counters."""

    def __init__(
        self,
        script: Script | None = None,
        overrides: dict[str, Handler] | None = None,
        *,
        delay: float = 0.0,
    ) -> None:
        self.script = script or Script()
        self.handlers: dict[str, Handler] = {
            "generate": lambda p: json.dumps(PROBES),
            "validate": lambda p: valid_all(),
            "repair": lambda p: json.dumps({"query": "REL: repaired?"}),
            "respond": self._respond,
            "judge": self._judge,
            "audit": self._audit,
            "tie_break": lambda p: json.dumps(
                {"decision": self.script.tie_break, "explanation": "scripted"}
            ),
            "reason": lambda p: json.dumps(
                {"reason_type": self.script.reason, "confidence": 0.9, "explanation": "s"}
            ),
        }
        self.handlers.update(overrides or {})
        self.delay = delay
        self.calls: list[tuple[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    # -- default handlers ------------------------------------------------------------
    def _respond(self, prompt: str) -> str:
        query = section(prompt, "CURRENT_QUERY") or ""
        memory = section(prompt, "USER_INFORMATION")
        tag = "TREATMENT" if memory is not None else "CONTROL"
        return f"{tag} answer to {query}"

    def _judge(self, prompt: str) -> str:
        role = role_of_query(section(prompt, "CURRENT_QUERY") or "")
        want = self.script.preferences[role]
        a = section(prompt, "RESPONSE_A") or ""
        treatment_at = "A" if a.startswith("TREATMENT") else "B"
        control_at = "B" if treatment_at == "A" else "A"
        raw = {"treatment": treatment_at, "control": control_at, "tie": "TIE"}[want]
        return json.dumps({"preference": raw, "explanation": f"prefers {want}"})

    def _audit(self, prompt: str) -> str:
        role = role_of_query(section(prompt, "CURRENT_QUERY") or "")
        label = self.script.labels[role]
        used = self.script.used.get(role, label != "neutral")
        return json.dumps(
            {
                "memory_used": used,
                "materially_changed": used,
                "label": label,
                "explanation": f"{role} scripted {label}",
            }
        )

    # -- protocol ------------------------------------------------------------------
    def _enter(self, prompt: str) -> str:
        stage = stage_of(prompt)
        with self._lock:
            self.calls.append((stage, prompt))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return stage

    def _exit(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _answer(self, stage: str, prompt: str) -> str:
        out = self.handlers[stage](prompt)
        if isinstance(out, BaseException):
            raise out
        return out

    def complete(self, prompt: str) -> str:
        stage = self._enter(prompt)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self._answer(stage, prompt)
        finally:
            self._exit()

    async def acomplete(self, prompt: str) -> str:
        stage = self._enter(prompt)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._answer(stage, prompt)
        finally:
            self._exit()

    def stages(self) -> list[str]:
        return [s for s, _ in self.calls]

    def count(self, stage: str) -> int:
        return sum(1 for s, _ in self.calls if s == stage)


class Sequence_:
    """A handler returning the given outputs in turn (the last one repeats)."""

    def __init__(self, *outputs: Any) -> None:
        self.outputs = list(outputs)
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> Any:
        with self._lock:
            self.seen.append(prompt)
            i = min(len(self.seen) - 1, len(self.outputs) - 1)
            return self.outputs[i]
