"""Failures retrying cannot heal raise on the first query; transient ones fail open and
warn once per reason per component instance. Real provider clients (ChatOpenAI, LlamaIndex
OpenAI) against stubs on 127.0.0.1, LangChain and LlamaIndex, sync and async."""

from __future__ import annotations

import warnings

import pytest

from meclear_integrations.core.failures.alerts import FailOpenWarning
from meclear_integrations.core.failures.kind import PermanentFailureError
from meclear_integrations.simulation import redundant_harm_example
from tests.support.fault_stubs import COMPONENTS, FaultStub, ids, meta
from tests.support.servers import OpenAIStub, serve

FAST = {"failure": {"retry": {"initial_backoff": 0.0, "jitter": 0.0}}}
FRAMEWORKS = list(COMPONENTS)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(
    ("mode", "detail", "fix"),
    [
        ("401", "auth", "api_key"),
        ("404", "not_found", "base_url"),
        ("garbage", "bad_endpoint", "base_url"),
    ],
)
@pytest.mark.parametrize("on_failure", ["open", "closed"])
async def test_bad_credentials_or_url_raise_on_the_first_query(
    framework: str, asynchronous: bool, mode: str, detail: str, fix: str, on_failure: str
) -> None:
    case = redundant_harm_example()
    stub = FaultStub(mode)
    with serve(stub) as url:
        run = COMPONENTS[framework](url, case, clearance=FAST, on_failure=on_failure)
        if mode == "garbage":  # a page on the first calls: loud by the second query
            error = await _loud_within_two_queries(run, asynchronous)
        else:
            with pytest.raises(PermanentFailureError) as info:
                await run(asynchronous)
            error = info.value
    assert error.kind_detail == detail and fix in str(error)
    assert "sk-test-abcdefghijklmnop" not in str(error)
    assert stub.requests <= (6 if mode == "garbage" else 3)  # never retried by the engine


async def _loud_within_two_queries(run, asynchronous: bool) -> PermanentFailureError:  # type: ignore[no-untyped-def]
    """An HTML page where the API should be: the first query may fail open (a proxy's
    passing page), the second at the latest raises, naming base_url."""
    for _ in range(2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FailOpenWarning)
                await run(asynchronous)
        except PermanentFailureError as exc:
            return exc
        except Exception:  # on_failure="closed": the first page raises as it came
            continue
    raise AssertionError("an HTML endpoint did not raise within two queries")


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_bug_in_the_users_judge_raises(framework: str, asynchronous: bool) -> None:
    case = redundant_harm_example()

    def judge(question: str, answer: str, **kwargs: object) -> float:
        return answer.score  # type: ignore[attr-defined]  # the bug: str has no .score

    with serve(OpenAIStub.for_case(case)) as url:
        run = COMPONENTS[framework](url, case, judge=judge)
        with pytest.raises(PermanentFailureError, match="AttributeError") as info:
            await run(asynchronous)
    assert info.value.role == "judge" and info.value.kind_detail == "user_code"
    assert "judge=" in str(info.value)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("mode", ["dead", "broken"])
async def test_transient_failures_fail_open_and_warn_once_per_instance(
    framework: str, asynchronous: bool, mode: str
) -> None:
    case = redundant_harm_example()
    with serve(FaultStub(mode)) as url:
        run = COMPONENTS[framework](url, case, clearance=FAST)
        with pytest.warns(FailOpenWarning, match="failed open") as first:
            out = await run(asynchronous)
        with warnings.catch_warnings(record=True) as second:
            warnings.simplefilter("always")
            again = await run(asynchronous)
    assert ids(out) == ids(again) == [m.id for m in case.memories]
    assert all(meta(d)["status"] == "failed" for d in out)
    assert len([w for w in first if issubclass(w.category, FailOpenWarning)]) == 1
    assert not [w for w in second if issubclass(w.category, FailOpenWarning)]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_fail_open_warnings_can_be_escalated(framework: str) -> None:
    case = redundant_harm_example()
    with serve(FaultStub("dead")) as url:
        run = COMPONENTS[framework](url, case, clearance=FAST)
        with warnings.catch_warnings():
            warnings.filterwarnings("error", category=FailOpenWarning)
            with pytest.raises(FailOpenWarning):
                import asyncio

                asyncio.run(run(False))
