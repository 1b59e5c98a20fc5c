"""Riffle benchmarks: ``python -m benchmarks.riffle {synthetic,slow-disk,tpch}`` (see ``run.py``)."""
