"""Benchmarks against the reference tools (`make bench`)."""
