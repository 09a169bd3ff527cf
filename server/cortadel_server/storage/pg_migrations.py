"""Schema migrations for the PostgreSQL backend: named steps, applied once each, in order, recorded
in ``schema_migrations`` as the SQLite ones are (storage/migrations.py).

Add a step by appending to ``MIGRATIONS``; never edit one that has shipped. Every table that holds
a user's data carries ``user_id`` in its primary key, so it can be distributed by ``user_id``
(Citus) with its unique and foreign keys intact; ``jobs`` and ``meta`` are shared by all users.
"""

from __future__ import annotations

import psycopg

from cortadel_server.storage.migrations import Migration

#: advisory lock key (class, object) held while migrating, so replicas starting together take turns
MIGRATION_LOCK = (2, 0)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_schema",
        """
        -- English stemming without a stopword list: the same tokens SQLite's porter tokenizer
        -- indexes (stopwords are dropped from queries, not from the index).
        CREATE TEXT SEARCH DICTIONARY cortadel_stem (TEMPLATE = snowball, Language = english);
        CREATE TEXT SEARCH CONFIGURATION cortadel (COPY = english);
        ALTER TEXT SEARCH CONFIGURATION cortadel
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH cortadel_stem;

        CREATE TABLE memories (
            rowid bigint GENERATED ALWAYS AS IDENTITY,
            id text NOT NULL,
            user_id text NOT NULL,
            text text NOT NULL,
            fingerprint text NOT NULL,
            gist text,
            memory_type text NOT NULL DEFAULT 'semantic',
            categories jsonb NOT NULL DEFAULT '[]',
            tags jsonb NOT NULL DEFAULT '[]',
            project text,
            app_name text,
            session_id text,
            metadata jsonb NOT NULL DEFAULT '{}',
            state text NOT NULL DEFAULT 'active',
            source_turn_uuids jsonb NOT NULL DEFAULT '[]',
            transcript_path text,
            extraction_status text NOT NULL DEFAULT 'done',
            valid_at double precision,
            invalid_at double precision,
            created_at double precision NOT NULL,
            expired_at double precision,
            superseded_by text,
            updated_at double precision,
            -- the text written just before this memory in its session (storage/sessions.py)
            context text NOT NULL DEFAULT '',
            -- no fixed dimension: a reindex to another model replaces the vectors row by row
            embedding vector,
            -- text weighted A, context B; text_search weighs B by the context weight
            search tsvector GENERATED ALWAYS AS (
                setweight(to_tsvector('cortadel', text), 'A') || setweight(to_tsvector('cortadel', context), 'B')
            ) STORED,
            PRIMARY KEY (user_id, id)
        );
        CREATE UNIQUE INDEX memories_rowid ON memories(rowid);
        CREATE INDEX memories_user_created ON memories(user_id, created_at DESC, rowid DESC);
        CREATE INDEX memories_user_fingerprint ON memories(user_id, fingerprint);
        CREATE INDEX memories_user_session ON memories(user_id, session_id, created_at, rowid);
        CREATE INDEX memories_search ON memories USING gin(search);
        CREATE INDEX memories_missing_embedding ON memories(rowid) WHERE embedding IS NULL;

        CREATE TABLE user_versions (user_id text PRIMARY KEY, version bigint NOT NULL);

        CREATE TABLE memory_events (
            id bigint GENERATED ALWAYS AS IDENTITY,
            user_id text NOT NULL,
            memory_id text NOT NULL,
            event text NOT NULL,
            at double precision NOT NULL,
            detail jsonb NOT NULL DEFAULT '{}',
            PRIMARY KEY (user_id, id)
        );
        CREATE INDEX memory_events_memory ON memory_events(user_id, memory_id, id);

        CREATE TABLE entities (
            id bigint GENERATED ALWAYS AS IDENTITY,
            user_id text NOT NULL,
            canonical text NOT NULL,
            kind text NOT NULL,
            PRIMARY KEY (user_id, id),
            UNIQUE (user_id, canonical)
        );
        CREATE TABLE entity_aliases (
            user_id text NOT NULL,
            entity_id bigint NOT NULL,
            alias text NOT NULL,
            PRIMARY KEY (user_id, entity_id, alias),
            FOREIGN KEY (user_id, entity_id) REFERENCES entities(user_id, id) ON DELETE CASCADE
        );
        CREATE TABLE memory_entities (
            user_id text NOT NULL,
            memory_id text NOT NULL,
            entity_id bigint NOT NULL,
            PRIMARY KEY (user_id, memory_id, entity_id),
            FOREIGN KEY (user_id, entity_id) REFERENCES entities(user_id, id) ON DELETE CASCADE
        );
        CREATE INDEX memory_entities_entity ON memory_entities(user_id, entity_id);

        CREATE TABLE session_docs (
            user_id text NOT NULL,
            session_id text NOT NULL,
            text text NOT NULL,
            search tsvector GENERATED ALWAYS AS (to_tsvector('cortadel', text)) STORED,
            PRIMARY KEY (user_id, session_id)
        );
        CREATE INDEX session_docs_search ON session_docs USING gin(search);

        CREATE TABLE jobs (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            kind text NOT NULL,
            user_id text NOT NULL,
            memory_id text,
            payload jsonb NOT NULL DEFAULT '{}',
            status text NOT NULL DEFAULT 'queued',
            attempts integer NOT NULL DEFAULT 0,
            run_after double precision NOT NULL,
            last_error text,
            created_at double precision NOT NULL,
            -- the server process running it (PostgresStorage.claimer), while status is 'running'
            claimed_by text
        );
        CREATE INDEX jobs_due ON jobs(status, run_after, id);
        CREATE INDEX jobs_user_memory ON jobs(user_id, memory_id);

        CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
        """,
    ),
)


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction, one process at a time. Returns
    the names applied. ``conn`` is in autocommit mode."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL)")
    applied = []
    for step in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = %s", (step.name,)).fetchone():
                continue
            conn.execute(step.sql.encode())  # bytes: the step's text is sent as is, never %-formatted
            conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (%s, now())", (step.name,))
        applied.append(step.name)
    return applied
