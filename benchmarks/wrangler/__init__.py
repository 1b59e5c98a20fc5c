"""Wrangler benchmark: noisy neighbour on local-cluster (see run.py)."""
