"""The emulated cluster's tests compare Riffle with the same vanilla-Spark oracle as the Riffle tests."""

from tests.shuffle_merge.conftest import vanilla_results

__all__ = ["vanilla_results"]
