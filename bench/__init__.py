"""Benchmark harnesses that drive a live Cortadel server over its REST API.

`python -m bench.locomo` measures retrieval quality on LoCoMo; `python -m bench.perf` measures
latency, throughput, memory and disk use. Both start their own servers; see bench/README.md.
"""
