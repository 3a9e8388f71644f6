"""The coalition lookups (``CoalitionGame.memories_of``, ``coalitions.members``) against the
naive bit-by-bit walk, on random masks up to K = 2,000."""

from __future__ import annotations

import random

import pytest

from meclear_integrations.core.game import CoalitionGame, members
from meclear_integrations.core.memory import Memory


def _naive_positions(coalition: int, k: int) -> list[int]:
    return [i for i in range(k) if coalition >> i & 1]


def _masks(k: int, rng: random.Random) -> list[int]:
    whole = (1 << k) - 1
    masks = [0, whole, 1, 1 << (k - 1)]
    masks += [rng.getrandbits(k) for _ in range(20)]  # about half the memories
    masks += [whole ^ (1 << rng.randrange(k)) for _ in range(10)]  # leave-one-out
    masks += [sum(1 << i for i in rng.sample(range(k), min(k, 5))) for _ in range(10)]  # sparse
    masks += [whole & ~sum(1 << i for i in rng.sample(range(k), min(k, 9))) for _ in range(10)]
    masks += [((1 << rng.randrange(1, k + 1)) - 1) << rng.randrange(k) & whole for _ in range(10)]
    return masks


@pytest.mark.parametrize("k", [1, 3, 8, 9, 63, 64, 65, 100, 257, 1000, 2000])
def test_memories_of_matches_the_naive_walk(k: int) -> None:
    rng = random.Random(k)
    context = tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(k))
    game = CoalitionGame(context=context, trials=1)
    for _ in range(2):  # the second pass reads the filled tables
        for mask in _masks(k, rng):
            expected = tuple(context[i] for i in _naive_positions(mask, k))
            got = game.memories_of(mask)
            assert got == expected
            assert isinstance(got, tuple)
            assert all(a is b for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize("k", [1, 8, 64, 65, 1000, 2000])
def test_memories_of_ignores_bits_beyond_k(k: int) -> None:
    context = tuple(Memory(id=f"m{i}", content=f"memory {i}") for i in range(k))
    game = CoalitionGame(context=context, trials=1)
    mask = random.Random(k).getrandbits(k)
    assert game.memories_of(mask | 1 << k | 1 << (k + 9)) == game.memories_of(mask)


@pytest.mark.parametrize("k", [1, 7, 64, 65, 100, 1000, 2000])
def test_members_matches_the_naive_walk(k: int) -> None:
    rng = random.Random(1000 + k)
    for mask in _masks(k, rng):
        assert list(members(mask)) == _naive_positions(mask, k)
