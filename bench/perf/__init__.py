"""Performance bench: `python -m bench.perf` (see bench/README.md)."""
