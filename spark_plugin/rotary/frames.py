"""Between Spark's plans and the engine: a query as an analyzed DataFrame, a plan or expression of Catalyst's as
a DataFrame or Column, a result collected into pandas, and Spark's errors in one line.

Every module of Rotary that touches a DataFrame goes through these few functions, so none of them needs
another's internals (they once lived in :mod:`.sqlquery`, and the layouts and uniqueness modules imported
them back from it, which closed an import circle).
"""

from __future__ import annotations

import pandas as pd

from ..errors import SparkrmError


class QueryError(SparkrmError, ValueError):
    """A plain query Spark cannot analyze (an unknown table or column, bad syntax); the message is one line."""


def query_frame(spark, sql_or_frame):
    """The query as an analyzed DataFrame; a one-line QueryError when Spark cannot analyze it."""
    from pyspark.errors import PySparkException
    from pyspark.sql import DataFrame

    if isinstance(sql_or_frame, DataFrame):
        return sql_or_frame
    if not isinstance(sql_or_frame, str) or not sql_or_frame.strip():
        raise QueryError(f"a query is SQL text or a DataFrame, not {sql_or_frame!r}")
    try:
        frame = spark.sql(sql_or_frame)
        frame._jdf.queryExecution().assertAnalyzed()
        return frame
    except PySparkException as e:
        raise QueryError(_one_line(e)) from None


def frame_of(spark, plan):
    """The DataFrame of ``plan``, a logical plan of Catalyst's (a py4j object), in session ``spark``."""
    from pyspark.sql import DataFrame

    jvm = spark._jvm
    return DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, plan), spark)


def column(jvm, expression):
    """The Column of ``expression``, an expression of Catalyst's (a py4j object)."""
    from pyspark.sql import Column

    return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(expression))


def to_pandas(frame) -> pd.DataFrame:
    """A Spark DataFrame collected through Arrow, strings as plain Python objects (as the totals keep keys)."""
    rows = frame.toPandas()
    strings = [c for c, t in rows.dtypes.items() if isinstance(t, pd.StringDtype)]
    return rows.astype({c: object for c in strings}) if strings else rows


def spark_message(error) -> str:
    """The first line of Spark's message of ``error``, spaces collapsed (a parse error's text starts with an
    empty line, then the condition and the position, then the SQL with a caret under the error)."""
    return " ".join(next((line for line in str(error).splitlines() if line.strip()), repr(error)).split())


def _one_line(error) -> str:
    """Spark's analysis error as one line, with the fix where the error is a common one."""
    condition = getattr(error, "getCondition", lambda: None)() or ""
    message = spark_message(error)
    if "TABLE_OR_VIEW_NOT_FOUND" in condition or "TABLE_OR_VIEW_NOT_FOUND" in message:
        return (f"{message} Fix: create the table or temporary view first (e.g. "
                "spark.read.parquet(path).createOrReplaceTempView(name)), or read Parquet as parquet.`path`.")
    return f"Spark cannot run the query: {message}"
