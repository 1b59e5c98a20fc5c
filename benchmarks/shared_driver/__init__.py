"""Benchmarks of Yaq's gate and Pigeon's pools in one shared driver."""
