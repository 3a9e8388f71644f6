"""``tools/sync_twins.py``: twin pairs, and ``--duplicated`` on small synthetic sources."""

from __future__ import annotations

import textwrap

import pytest

from tests.support.tools import loaded_tool

RAW_SHARE_LIMIT = 3.20
"""Percent of the package's lines that twin pairs may span (``tools/sync_twins.py``)."""
DUPLICATED_SHARE_LIMIT = 0.15
"""Percent of the package's lines that duplicated twin pairs may span (``--duplicated``)."""


@pytest.fixture(scope="module")
def tool():
    yield from loaded_tool("sync_twins")


def _pairs(tool, source: str) -> dict[tuple[str, str], object]:
    return {t.names: t for t in tool.twin_pairs(textwrap.dedent(source))}


REPEATED = '''
class Cache:
    def get(self, key):
        """Get it.

        Args:
            key: the key.
        """
        value = self._load(key)
        if value is None:
            value = self.compute(key)
            self._save(key, value)
        for hook in self.hooks:
            hook(key, value)
        with self.lock:
            self.hits += 1
        return value

    async def aget(self, key):
        """Async :meth:`get`."""
        value = await self._aload(key)
        if value is None:
            value = await asyncio.to_thread(self.compute, key)
            await self._asave(key, value)
        async for hook in self.ahooks():
            hook(key, value)
        async with self.lock:
            self.hits += 1
        return value
'''


def test_bodies_repeating_each_other_after_normalising_async_are_duplicated(tool) -> None:
    twin = _pairs(tool, REPEATED)["get", "aget"]
    sync, asynchronous = tool.normalised(twin.sync, twin.asynchronous)
    assert "await" not in asynchronous and "async" not in asynchronous
    assert "self._load(key)" in asynchronous  # self._aload renamed to its sync twin
    assert "self.compute(key)" in asynchronous  # the worker-thread hop is the plain call
    assert "Async" not in asynchronous and "Args" not in sync  # docstrings left out
    assert twin.similarity() > 0.9
    assert twin.duplicated()
    assert twin.lines == 15 + 11  # both definitions, docstrings included


def test_a_one_line_worker_thread_delegate_is_not_duplicated(tool) -> None:
    source = REPEATED.replace(
        REPEATED[REPEATED.index("    async def aget") :],
        '''    async def aget(self, key):
        """Async :meth:`get`."""
        return await asyncio.to_thread(self.get, key)
''',
    )
    twin = _pairs(tool, source)["get", "aget"]
    assert twin.similarity() < tool.THRESHOLD
    assert not twin.duplicated()


def test_twin_one_liners_and_step_drivers_are_not_duplicated_logic(tool) -> None:
    pairs = _pairs(
        tool,
        """
        def fetch(store, key):
            return store.fetch(key)

        async def afetch(store, key):
            return await store.afetch(key)

        def apply(ledger, store):
            adapter = adapter_for(store)
            plan = _plan(ledger, adapter)
            return run_steps(plan)

        async def aapply(ledger, store):
            adapter = adapter_for(store)
            plan = _plan(ledger, adapter)
            return await arun_steps(plan)
        """,
    )
    for names in [("fetch", "afetch"), ("apply", "aapply")]:
        assert pairs[names].similarity() == 1.0  # the same text once normalised ...
        assert not pairs[names].duplicated()  # ... but no logic to repeat
        assert pairs[names].duplicated(min_statements=1)


def test_different_bodies_are_not_duplicated(tool) -> None:
    pairs = _pairs(
        tool,
        """
        def run_sync(items):
            results = []
            for item in items:
                results.append(work(item))
            total = sum(results)
            return total

        async def run_async(items):
            tasks = [asyncio.ensure_future(awork(i)) for i in items]
            done, pending = await asyncio.wait(tasks)
            for task in pending:
                task.cancel()
            return sum(t.result() for t in done)
        """,
    )
    twin = pairs["run_sync", "run_async"]
    assert twin.similarity() < 0.6
    assert not twin.duplicated()
    assert twin.duplicated(threshold=0.0)


def test_twins_pair_only_within_one_class(tool) -> None:
    pairs = _pairs(
        tool,
        """
        class A:
            def get(self):
                return 1

        class B:
            async def aget(self):
                return 1

            def get(self):
                return 2
        """,
    )
    assert list(pairs) == [("get", "aget")]
    twin = pairs["get", "aget"]
    assert twin.sync.lineno > twin.asynchronous.lineno  # B's get, not A's


def test_main_duplicated_is_a_subset_of_all_pairs(tool, capsys) -> None:
    assert tool.main(["--under", "core/concurrency", "--list"]) == 0
    every = capsys.readouterr().out.splitlines()
    assert tool.main(["--under", "core/concurrency", "--list", "--duplicated"]) == 0
    duplicated = capsys.readouterr().out.splitlines()
    assert every[-1].split()[0].isdigit() and "twin pairs" in every[-1]
    assert "duplicated twin pairs" in duplicated[-1]
    assert set(duplicated[:-1]) <= set(every[:-1])
    assert int(duplicated[-1].split()[0]) <= int(every[-1].split()[0])


def test_the_package_twins_stay_within_the_ratchet(tool) -> None:
    """A ratchet: lower the limits when twins go, never raise them to let twins back in."""
    pairs, total = tool.tally()
    duplicated, same_total = tool.tally(duplicated=True)
    assert same_total == total
    assert tool.share(pairs, total) <= RAW_SHARE_LIMIT, pairs[:10]
    assert tool.share(duplicated, total) <= DUPLICATED_SHARE_LIMIT, duplicated
