"""Reconciliation bench: precision and recall on the labeled set, run time on a large user (python -m bench.curation)."""
