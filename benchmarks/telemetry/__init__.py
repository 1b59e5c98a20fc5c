"""Telemetry overhead: a 2,000-task job with telemetry on vs off, interleaved in one run."""
