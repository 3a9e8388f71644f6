"""Shared test support: fakes, scripted models, stub servers, clocks and fixtures.

One home for what several test modules use (import from here, never from another test
module or conftest):

- ``env``: the provider / tracing variables every hermetic test clears.
- ``clocks``: a settable epoch clock and a one-second-per-reading datetime clock.
- ``postgres``: a fresh PostgreSQL database per test (``MECLEAR_TEST_POSTGRES_URL``).
- ``callbacks``: LangChain handlers that collect custom-event payloads.
- ``timing``: same-run baselines for timing assertions on a loaded machine.
- ``games``: value-function games with known Shapley values, a counting evaluator.
- ``faults``: scripted evaluators failing on chosen calls, provider-shaped HTTP errors.
- ``chat``: a scripted LangChain chat model (the simulated world, faults on chosen calls).
- ``text_models``: scripted text / structured models for the judges.
- ``stage_models``: the scripted per-stage admission model.
- ``honest_judge``: the hostile-memory suite's honest judge and obeying agent.
- ``slow_models``: sync-only models that block or never return.
- ``stale_city``: the reference-free "stale city" scenario (agent, judge, LlamaIndex LLM).
- ``ledger``: small contexts with known harm for ledger tests.
- ``progress``: checks of the progress-event stream.
- ``servers``: stub HTTP servers on 127.0.0.1 (OpenAI-compatible, LangSmith recorder).
- ``fault_stubs``: OpenAI-compatible stubs failing the way live providers do.
"""
