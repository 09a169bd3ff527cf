"""LoCoMo retrieval benchmark: `python -m bench.locomo` (see bench/README.md)."""
