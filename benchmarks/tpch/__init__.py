"""TPC-H benchmark harness: ``python -m benchmarks.tpch`` (see ``cli.py``)."""
