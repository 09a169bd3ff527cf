"""Memory that curates itself: work over a user's stored memories, off the write path.

    reconcile.py           Reconciler: runs (durable jobs), suggestions, approve / reject / undo
    reconcile_entities.py  entities that are one thing under several names
    reconcile_facts.py     facts a later fact made stale that the write path missed
    reconcile_judge.py     the LLM's verdict on an uncertain finding, when an LLM is configured
    suggestions.py         a finding as a suggestion, and applying / undoing one
    merges.py              entity merges and aliases, as records that an undo puts back exactly
"""
