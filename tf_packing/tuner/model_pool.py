"""Built models kept between packs, so a trial of a known architecture reuses a traced model.

Tracing is most of a small trial's cost: on digits a pack of six members traces
its step in 1.4 s and then trains an epoch in 0.1 s. A Hyperband search builds
hundreds of trials but few *architectures*: in Keras Tuner's usual spaces the
learning rate and the batch size vary freely, and neither is in the trace (the
learning rate is an optimizer variable, the rows a step takes are an argument).
So a trial need not have a new model: the pool hands it a model it already
built for an earlier trial of the same architecture, loaded with exactly the
state the trial's own fresh model has (weights, optimizer variables, random
generator states; :mod:`tf_packing.repack.checkpoint`). That model's traced training
step (:mod:`tf_packing.repack.step`), its traced evaluation
(:mod:`tf_packing.repack.evaluation`) and the packed steps that hold it are reused,
and the trial trains exactly as it would on its fresh model.

Two models share an architecture when everything a trace bakes in is equal:
their class, every layer's configuration, the loss, metrics, dtype policy and
XLA setting, the optimizer's configuration but for a learning-rate *value*, and
the device. Only models made entirely of Keras's own classes are pooled
(Sequential or functional, built-in layers, losses, metrics and optimizers):
a user's class may keep something in its trace that its ``get_config`` does not
say, and reusing its model could train the wrong thing. Those are built fresh
every time, as before (:func:`architecture_key` says why).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict

from ..repack import build_optimizer, free, load

__all__ = ["ModelPool", "architecture_key", "models_kept"]

log = logging.getLogger(__name__)


class NotPoolable(ValueError):
    """Why a model's architecture cannot be told from its configuration."""


def architecture_key(model, device=None) -> str:
    """What ``model``'s traces depend on, as a string; equal strings mean the same traced computation.

    Raises
    ------
    NotPoolable
        For a model that holds a class of the user's, a ``Lambda`` layer, or a configuration Keras
        cannot give.
    """
    if type(model).__module__ not in ("keras.src.models.sequential", "keras.src.models.functional"):
        raise NotPoolable(f"its class {type(model).__qualname__} is not Keras's Sequential or functional Model")
    adapted = [layer.name for layer in model._flatten_layers(include_self=False) if hasattr(layer, "adapt")]
    if adapted:  # an adapted vocabulary or mean is state its configuration does not hold
        raise NotPoolable(f"its preprocessing layer {adapted[0]} keeps what it adapted to outside its weights")
    try:
        config = {"model": model.get_config(), "compile": model.get_compile_config()}
    except Exception as e:  # noqa: BLE001 - any failure means the configuration cannot stand for the model
        raise NotPoolable(f"Keras cannot give its configuration ({type(e).__name__}: {e})") from e
    optimizer = dict(config["compile"].get("optimizer") or {})
    settings = dict(optimizer.get("config") or {})
    if isinstance(settings.get("learning_rate"), (int, float)):
        settings.pop("learning_rate")  # a variable, assigned with the optimizer's state
    settings.pop("name", None)
    config["compile"] = {**config["compile"], "optimizer": {**optimizer, "config": settings}}
    _check_keras_only(config)
    # Layer names are Keras's numbering, except where the logs are named after them (several outputs).
    outputs = [t._keras_history[0].name for t in model.outputs] if len(model.outputs) > 1 else []
    config["model"] = _renamed(config["model"], keep=set(outputs))
    config["device"] = device or ""
    return json.dumps(config, sort_keys=True, default=repr)


def _check_keras_only(config) -> None:
    if isinstance(config, dict):
        module = config.get("module")
        if isinstance(module, str) and module != "keras" and not module.startswith("keras."):
            raise NotPoolable(f"{config.get('class_name')} comes from {module}, not from Keras")
        if config.get("class_name") == "Lambda":
            raise NotPoolable("it has a Lambda layer")
        for value in config.values():
            _check_keras_only(value)
    elif isinstance(config, (list, tuple)):
        for value in config:
            _check_keras_only(value)


