"""Real chat models in ``meclear bench``: flags, the run's models and its call gate.

``--agent-model`` switches the benchmark from the simulated world to real models: the agent
answers through the integrations' answer prompt, the judge grades through the package's LLM
judges, every call goes through the response cache, the budget, the concurrency bound and
the rate limiter (:mod:`meclear_bench.model_client`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meclear_integrations.core.errors import ConfigurationError

from ..model_spec import json_kwargs as _kwargs

if TYPE_CHECKING:
    from ..real_backend import Grade
    from ..real_query import JudgeMode

__all__ = ["RealSession", "add_real_flags", "real_mode", "real_session"]

JUDGE_MODES = ("reference", "exact", "coalition", "full")


def add_real_flags(p: argparse.ArgumentParser) -> None:
    """The real-model and long-run flags of ``meclear bench``.

    Args:
        p: The ``meclear bench`` parser.
    """
    g = p.add_argument_group("real models (any OpenAI-compatible endpoint or LangChain model)")
    g.add_argument(
        "--agent-model",
        default=None,
        help="task agent: an OpenAI-compatible model name, module:Class of a LangChain chat "
        "model, or meclear-text-reader (the offline stand-in); switches off the simulation",
    )
    g.add_argument("--agent-kwargs", default=None, help="JSON keyword arguments of the agent")
    g.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint of the models")
    g.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the key (default OPENAI_API_KEY)",
    )
    g.add_argument(
        "--agent-temperature",
        type=float,
        default=0.0,
        help="agent temperature (OpenAI-compatible; default 0: one answer per prompt)",
    )
    g.add_argument(
        "--grade",
        choices=["model", "exact"],
        default=None,
        help="what grades the fresh answers behind recovery and the causal verification "
        "against the gold reference: the judge model, or exact (normalised containment of "
        "the reference, no model); default exact with --judge exact, else model",
    )
    g.add_argument("--judge-model", default=None, help="judge model (default: the agent's)")
    g.add_argument("--judge-kwargs", default=None, help="JSON keyword arguments of the judge")
    g.add_argument("--judge-base-url", default=None, help="endpoint of the judge model")
    g.add_argument(
        "--judge-output",
        choices=["auto", "structured", "text"],
        default="auto",
        help="judge verdicts as structured output when the model supports it (auto), always, "
        "or as free text",
    )
    g.add_argument(
        "--memory-metadata",
        default="date",
        help="memory metadata rendered in the agent's prompt (comma-separated; '' for none)",
    )
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per request (120)")
    g = p.add_argument_group("long runs")
    g.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="response cache (SQLite; default ~/.cache/meclear/responses.sqlite)",
    )
    g.add_argument("--no-cache", action="store_true", help="keep replies in memory only")
    g.add_argument("--concurrency", type=int, default=4, help="cases and model calls in flight (4)")
    g.add_argument("--rps", type=float, default=None, help="model requests per second (no cap)")
    g.add_argument(
        "--retries",
        type=int,
        default=4,
        help="attempts per model call on transient provider errors (4; backoff, retry-after)",
    )
    g.add_argument("--max-calls", type=int, default=None, help="stop after N provider calls")
    g.add_argument("--max-tokens", type=int, default=None, help="stop after N tokens")
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="estimate calls and tokens with the offline stand-in; call no model",
    )
    g.add_argument("--dry-run-cases", type=int, default=12, help="cases the dry run measures (12)")
    g.add_argument("--shard", default=None, help="run shard i of n (i/n, 1-based)")
    g.add_argument("--resume", action="store_true", help="continue the run in --out")
    g.add_argument(
        "--build-only",
        action="store_true",
        help="build and verify the cases (cases.jsonl, funnel), run no method",
    )
    g.add_argument(
        "--reverify",
        action="store_true",
        help="with --cases: verify every case with the run's models, drop the others",
    )


def real_mode(args: argparse.Namespace) -> bool:
    """Whether the parsed flags ask for a real-model run (``--agent-model`` given).

    Args:
        args: The parsed ``meclear bench`` flags.

    Returns:
        True for a real-model run, False for the simulated world.
    """
    return bool(getattr(args, "agent_model", None))


@dataclass
class RealSession:
    """The models of a real run, their shared gate and the backend over them."""

    specs: dict[str, Any]
    """Role -> model specification."""
    gate: Any
    """The gate every client shares."""
    clients: dict[str, Any]
    """Role -> model client."""
    backend: Any
    """The real-model backend over the agent and judge."""
    mode: JudgeMode
    """The judge mode."""
    metadata_keys: tuple[str, ...]
    """The memory metadata shown to the agent."""
    grade: str = "model"
    """What grades fresh answers against the gold reference: ``model`` or ``exact``."""

    def models(self) -> dict[str, Any]:
        """Role -> {label, identity} (no keys), for manifests and results.

        The ``exact`` judge is named as the rule it is; an exact grader of recovery under
        a model judge is listed as the ``grader`` role.
        """
        from ..real_query import EXACT_LABEL

        exact = {"label": EXACT_LABEL, "identity": {"provider": "rule", "name": "exact-contains"}}
        out: dict[str, Any] = {}
        for role, spec in self.specs.items():
            if role == "judge" and self.mode == "exact":
                out[role] = exact
            else:
                out[role] = {"label": spec.label, "identity": spec.identity()}
        if self.grade == "exact" and self.mode != "exact":
            out["grader"] = exact
        return out

    def labels(self) -> dict[str, str]:
        """Role -> model label (for progress and verification messages).

        Returns:
            The label of each role's model.
        """
        return {role: spec.label for role, spec in self.specs.items()}

    def verifier(self, workers: int) -> Any:
        """The causal verifier of LoCoMo cases under the real models.

        Args:
            workers: The number of cases verified at a time.

        Returns:
            A verifier for :func:`~meclear_bench.locomo.build_locomo_cases`.
        """
        from ..real_backend import real_verifier

        return real_verifier(self.backend, workers=workers)

    def rater(self) -> Any:
        """The rater of the ``llm-direct`` baseline, over the rater model.

        Returns:
            A rater that asks the rater model for one score per memory.
        """
        from ..methods import prompt_rater

        return prompt_rater(self.clients["rater"].complete)

    def keeper(self) -> Any:
        """The filter of the ``llm-filter`` baseline, over the rater model (one call per query).

        Returns:
            A keeper that asks the rater model which memories to keep.
        """
        from ..methods import prompt_keeper

        return prompt_keeper(self.clients["rater"].complete)

    def mode_identity(self) -> dict[str, Any]:
        """The judge mode and metadata keys, recorded in the manifest.

        Returns:
            ``{"judge": mode, "memory_metadata": [keys]}``.
        """
        identity: dict[str, Any] = {
            "judge": self.mode,
            "memory_metadata": list(self.metadata_keys),
        }
        if self.grade != "model":
            identity["grade"] = self.grade
        return identity

    def close(self) -> None:
        """Close the response cache."""
        self.gate.cache.close()


def _specs(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    from ..model_spec import TEXT_READER, ModelSpec

    agent = ModelSpec(
        name=args.agent_model,
        kwargs=_kwargs(args.agent_kwargs, "--agent-kwargs"),
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        temperature=args.agent_temperature,
        seed=seed,
        timeout=args.timeout,
    )
    if args.judge_model or args.judge_kwargs or args.judge_base_url:
        name = args.judge_model or args.agent_model
        judge = ModelSpec(
            name=name,
            kwargs=_kwargs(args.judge_kwargs, "--judge-kwargs"),
            # the offline stand-in is served by this process, never at the agent's endpoint
            base_url=args.judge_base_url
            if name == TEXT_READER
            else (args.judge_base_url or args.base_url),
            api_key_env=args.api_key_env,
            temperature=0.0,
            seed=seed,
            timeout=args.timeout,
        )
    else:
        judge = agent.model_copy(update={"temperature": 0.0})
    rater = judge
    if getattr(args, "rater_model", None):
        rater = ModelSpec(
            name=args.rater_model,
            base_url=args.rater_base_url or args.base_url,
            api_key_env=args.api_key_env,
            temperature=0.0,
            seed=seed,
            timeout=args.timeout,
        )
    return {"agent": agent, "judge": judge, "rater": rater}


def _check_simulated_flags(args: argparse.Namespace) -> JudgeMode:
    """The judge mode of a real run; ValueError for the simulation's own flags."""
    if getattr(args, "setting", None) or getattr(args, "temperature", None) is not None:
        raise ConfigurationError(
            "--setting and --temperature shape the simulated world; with --agent-model use "
            "--agent-temperature"
        )
    mode: JudgeMode = args.judge or "reference"
    if mode not in JUDGE_MODES:
        raise ConfigurationError(
            f"--judge {mode!r}: with real models the judge is one of {', '.join(JUDGE_MODES)} "
            "(simulated judges such as full:Q or noisy:E need the simulated world)"
        )
    return mode


