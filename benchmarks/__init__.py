"""Benchmark harnesses. Each writes JSON plus a Markdown/PNG report under benchmarks/results/."""
