"""Hierarchical attribution for large contexts: blocks, screening, then a reduced game.

Harm is sparse: of K retrieved memories a few contradict the answer and most are neutral
background (null players, psi_i = 0). Shapley values are unchanged when null players are
dropped, so the estimator spends its calls on finding the few players that matter and
then computes their values exactly on a small game. Three stages, each a batch (round):

1. **Blocks** (Owen's first level). The K memories are split into G blocks of near-equal
   size, similar memories in different blocks (:func:`..partition.spread_partition`: the
   evidence for an answer and the memories that contradict it are about the same thing).
   All 2^G unions of blocks are evaluated once: the exact block game. A union that passes
   the recovery predicate is an *anchor*: a context without harm. When no union recovers
   (the evidence shares a block with a contradiction), the memories are re-partitioned
   with former block mates pushed apart, up to ``attempts`` partitions, and then
   ``samples`` random coalitions are drawn (each memory kept with probability p in
   :data:`SAMPLE_KEEP`): blocks can hide a fault beside the evidence, single memories
   cannot. The largest recovering sample is the anchor and the rest of M is screened.
   When no sample recovers either, a small context (``fallback``: K up to
   :data:`FLAT_FALLBACK_MAX` in the factory) is attributed flat by KernelSHAP instead.
2. **Screening** (adaptive group testing). Every block outside the largest anchor, and
   every block whose exact block value is below -tau, is screened against the largest
   anchor that excludes it: the block is cut into ``branching`` contiguous sub-blocks in
   similarity order (:func:`..partition.similarity_order`, so repeated copies of one claim
   share a sub-block), and anchor + sub-block is evaluated for each. A sub-block that
   breaks the anchor is cut again, down to single memories: the *suspects* D. When a
   block breaks its anchor but none of its sub-blocks does, the harm needs two members
   together (joint harm): each sub-block is then tested by its absence, anchor + block
   minus the sub-block, and a sub-block whose absence recovers is screened against that
   context (which holds its partner). When a single suspect d is found, its partner may
   hide inside the anchor beside the evidence: parts of the anchor are tested by their
   absence from anchor + d (a part whose absence recovers holds the partner). Calls grow
   as |D| log(K / |D|), not as K.
3. **Reduced game**. Players: each suspect alone, and REST = M minus D as one player.
   Its Shapley values are computed exactly over the 2^(|D|+1) coalitions (Eq. 3) when
   |D| + 1 <= ``exact_players``, else by paired KernelSHAP over ``kernel_per_player``
   coalitions per player. The table holds M minus C for every C within D, so every
   clearance candidate within D is already evaluated once.

Reported contributions: a suspect's reduced-game value; every other memory the value of
the union it was attributed with, divided equally among its members (the Owen value with
that union's members treated as symmetric): REST's share, or, when no suspect was found,
its block's share. Intervals are points for exact tables. When no anchor is found at all
(partitions, samples, no flat fallback) the block values are reported; the engine's
escalation may still search.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
else:
    from ..lazy import np

from ..errors import ConfigurationError
from ..game import Coalition, CoalitionGame, from_positions, full, members
from ..grouping import answer_group
from ..partition import as_graph, similarity_order, spread_partition
from ..similarity_graph import SimilarityGraph
from .base import EstimatorSettings, ShapleyEstimate, ShapleyEstimator, SimilaritySource, run_rng
from .exact import exact_shapley
from .kernel import KernelShapley, kernel_budget

__all__ = ["FLAT_FALLBACK_MAX", "HierarchicalShapley", "ReducedGame"]


JobMode = Literal["add", "absence", "partner"]


@dataclass(slots=True)
class _Job:
    """Screen the memories of ``block`` against ``anchor``, cut into ``subs``.

    ``add``: ``anchor`` recovers and excludes the block; the test of a sub-block is anchor
    + sub-block (it fails when the sub-block holds harm). ``absence``: anchor + block fails
    although no sub-block alone breaks the anchor; the test is anchor + block minus the
    sub-block (it recovers when the sub-block holds a partner of joint harm). ``partner``:
    ``anchor`` is a failing context that holds every suspect and ``block`` lies inside it;
    the test is the context minus the sub-block (it recovers when the sub-block holds a
    partner without which the suspects are harmless).
    """

    anchor: Coalition
    block: Coalition
    subs: list[Coalition] = field(default_factory=list)
    mode: JobMode = "add"

    def tests(self) -> list[Coalition]:
        if self.mode == "absence":
            return [self.anchor | (self.block & ~s) for s in self.subs]
        if self.mode == "partner":
            return [self.anchor & ~s for s in self.subs]
        return [self.anchor | s for s in self.subs]


class ReducedGame:
    """The game over ``players`` (disjoint memory coalitions).

    The game over ``players`` (disjoint memory coalitions) read from a memory game:
    reduced coalition bit j stands for ``players[j]``.

    Args:
        game: the memory game.
        players: disjoint memory coalitions, one per player.
    """

    def __init__(self, game: CoalitionGame, players: Sequence[Coalition]) -> None:
        self.game = game
        self.players = list(players)

    @property
    def k(self) -> int:
        """The number of players."""
        return len(self.players)

    @property
    def full(self) -> Coalition:
        """The coalition of every player."""
        return full(self.k)

    def to_memories(self, coalition: Coalition) -> Coalition:
        """The memory coalition a player coalition stands for.

        Args:
            coalition: a coalition of players.

        Returns:
            The union of their memories.
        """
        out = 0
        for j in members(coalition):
            out |= self.players[j]
        return out

    def value(self, coalition: Coalition) -> float:
        """The value of the players' memories, read from the memory game.

        Args:
            coalition: a coalition of players.

        Returns:
            The mean score of the memory coalition.
        """
        return self.game.value(self.to_memories(coalition))


FLAT_FALLBACK_MAX = 24
"""Largest K whose context is attributed flat (KernelSHAP) when no anchor is found."""
SAMPLE_KEEP = ((0.5, 0.35, 0.25, 0.15), (0.35, 0.25, 0.15, 0.1), (0.25, 0.15, 0.1, 0.07))
"""Keep probabilities of the random anchor search, one tuple per round of ``samples``
coalitions (cycled within a round): a random coalition recovers with probability
p (1 - p)^r for one supporting memory and r faults, highest at p = 1 / (r + 1); each
round that finds no anchor makes many faults likelier, so the next one keeps fewer."""


class HierarchicalShapley(ShapleyEstimator):
    """Blocks, screening and a reduced game (see module docstring).

    Args:
        similarity: the K x K similarity between memories, or a callable computing it
            when attribution starts (None: blocks formed at random).
        threshold: the recovery predicate's score threshold; in a run, the
            configuration's ``success_threshold``.
        tau: the harm tolerance; in a run, ``harm_tolerance``.
        blocks: G, blocks of the first level.
        branching: sub-blocks per cut when a block is screened.
        attempts: block partitions tried to find an anchor.
        samples: random coalitions evaluated when no union of blocks recovers (0: none).
        exact_players: the reduced game is enumerated up to this many players.
        kernel_per_player: coalitions per player of a sampled reduced game.
        fallback: the flat KernelSHAP run when no anchor is found (in a run: only for K
            up to :data:`FLAT_FALLBACK_MAX`; None: no flat fallback).
        seed: seed of the partitions and samples (None: the run's generator).
        rng: the generator to draw from (overrides ``seed``).

    Example:
        >>> from meclear_integrations.core import ClearanceConfig
        >>> from meclear_integrations.core.estimators.hierarchical import HierarchicalShapley
        >>> from meclear_integrations.core.estimators.kernel import KernelShapley
        >>> estimator = HierarchicalShapley(blocks=4, fallback=KernelShapley())
        >>> ClearanceConfig(estimator=estimator).estimator_name
        'hierarchical'
    """

    name = "hierarchical"
    memory_loo = False
    """The engine does not evaluate every leave-one-out coalition first (K calls)."""

    def __init__(
        self,
        *,
        similarity: np.ndarray | SimilarityGraph | SimilaritySource | None = None,
        threshold: float = 1.0,
        tau: float = 0.05,
        blocks: int = 5,
        branching: int = 4,
        attempts: int = 1,
        samples: int = 32,
        exact_players: int = 5,
        kernel_per_player: float = 6.0,
        fallback: KernelShapley | None = None,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.seed = seed
        self._similarity_source = similarity
        self.similarity = SimilarityGraph.from_dense(np.zeros((0, 0)))
        """Similarity between memories (computed when attribution starts; sparse)."""
        self.threshold = threshold
        self.tau = tau
        self.n_blocks = blocks
        self.branching = max(2, branching)
        self.attempts = max(1, attempts)
        self.samples = samples
        self.exact_players = exact_players
        self.kernel_per_player = kernel_per_player
        self.fallback = fallback
        """Flat KernelSHAP over every memory, run when no anchor is found (small K)."""
        self.used_fallback = False
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.k = 0
        self.partitions: list[list[Coalition]] = []
        """Every block partition tried, in order (the last one is in use)."""
        self.anchor: Coalition | None = None
        """The largest recovering union of blocks (None: none found)."""
        self.suspects: list[int] = []
        """Positions whose presence broke an anchor (the reduced game's single players)."""
        self.reduced: ReducedGame | None = None
        self._jobs: list[_Job] = []
        self._stage = "blocks"
        self._kernel: KernelShapley | None = None
        self._sampled: list[Coalition] = []
        self._rounds = 0
        self.group: Coalition = 0
        """The answer group attributed as one player (0: none; ``core.grouping``)."""

    def for_context(
        self,
        k: int,
        *,
        config: EstimatorSettings,
        rng: np.random.Generator,
        similarity: SimilaritySource | None = None,
    ) -> HierarchicalShapley:
        """A fresh estimator for one run (see :class:`~.base.Estimator`).

        Args:
            k: the number of memories (a flat fallback only up to
                :data:`FLAT_FALLBACK_MAX`).
            config: the run's settings (``success_threshold``, ``harm_tolerance``).
            rng: the run's generator (used unless ``seed`` is set).
            similarity: the memories' similarity (overrides this one's).

        Returns:
            An estimator with nothing evaluated yet.
        """
        drawn = run_rng(self.seed, rng)
        size = k or 1
        return HierarchicalShapley(
            similarity=similarity if similarity is not None else self._similarity_source,
            threshold=config.verification.success_threshold,
            tau=config.harm_tolerance,
            blocks=self.n_blocks,
            branching=self.branching,
            attempts=self.attempts,
            samples=self.samples,
            exact_players=self.exact_players,
            kernel_per_player=self.kernel_per_player,
            fallback=self.fallback.for_context(size, config=config, rng=drawn)
            if self.fallback is not None and size <= FLAT_FALLBACK_MAX
            else None,
            rng=drawn,
        )

    def settings(self) -> dict[str, Any]:
        """The estimator's settings (see :class:`~.base.Estimator`).

        Returns:
            ``{"name": "hierarchical", "blocks": G, ...}``.
        """
        return {
            "name": self.name,
            "blocks": self.n_blocks,
            "branching": self.branching,
            "attempts": self.attempts,
            "samples": self.samples,
            "exact_players": self.exact_players,
            "kernel_per_player": self.kernel_per_player,
            "fallback": None if self.fallback is None else self.fallback.settings(),
            "seed": self.seed,
        }

    # ------------------------------------------------------------------ blocks
    @property
    def blocks(self) -> list[Coalition]:
        """The blocks of the partition in use."""
        return self.partitions[-1] if self.partitions else []

    def _partition(self) -> list[Coalition]:
        apart = [self._labels(partition, range(self.k)) for partition in self.partitions]
        positions = spread_partition(self.similarity, self.n_blocks, self.rng, apart=apart)
        blocks = [from_positions(b) for b in positions]
        self.partitions.append(blocks)
        return blocks

    def leave_one_block_out(self) -> list[Coalition]:
        """The unions of every block but one (planned by :meth:`plan`), one per block.

        Returns:
            The unions, in block order (empty before :meth:`plan`).
        """
        g = len(self.blocks)
        return [self._union(((1 << g) - 1) ^ (1 << b)) for b in range(g)]

    def _unions(self) -> list[Coalition]:
        return [self._union(u) for u in range(1 << len(self.blocks))]

    def _union(self, mask: int) -> Coalition:
        out = 0
        for j in members(mask):
            out |= self.blocks[j]
        return out

    def plan(self, k: int) -> list[Coalition]:
        """The first level: every union of the blocks.

        Args:
            k: the number of memories.

        Returns:
            The 2^G unions of blocks.
        """
        self.k = k
        source = self._similarity_source
        given = source() if callable(source) else source
        if given is None:
            self.similarity = SimilarityGraph.from_dense(np.zeros((k, k)))
        elif isinstance(given, SimilarityGraph):
            self.similarity = given
        else:
            dense = np.asarray(given, dtype=float)
            if dense.shape != (k, k):
                raise ConfigurationError(f"similarity must be {k} x {k}, got {dense.shape}")
            self.similarity = as_graph(dense)
        if self.similarity.shape != (k, k):
            raise ConfigurationError(f"similarity must be {k} x {k}, got {self.similarity.shape}")
        self.partitions, self.suspects, self._jobs = [], [], []
        self.anchor, self.reduced, self._kernel, self._stage = None, None, None, "blocks"
        self._sampled, self._rounds = [], 0
        self.used_fallback = False
        self.group = 0
        self._partition()
        return self._unions()

    def _block_values(self, game: CoalitionGame) -> np.ndarray:
        g = len(self.blocks)
        table = np.array([game.value(self._union(u)) for u in range(1 << g)])
        return exact_shapley(table, g)

    def _screening_jobs(self, game: CoalitionGame) -> list[_Job]:
        """Jobs for the blocks outside the largest anchor or below -tau (step 2)."""
        g = len(self.blocks)
        recovering = [u for u in range(1 << g) if game.recovers(self._union(u), self.threshold)]
        if not recovering:
            return []

        def size(u: int) -> tuple[int, int]:
            return (self._union(u).bit_count(), -u)

        best = max(recovering, key=size)
        self.anchor = self._union(best)
        psi = self._block_values(game)
        harmful = [b for b in range(g) if not best >> b & 1 or psi[b] < -self.tau]
        by_anchor: dict[Coalition, Coalition] = {}
        for b in harmful:
            excluding = [u for u in recovering if not u >> b & 1]
            if excluding:
                anchor = self._union(max(excluding, key=size))
                by_anchor[anchor] = by_anchor.get(anchor, 0) | self.blocks[b]
        return [self._split(_Job(anchor, block)) for anchor, block in by_anchor.items()]

    # ------------------------------------------------------------------ screening
    def _split(self, job: _Job, parts: int | None = None) -> _Job:
        """Cut the job's block into sub-blocks along the similarity order.

        Cut the job's block: contiguous runs of the similarity order (copies of one
        claim together) for screening, spread blocks (look-alikes apart: the evidence
        beside its partner fault) for the partner search.
        """
        positions = list(members(job.block))
        parts = min(parts or self.branching, len(positions))
        if job.mode == "partner":
            sub = self.similarity.restrict(positions)
            apart = [self._labels(self.blocks, positions)]
            groups = spread_partition(sub, parts, self.rng, apart=apart)
            job.subs = [from_positions(positions[j] for j in g) for g in groups]
            return job
        order = similarity_order(positions, self.similarity)
        bounds = np.linspace(0, len(order), parts + 1).round().astype(int)
        job.subs = [from_positions(order[a:b]) for a, b in pairwise(bounds)]
        return job

    @staticmethod
    def _labels(partition: Sequence[Coalition], positions: Sequence[int]) -> list[int]:
        """Each of ``positions``' block in ``partition`` (a distinct label when in none).

        Memories sharing a label are kept apart by the next spread partition (the partner
        of joint harm hides in the evidence's block: split them apart).
        """
        block_of = {i: b for b, block in enumerate(partition) for i in members(block)}
        return [block_of.get(i, -1 - n) for n, i in enumerate(positions)]

    def _advance(self, game: CoalitionGame, job: _Job) -> list[_Job]:
        """Read one job's tests; the jobs that follow from them."""
        passed = [game.recovers(t, self.threshold) for t in job.tests()]
        found: list[_Job]
        if job.mode == "add":
            dirty = [sub for sub, ok in zip(job.subs, passed, strict=True) if not ok]
            if not dirty and len(job.subs) > 1:  # harm needs members of two sub-blocks
                return [_Job(job.anchor, job.block, list(job.subs), mode="absence")]
            found = [_Job(job.anchor, sub) for sub in dirty]
        elif job.mode == "absence":  # the recovering context holds the sub's partner
            found = [
                _Job(test, sub)
                for sub, test, ok in zip(job.subs, job.tests(), passed, strict=True)
                if ok
            ]
        else:
            found = [
                _Job(job.anchor, sub, mode="partner")
                for sub, ok in zip(job.subs, passed, strict=True)
                if ok
            ]
        out: list[_Job] = []
        for nxt in found:
            if nxt.block.bit_count() == 1:
                self.suspects.append(nxt.block.bit_length() - 1)
            else:
                out.append(self._split(nxt))
        return out

    def _partner_job(self) -> list[_Job]:
        """Jobs that look for a suspect's partner inside the anchor.

        Joint harm whose partner sits inside the anchor (in the evidence's block): with
        a single suspect d, the context anchor + d fails; a part of the anchor whose
        absence makes it recover holds a partner of d (step 2, last rounds). The first
        cut is twice as fine as screening cuts, blockmates apart, so that the partner
        rarely shares a part with the evidence. (With several suspects the search is
        skipped: a partner of one hides behind the others.)
        """
        if self.anchor is None or len(set(self.suspects)) != 1 or self.anchor.bit_count() < 2:
            return []
        context = self.anchor | from_positions(self.suspects)
        job = _Job(context, self.anchor, mode="partner")
        return [self._split(job, parts=2 * self.branching)]

    # ------------------------------------------------------------------ answer group
    def _group_stage(self, game: CoalitionGame) -> str:
        """``"group"`` when the table names an answer group to try as one player.

        No union of blocks recovered. When the memories that alone give the failing
        answer are known (``core.grouping.answer_group``: the run asked them alone, e.g.
        by group tests after the screening batch failed everywhere with that answer), they
        are redundant copies of one harm that every block holds some of: the context
        without all of them (one leave-group-out) is tried as the anchor before more
        partitions or random samples.
        """
        group = from_positions(answer_group(game, self.threshold))
        if not group or group == full(self.k):
            return "blocks"
        self.group = group
        return "group"

    def _without_group(self) -> Coalition:
        return full(self.k) & ~self.group

    def _group_anchor(self, game: CoalitionGame) -> bool:
        """Whether the context without the answer group recovers (then it is the anchor).

        The group is then one suspect player: screened, attributed and verified together.
        """
        rest = self._without_group()
        if game.trials_of(rest) == 0 or not game.recovers(rest, self.threshold):
            self.group = 0
            return False
        self.anchor = rest
        self.suspects = list(members(self.group))
        self._jobs = []
        return True

    # ------------------------------------------------------------------ reduced game
    def _reduced_plan(self, game: CoalitionGame) -> list[Coalition]:
        suspects = sorted(set(self.suspects))
        self.suspects = suspects
        if not suspects:
            return []
        rest = full(self.k) & ~from_positions(suspects)
        grouped = [self.group] if self.group else []
        players = (
            grouped
            + [1 << i for i in suspects if not self.group >> i & 1]
            + ([rest] if rest else [])
        )
        self.reduced = ReducedGame(game, players)
        n = len(players)
        if n <= self.exact_players:
            return [self.reduced.to_memories(c) for c in range(1 << n)]
        budget = kernel_budget(n, self.kernel_per_player)
        self._kernel = KernelShapley(budget=budget, rng=self.rng)
        return [self.reduced.to_memories(c) for c in self._kernel.plan(n)]

    # ------------------------------------------------------------------ protocol
    def _draw_samples(self) -> list[Coalition]:
        """Random coalitions for the anchor search.

        Random coalitions, each memory kept with probability p cycling through
        ``SAMPLE_KEEP`` (no single p suits every number of faults and supporting memories).
        """
        everything = full(self.k)
        out: list[Coalition] = []
        schedule = SAMPLE_KEEP[min(self._rounds, len(SAMPLE_KEEP)) - 1]
        for n in range(self.samples):
            keep = schedule[n % len(schedule)]
            mask = from_positions(np.flatnonzero(self.rng.random(self.k) < keep).tolist())
            if 0 < mask < everything:
                out.append(mask)
        return out

    def _sampled_jobs(self, game: CoalitionGame) -> list[_Job]:
        recovering = [c for c in self._sampled if game.recovers(c, self.threshold)]
        if not recovering:
            return []
        self.anchor = max(recovering, key=lambda c: (c.bit_count(), -c))
        return [self._split(_Job(self.anchor, full(self.k) & ~self.anchor))]

    def _screening_tests(self) -> list[Coalition]:
        return [t for job in self._jobs for t in job.tests()]

    def extend(self, game: CoalitionGame) -> list[Coalition]:
        """The next round: more partitions, samples, screening cuts or the reduced game.

        Args:
            game: the coalition table with the rounds so far evaluated.

        Returns:
            More coalitions; empty when the estimate is final.
        """
        stage = self._stage
        if stage in ("blocks", "group"):
            if stage == "blocks":
                self._jobs = self._screening_jobs(game)
                stage = self._group_stage(game) if self.anchor is None else stage
                if stage == "group" and game.trials_of(self._without_group()) == 0:
                    self._stage = "group"
                    return [self._without_group()]  # one leave-group-out
            if stage == "group" and self._group_anchor(game):
                self._stage = "done"
                return self._reduced_plan(game)
            if self.anchor is None and len(self.partitions) < min(self.attempts, self.k):
                self._partition()
                return self._unions()
            stage = "screening"
            if self.anchor is None and self.samples > 0:
                return self._sample_round()
            if self.anchor is None and self.fallback is not None:
                return self._flat_fallback()
        elif stage == "sampling":
            self._jobs = self._sampled_jobs(game)
            if self.anchor is None and self._rounds < len(SAMPLE_KEEP):
                return self._sample_round()
            if self.anchor is None and self.fallback is not None:
                return self._flat_fallback()
            stage = "screening"
        elif stage in ("screening", "partners"):
            self._jobs = [nxt for job in self._jobs for nxt in self._advance(game, job)]
        if stage == "screening" and not self._jobs:
            self._jobs, stage = self._partner_job(), "partners"
        if stage in ("screening", "partners") and self._jobs:
            self._stage = stage
            return self._screening_tests()
        if stage != "done" and self.reduced is None:
            self._stage = "done"
            return self._reduced_plan(game)
        self._stage = "done"
        return []

    def _flat_fallback(self) -> list[Coalition]:
        assert self.fallback is not None
        self._stage, self.used_fallback = "done", True
        return self.fallback.plan(self.k)

    def _sample_round(self) -> list[Coalition]:
        self._stage = "sampling"
        self._rounds += 1
        fresh = self._draw_samples()
        self._sampled += fresh
        return fresh

    def estimate(self, game: CoalitionGame) -> ShapleyEstimate:
        """Psi from the reduced game, shared out to the memories (module docstring).

        Args:
            game: the coalition table with every round evaluated.

        Returns:
            The contributions and their intervals.
        """
        if self.used_fallback and self.fallback is not None:
            return self.fallback.estimate(game)
        k = game.k
        values = np.zeros(k)
        lower = np.zeros(k)
        upper = np.zeros(k)
        if self.reduced is None:
            for block, psi in zip(self.blocks, self._block_values(game), strict=True):
                share = psi / block.bit_count()
                for i in members(block):
                    values[i] = lower[i] = upper[i] = share
            return ShapleyEstimate(values=values, lower=lower, upper=upper)
        reduced = self.reduced
        if self._kernel is None:
            table = np.array([reduced.value(c) for c in range(1 << reduced.k)])
            psi = exact_shapley(table, reduced.k)
            estimate = ShapleyEstimate(values=psi, lower=psi.copy(), upper=psi.copy())
        else:
            estimate = self._kernel.estimate(reduced)  # type: ignore[arg-type]
        for j, player in enumerate(reduced.players):
            n = player.bit_count()
            for i in members(player):
                values[i] = estimate.values[j] / n
                lower[i] = estimate.lower[j] / n
                upper[i] = estimate.upper[j] / n
        return ShapleyEstimate(values=values, lower=lower, upper=upper)

    @property
    def reduced_exact(self) -> bool:
        """The reduced game was enumerated (not sampled)."""
        return self.reduced is not None and self._kernel is None

    def describe(self) -> dict[str, object]:
        """What the estimator did, for the attribution event (positions, not ids).

        Returns:
            Partitions and samples tried, blocks, anchor size, suspects, reduced game.
        """
        return {
            "partitions": len(self.partitions),
            "samples": len(self._sampled),
            "blocks": [list(members(b)) for b in self.blocks],
            "anchor_size": None if self.anchor is None else self.anchor.bit_count(),
            "suspects": list(self.suspects),
            "reduced_players": 0 if self.reduced is None else self.reduced.k,
            "reduced_exact": self._kernel is None,
            "answer_group_player": self.group.bit_count(),
            "flat_fallback": self.used_fallback,
        }
