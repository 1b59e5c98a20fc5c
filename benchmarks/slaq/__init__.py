"""SLAQ benchmark: quality-driven core allocation vs fair, on real Spark training jobs."""
