"""Repack benchmarks: IMPV against the number of packed models, and pack-aware Hyperband."""
