"""Whether a column is unique in its table: asked of Spark once per version of the table's files.

A progressive query groups by fewer columns when one group key is unique in its table and the others are
columns of the same table (:class:`.rewrite.DependentKeys`). No constraint says so in Parquet or the
catalog, so Spark counts: one job reading that column only. The answer is remembered in ``unique.json``
in the layouts folder, keyed by the table's files (path, size, modification time), so a changed table is
asked again; without a layouts folder, or in one that is the user's or read-only, it is asked every time.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..errors import SparkrmError
from .frames import column, frame_of
from .layout_root import CACHE_FILE, claim_root
from .sqlplan import files_digest, table_files

LOG = logging.getLogger(__name__)


def is_unique(spark, leaf, attribute, root=False) -> bool:
    """Whether every row of table ``leaf`` (a sqlplan.Node) has a value of ``attribute`` (its Expr) of its own,
    not NULL (a lookup cannot find a NULL key); remembered under folder ``root`` (False: not remembered)."""
    key = _cache_key(leaf, attribute)
    cache = Path(root).expanduser() / CACHE_FILE if root is not False and key else None
    known = _read(cache)
    if key in known:
        return known[key]
    answer = _count(spark, leaf, attribute)
    if cache is not None:
        try:
            claim_root(cache.parent)  # only into a layouts folder of sparkrm's: never over a file of the user's
            tmp = cache.with_name(cache.name + ".tmp")
            tmp.write_text(json.dumps({**known, key: answer}, indent=1))
            tmp.replace(cache)
        except (OSError, SparkrmError) as e:  # the user's or a read-only folder: asked again next time
            LOG.info("cannot remember in %s that %s is%s unique: %s", cache, attribute.name,
                     "" if answer else " not", e)
    return answer


def _count(spark, leaf, attribute) -> bool:
    from pyspark.sql import functions as F

    key = column(spark._jvm, attribute.jvm)
    grouped = frame_of(spark, leaf.jvm).groupBy(key.alias("key")).count()
    repeated = grouped.where((F.col("count") > 1) | F.col("key").isNull()).limit(1)
    return repeated.count() == 0


def _cache_key(leaf, attribute) -> str | None:
    """The table's source, the column and a digest of the table's files (None: not a file table)."""
    if not leaf.source.startswith("files:"):
        return None
    return f"{leaf.source}|{attribute.name}|{files_digest(table_files(leaf))[:16]}"


def _read(cache: Path | None) -> dict:
    if cache is None or not cache.is_file():
        return {}
    try:
        return json.loads(cache.read_text())
    except ValueError:
        return {}
