"""Write pipeline bench: labeled-set accuracy, ingest throughput, write latencies, LLM calls (python -m bench.pipeline)."""