def _renamed(config, keep=frozenset()):
    """A model's ``config`` with its layers' names replaced by their order (Keras numbers fresh layers per process).

    Names in ``keep`` stay as they are.
    """
    names = {}

    def collect(node):
        if isinstance(node, dict):
            if isinstance(node.get("name"), str) and node["name"] not in keep:
                names.setdefault(node["name"], f"#{len(names)}")
            for value in node.values():
                collect(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                collect(value)

    def rename(node, key=None):
        if isinstance(node, dict):
            return {k: (names.get(v, v) if k == "name" and isinstance(v, str) else rename(v, k))
                    for k, v in node.items()}
        if isinstance(node, (list, tuple)):  # get_config gives some lists as tuples
            if key in ("keras_history", "input_layers", "output_layers") and node and isinstance(node[0], str):
                return [names.get(node[0], node[0]), *node[1:]]
            return [rename(v, key) for v in node]
        return node

    collect(config)
    return rename(config)


class ModelPool:
    """Models kept built between packs, by architecture; at most ``max_models`` alive with a pack's.

    Parameters
    ----------
    max_models : int
        The most models alive at once: those kept here and those of the pack being built.

    Attributes
    ----------
    reused_ : int
        Trials that trained on a kept model.
    built_ : int
        Trials that trained on their own fresh model.
    """

    #: Packed steps kept at most: one per composition of kept models met, the least recently used dropped first.
    MAX_STEPS = 64

    def __init__(self, max_models: int = 8):
        self.max_models = max_models
        self.search = None          # whose models these are (see models_kept)
        self._free = OrderedDict()  # id(model) -> (key, model), least recently used first
        self._keys = {}             # id(model) -> key of a model in use, handed out or built here
        self._steps = OrderedDict() # (ids of models, ...) -> packed step holding those models
        self.reused_ = 0
        self.built_ = 0

    def make_room(self, in_use: int) -> None:
        """Drop kept models until they and ``in_use`` models, plus one being built, stay within ``max_models``."""
        while self._free and len(self._free) + in_use + 1 > self.max_models:
            self._evict(next(iter(self._free)))

    def acquire(self, fresh, device=None):
        """A model to train the trial ``fresh`` was built for: a kept one loaded with ``fresh``'s state, or ``fresh``."""
        try:
            key = architecture_key(fresh, device)
        except NotPoolable as e:
            log.debug("model %s is built fresh and not kept: %s", fresh.name, e)
            self.built_ += 1
            return fresh
        for model_id, (kept_key, model) in self._free.items():
            if kept_key == key:
                build_optimizer(fresh, "/CPU:0")  # its state is only read: keep the device's memory for the pack
                state = free(fresh)
                try:
                    load(model, device, state)
                except Exception:
                    self._evict(model_id)
                    raise
                del self._free[model_id]
                self._keys[model_id] = key
                self.reused_ += 1
                return model
        self._keys[id(fresh)] = key
        self.built_ += 1
        return fresh

    def release(self, model) -> None:
        """``model``'s trial left its pack: keep the model for a later trial of its architecture."""
        key = self._keys.pop(id(model), None)
        if key is None:  # not poolable: nothing here may keep it alive
            self._drop_steps(id(model))
            return
        self._free[id(model)] = (key, model)
        self._free.move_to_end(id(model))
        while len(self._free) > self.max_models:
            self._evict(next(iter(self._free)))

    def clear(self) -> None:
        """Drop every kept model and step."""
        for model_id in list(self._free):
            self._evict(model_id)

    # -- packed steps over kept models ------------------------------------------------------
    def step(self, key):
        """The packed step kept for ``key`` (its first element: the ids of the models it holds), or None."""
        if key in self._steps:
            self._steps.move_to_end(key)
        return self._steps.get(key)

    def keep_step(self, key, step) -> None:
        if all(model_id in self._keys or model_id in self._free for model_id in key[0]):
            self._steps[key] = step
            while len(self._steps) > self.MAX_STEPS:
                self._steps.popitem(last=False)

    def _evict(self, model_id) -> None:
        self._free.pop(model_id)
        self._drop_steps(model_id)

    def _drop_steps(self, model_id) -> None:
        for key in [k for k in self._steps if model_id in k[0]]:
            del self._steps[key]

    def __len__(self) -> int:
        return len(self._free)


_PROCESS_POOL = ModelPool(0)


def models_kept(max_models: int, search=None) -> ModelPool:
    """This process's pool, now keeping at most ``max_models`` for ``search``.

    One per process, not per tuner or task: a Spark executor's Python worker runs one rung's pack after
    another, each task with its own unpickled copy of the tuner's settings, and reuses the models of the last.
    The first task of another ``search`` lets the models of the last one go.
    """
    if search is not None and search != _PROCESS_POOL.search:
        _PROCESS_POOL.clear()
        _PROCESS_POOL.search = search
    _PROCESS_POOL.max_models = max_models
    return _PROCESS_POOL