def real_session(
    args: argparse.Namespace,
    *,
    seed: int,
    stand_in: bool = False,
    methods: tuple[str, ...] = (),
) -> RealSession:
    """The run's models behind one gate.

    ``stand_in`` replaces every model by the offline text-reading stand-in with an in-memory cache
    and no limits (the dry run).

    Args:
        args: The parsed ``meclear bench`` flags.
        seed: The run's seed (sent to models that honour one).
        stand_in: Use the offline stand-in for every model.
        methods: The methods of the run (a rater is built for ``llm-direct``).

    Returns:
        The session: model specs, clients, gate and backend.

    Raises:
        ConfigurationError: A real-model flag is not usable.
    """
    from ..model_spec import langchain_extra_missing

    try:
        from langchain_core.rate_limiters import InMemoryRateLimiter
    except ImportError as exc:
        raise langchain_extra_missing(exc) from exc

    from meclear_integrations.core.config import RetryPolicy

    from ..cache import ResponseCache, default_cache_path
    from ..model_client import CallGate, CallLimits, ModelClient
    from ..model_spec import TEXT_READER
    from ..real_backend import RealModelBackend

    mode = _check_simulated_flags(args)
    grade: Grade = getattr(args, "grade", None) or ("exact" if mode == "exact" else "model")
    if mode == "exact" and grade != "exact":
        raise ConfigurationError("--judge exact grades with exact match: drop --grade model")
    specs = _specs(args, seed)
    if stand_in:
        specs = {
            role: spec.model_copy(update={"name": TEXT_READER, "kwargs": {}, "base_url": None})
            for role, spec in specs.items()
        }
    if args.concurrency < 1:
        raise ConfigurationError("--concurrency must be at least 1")
    if stand_in or args.no_cache:
        cache = ResponseCache()
    else:
        cache = ResponseCache(args.cache or default_cache_path())
    limiter = None
    if args.rps is not None and not stand_in:
        if args.rps <= 0:
            raise ConfigurationError("--rps must be positive")
        limiter = InMemoryRateLimiter(
            requests_per_second=args.rps, check_every_n_seconds=0.01, max_bucket_size=1
        )
    limits = CallLimits() if stand_in else CallLimits(args.max_calls, args.max_tokens)
    if not 1 <= args.retries <= 20:
        raise ConfigurationError("--retries must be between 1 and 20")
    gate = CallGate(
        cache,
        limits=limits,
        concurrency=args.concurrency,
        rate_limiter=limiter,
        retry=RetryPolicy(max_attempts=args.retries, retry_unreadable=False),
    )
    structured = {"auto": None, "structured": True, "text": False}[args.judge_output]
    rated = any(m.split(":")[0] in ("llm-direct", "llm-filter") for m in methods)
    roles = ["agent", "judge"] + (["rater"] if rated else [])
    clients = {
        role: ModelClient(
            role,
            specs[role],
            gate,
            structured_output=structured if role == "judge" else False,
        )
        for role in roles
    }
    metadata = tuple(k.strip() for k in (args.memory_metadata or "").split(",") if k.strip())
    backend = RealModelBackend(
        clients["agent"], clients["judge"], mode=mode, metadata_keys=metadata, grade=grade
    )
    used = {role: specs[role] for role in roles}
    return RealSession(used, gate, clients, backend, mode, metadata, grade)
