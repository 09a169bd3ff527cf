"""What text says, apart from storing it: the names of entities, the times it mentions, and who
said a transcript line.

    find_entities("User moved to NYC with Bob.")   # entities, with a folded key each
    find_time("last month", now)                   # TimeSpan(start, end, point)
    asked_about("What did Caroline research?")     # "Caroline"

Shared by the write pipeline (linking, dating facts) and retrieval (query-time understanding);
neither package imports the other.
"""
