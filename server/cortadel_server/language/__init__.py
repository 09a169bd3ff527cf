"""What text says, apart from storing it: the names of entities and the times it mentions.

    find_entities("User moved to NYC with Bob.")   # entities, with a folded key each
    find_time("last month", now)                   # TimeSpan(start, end, point)

Shared by the write pipeline (linking, dating facts) and retrieval (query-time understanding);
neither package imports the other.
"""
