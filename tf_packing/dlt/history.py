"""Rotary-DLT's history repository: finished training jobs, for the estimators of jobs like them.

Each finished job leaves one JSON line: its model kind (what "similar" means: the same architecture
family on the same data), batch size, the memory it was measured to need, its validation accuracy after
each epoch and the seconds each epoch took. The training-epoch estimator reads the accuracy curves of
similar past jobs, the memory estimator their batch-size-memory pairs, the epoch-time recorder their
epoch times. A line that is not such a record is refused naming the file and the line.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path


class HistoryError(ValueError):
    """A history file holds something other than Rotary-DLT job records; the message names the line."""


@dataclass(frozen=True)
class JobRecord:
    kind: str
    batch_size: int
    memory_bytes: float
    accuracies: list = field(default_factory=list)  # validation accuracy after each epoch
    epoch_s: list = field(default_factory=list)  # seconds each epoch took


class History:
    """Finished jobs in memory (starting from ``records``), appended to ``path`` (JSON lines) when one is given."""

    def __init__(self, path: str | Path | None = None, records=()):
        self.path = None if path is None else Path(path)
        self.records: list[JobRecord] = list(records)
        if self.path is not None and self.path.exists():
            for n, line in enumerate(self.path.read_text().splitlines(), start=1):
                if line.strip():
                    self.records.append(_record(line, f"{self.path}:{n}"))

    def add(self, record: JobRecord) -> None:
        self.records.append(record)
        if self.path is not None:
            with self.path.open("a") as f:
                f.write(json.dumps(asdict(record)) + "\n")

    def similar(self, kind: str) -> list[JobRecord]:
        return [r for r in self.records if r.kind == kind]


def _record(line: str, where: str) -> JobRecord:
    try:
        raw = json.loads(line)
        record = JobRecord(kind=str(raw["kind"]), batch_size=int(raw["batch_size"]),
                           memory_bytes=float(raw["memory_bytes"]), accuracies=[float(a) for a in raw["accuracies"]],
                           epoch_s=[float(s) for s in raw["epoch_s"]])
    except (ValueError, KeyError, TypeError) as e:
        raise HistoryError(f"{where} is not a Rotary-DLT job record ({type(e).__name__}: {e}). Each line needs "
                           "kind, batch_size, memory_bytes, accuracies and epoch_s; remove the line or the file.") from None
    if record.batch_size < 1 or not all(math.isfinite(v) for v in [record.memory_bytes, *record.accuracies,
                                                                   *record.epoch_s]):
        raise HistoryError(f"{where} holds a batch size below 1 or a non-finite number; remove the line.")
    return record
