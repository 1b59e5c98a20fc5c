"""Riffle: merging small shuffle map outputs into large files inside Spark's executors.

Not implemented yet (see README's status line); this package holds its policies, cost model and
Java shuffle manager once they land.
"""
