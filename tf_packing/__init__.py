"""Repack: packed training of several Keras models on one device, and pack-aware Hyperband.

``pack([model_a, model_b])`` trains compiled Keras models together from one
shared input stream with one fused step, each with its own loss, optimizer,
learning rate and batch size (pad/slice), while keeping exactly the weights and
loss curve each would have alone. ``Tuner`` runs Hyperband with its trials
packed into memory-feasible groups.
"""

from .batching import BatchPlanner, StepPlan, steps_per_epoch
from .checkpoint import MemberCheckpoint, free, load
from .pack import Member, PackedModel, pack

__all__ = ["BatchPlanner", "Member", "MemberCheckpoint", "PackedModel", "StepPlan", "free", "load", "pack",
           "steps_per_epoch"]
