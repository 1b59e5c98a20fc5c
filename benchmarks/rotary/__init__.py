"""Rotary-AQP benchmarks (see run.py)."""
