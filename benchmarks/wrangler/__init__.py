"""Wrangler benchmark: noisy neighbours, one node per executor (see run.py)."""
