"""Riffle's merge policies, as pure functions: which map outputs are merged together.

This is the model of what the driver-side scheduler (``RiffleScheduler.java``)
does while a map stage runs; the JVM applies the same rules to the same
inputs (map outputs of one shuffle on one host, or one executor, in the order
the driver learns of them), and a test checks that both produce the same groups. Keeping
the rules here lets users and benchmarks predict merges and read counts
without running Spark.

Rules (thesis §3.3 and our resolutions of its gaps, spec §7):

* Scope ``host`` (the default, thesis §3.5's per-node merger): outputs of all
  executors on one host queue together; ``executor``: each executor's alone.
  An output whose host is unknown queues with its executor.
* An output of zero bytes is never merged (readers never fetch it).
* ``fanin`` (N-way): whenever N outputs are pending on an executor, the first
  N form a merge.
* ``blocksize``: an output whose own average block (bytes / partitions) is
  already at least the target is never merged (nothing to gain). Others wait
  until the sum of their average block sizes reaches the target, or until
  ``max_fan_in`` are pending, and then all pending ones form a merge.
* At the end of the map stage, leftovers (fewer than N, or a sum below the
  target) are merged if there are at least two and the best-effort fraction has
  not been reached yet; otherwise they stay unmerged.
"""

from __future__ import annotations

from dataclasses import dataclass

POLICIES = ("fanin", "blocksize")
SCOPES = ("host", "executor")


@dataclass(frozen=True)
class MapOutput:
    """One committed map output, as the scheduler knows it (``host`` None: unknown)."""

    map_index: int
    map_id: int
    executor: str
    bytes: int
    partitions: int
    host: str | None = None

    @property
    def average_block(self) -> float:
        return self.bytes / self.partitions if self.partitions else 0.0


@dataclass(frozen=True)
class MergePolicy:
    """The rule that groups map outputs into merges (see the module docstring).

    Parameters
    ----------
    kind : {"fanin", "blocksize"}
    fan_in : int, default=10
        N of the N-way policy.
    target_block_bytes : int, default=2 MiB
        B of the block-size policy.
    max_fan_in : int, default=100
        Most inputs in one merge of the block-size policy (bounds merger memory).
    scope : {"host", "executor"}, default="host"
        Whose outputs queue together: all executors of a host, or each executor alone.
    """

    kind: str = "fanin"
    fan_in: int = 10
    target_block_bytes: int = 2 << 20
    max_fan_in: int = 100
    scope: str = "host"

    def __post_init__(self):
        if self.kind not in POLICIES:
            raise ValueError(f"kind must be one of {POLICIES}, got {self.kind!r}")
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, got {self.scope!r}")
        if self.fan_in < 2 or self.max_fan_in < 2 or self.target_block_bytes < 1:
            raise ValueError("fan_in and max_fan_in must be >= 2 and target_block_bytes >= 1")

    def admits(self, output: MapOutput) -> bool:
        """Whether ``output`` may be merged at all."""
        return self.kind == "fanin" or output.average_block < self.target_block_bytes

    def queue(self, output: MapOutput) -> str:
        """The queue ``output`` waits in, with the outputs it may be merged with."""
        if self.scope == "host" and output.host is not None:
            return f"host {output.host}"
        return f"executor {output.executor}"

    def ready_groups(self, pending: list[MapOutput]) -> list[list[MapOutput]]:
        """Remove and return the groups to merge now from ``pending`` (one queue, oldest first)."""
        groups = []
        if self.kind == "fanin":
            while len(pending) >= self.fan_in:
                groups.append(pending[:self.fan_in])
                del pending[:self.fan_in]
        elif pending and (sum(o.average_block for o in pending) >= self.target_block_bytes
                          or len(pending) >= self.max_fan_in):
            groups.append(pending[:self.max_fan_in])
            del pending[:self.max_fan_in]
        return groups


def plan_merges(outputs: list[MapOutput], policy: MergePolicy, *, merge_leftovers: bool = True,
                best_effort: float = 1.0) -> list[list[MapOutput]]:
    """Groups the scheduler forms for ``outputs`` (in arrival order), assuming every merge completes.

    Parameters
    ----------
    outputs : list of MapOutput
        All map outputs of one shuffle, in the order the driver learns of them.
    policy : MergePolicy
    merge_leftovers : bool, default=True
        Merge the remainder at the end of the map stage (see the module docstring).
    best_effort : float, default=1.0
        Fraction of outputs merged after which leftovers are not worth merging.
    """
    pending: dict[str, list[MapOutput]] = {}
    groups: list[list[MapOutput]] = []
    for output in outputs:
        if output.bytes == 0 or not policy.admits(output):
            continue
        queue = pending.setdefault(policy.queue(output), [])
        queue.append(output)
        groups += policy.ready_groups(queue)
    if merge_leftovers:
        for queue in pending.values():
            merged = sum(len(g) for g in groups)
            if len(queue) >= 2 and merged < best_effort * len(outputs):
                groups.append(queue[:policy.max_fan_in] if policy.kind == "blocksize" else list(queue))
    return groups


def reads_per_reducer(outputs: list[MapOutput], groups: list[list[MapOutput]]) -> int:
    """Blocks one reducer fetches when every partition is non-empty: one per merge plus one per unmerged output."""
    merged = sum(len(g) for g in groups)
    return len(groups) + len(outputs) - merged
