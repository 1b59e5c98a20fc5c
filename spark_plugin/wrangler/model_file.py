"""What a Wrangler model file is, and the one-line problem of a file that is not one.

What a model file is, :data:`SCHEMA` says (a JSON Schema that the jar carries too): :func:`model_problem`
checks a file against it with the ``jsonschema`` library, and ``dev.sparkrm.wrangler.ModelFile`` binds it with
Jackson, before anything uses it. Both then check what JSON Schema cannot say (one entry per feature in every
vector) and word a problem alike, from the schema's descriptions, so Python refuses exactly the files the
driver plugin would refuse, with the same line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from jsonschema import Draft202012Validator

from ..errors import printable

#: The JSON Schema of a model file, in Wrangler's resources, which the jar packs.
SCHEMA_FILE = Path(__file__).resolve().parent / "jvm/resources/dev/sparkrm/wrangler/model.schema.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
#: The ``format`` tag of a model.
FORMAT = SCHEMA["properties"]["format"]["const"]

_VALIDATOR = Draft202012Validator(SCHEMA)
#: Keywords whose failures Jackson meets while binding, in document order; it checks the others after.
_BINDING = {"type", "required", "additionalProperties"}


def model_problem(document) -> str | None:
    """What is wrong with a parsed model file, as the rest of the one-line message after its name, else ``None``.

    The check of ``spark.wrangler.model.path`` (its ``Key.check``): the first of :func:`problems`.
    """
    found = problems(document)
    return f"is not a valid {SCHEMA['title']}: {found[0]}" if found else None


def problems(document) -> list[str]:
    """Every problem of a parsed model, in the order the JVM meets them, so that both report the same first one.

    A wrong ``format`` tag comes first: such a file is most likely no model at all. Then Jackson binds a model
    in document order and stops at its first failure: a value of a wrong type, else at the end of an object a
    missing field, else a field outside the schema; the JVM then checks what binding does not (empty arrays
    and strings, pairs, finite numbers) and last the vectors' lengths, which only a model that matches the
    schema is checked for.
    """
    found = sorted(problem for error in _VALIDATOR.iter_errors(document) for problem in _problems(error, document))
    messages = [message for *_, message in found] or _length_problems(document)
    return list(dict.fromkeys(messages))  # a value of a wrong type can break two keywords in the same words


def _problems(error, document):
    """(phase, place in the document, message) of each problem a validation error stands for."""
    path = list(error.absolute_path)
    place = _place(document, path)
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        for i, name in enumerate(missing):
            wanted = _resolved(error.schema["properties"][name])["description"]
            yield 0, place + [len(error.instance) + i], f"{_shown(path + [name])} is missing; it must be {wanted}"
    elif error.validator == "additionalProperties":
        fields, after_missing = error.schema["properties"], len(error.instance) + len(error.schema["required"])
        for i, name in enumerate(error.instance):
            if name not in fields:
                yield 0, place + [after_missing + i], (f"{_shown(path + [name])} is not a field of {_shown(path)}; "
                                                       f"its fields are {', '.join(fields)}")
    else:
        phase = -1 if path == ["format"] else 0 if error.validator in _BINDING else 1
        yield phase, place, f"{_shown(path)} must be {error.schema['description']}; got {describe(error.instance)}"


def _length_problems(document) -> list[str]:
    """The vectors whose length is not the number of features: a comparison JSON Schema cannot express."""
    n, scaler, shared = len(document["features"]), document["scaler"], document["shared"]
    vectors = [(["scaler", "scale"], scaler["scale"]), (["scaler", "offset"], scaler["offset"]),
               (["shared", "weights"], shared["weights"]),
               *((["shared", "nodes", name], v) for name, v in shared["nodes"].items()),
               *((["shared", "workloads", name], v) for name, v in shared["workloads"].items()),
               *((["nodes", name, "weights"], linear["weights"]) for name, linear in document["nodes"].items())]
    return [f"{_shown(path)} must have as many entries as features ({n}); got {describe(vector)}"
            for path, vector in vectors if len(vector) != n]


def _place(document, path) -> list[int]:
    """Where ``path`` lies in document order: the index of each of its keys or entries among its siblings."""
    place, node = [], document
    for step in path:
        place.append(list(node).index(step) if isinstance(node, dict) else step)
        node = node[step]
    return place


def _resolved(schema: dict) -> dict:
    """``schema``, or the definition its ``$ref`` names."""
    return SCHEMA["$defs"][schema["$ref"].removeprefix("#/$defs/")] if "$ref" in schema else schema


def _shown(path) -> str:
    """A place in a model as every message names it: ``the file``, ``scaler.scale``, ``shared.sigmoids[0][1]``."""
    shown = ""
    for step in path:
        if isinstance(step, int):
            shown += f"[{step}]"
        else:
            shown += ("." if shown else "") + (printable(step) or '""')  # a field named "" still shows
    return shown or "the file"


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond a double's range
        return False


def describe(value) -> str:
    """What a JSON value is, in the words of every message: ``null``, ``a string``, ``an array of 2 entries``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, (int, float)):
        return "a number" if _finite(value) else "a number out of range"
    if isinstance(value, list):
        return f"an array of {len(value)} {'entry' if len(value) == 1 else 'entries'}"
    return "an object"
