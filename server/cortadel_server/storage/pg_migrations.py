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
    Migration(
        "0002_reconciliation",
        """
        -- Reconciliation (curation/): runs of a user, and the suggestions they found. A suggestion
        -- quotes memory ids, never memory text, so a deleted memory leaves no copy here.
        CREATE TABLE reconcile_runs (
            id text NOT NULL,
            user_id text NOT NULL,
            status text NOT NULL,
            types jsonb NOT NULL DEFAULT '[]',
            lim integer NOT NULL,
            created_at double precision NOT NULL,
            started_at double precision,
            finished_at double precision,
            error text,
            suggested integer NOT NULL DEFAULT 0,
            auto_approved integer NOT NULL DEFAULT 0,
            PRIMARY KEY (user_id, id)
        );
        CREATE INDEX reconcile_runs_user ON reconcile_runs(user_id, created_at DESC);
        CREATE TABLE reconcile_suggestions (
            id text NOT NULL,
            user_id text NOT NULL,
            kind text NOT NULL,
            key text NOT NULL,
            confidence double precision NOT NULL,
            subject jsonb NOT NULL,
            evidence jsonb NOT NULL,
            created_at double precision NOT NULL,
            status text NOT NULL,
            run_id text,
            decided_at double precision,
            decided_by text,
            undo jsonb,
            undone_at double precision,
            PRIMARY KEY (user_id, id),
            UNIQUE (user_id, key)
        );
        CREATE INDEX reconcile_suggestions_user ON reconcile_suggestions(user_id, status, created_at DESC);
        """,
    ),
    Migration(
        "0003_memory_recalls",
        """
        -- When a memory was last returned by a search (curation/fading.py): kept apart from the
        -- memories so a recall is a small write that never moves the user's version on.
        CREATE TABLE memory_recalls (
            user_id text NOT NULL,
            memory_id text NOT NULL,
            at double precision NOT NULL,
            PRIMARY KEY (user_id, memory_id)
        );
        """,
    ),
    Migration(
        "0004_term_stats",
        """
        -- Per user and full-text table: how many rows hold each lexeme in their search vector, and
        -- ('' as the lexeme) how many rows there are. The full-text arm reads a word's document
        -- frequency here instead of counting matching rows at every search (storage/postgres.py).
        -- Kept by triggers, so every path that writes rows (the backend, imports, COPY) keeps it.
        CREATE TABLE term_stats (
            user_id text NOT NULL,
            doc_table text NOT NULL,
            lexeme text NOT NULL,
            df bigint NOT NULL,
            PRIMARY KEY (user_id, doc_table, lexeme)
        );
        INSERT INTO term_stats(user_id, doc_table, lexeme, df)
            SELECT user_id, 'memories', lexeme, count(*)
            FROM memories, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme
            UNION ALL
            SELECT user_id, 'session_docs', lexeme, count(*)
            FROM session_docs, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme;

        -- Inserts and deletes per statement (a user's erasure is one aggregate update, not one per
        -- row); updates per row, only when the search vector changed (transition tables cannot
        -- be limited to some columns).
        CREATE FUNCTION count_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO term_stats AS t(user_id, doc_table, lexeme, df)
                SELECT user_id, TG_TABLE_NAME, lexeme, count(*)
                FROM new_rows, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme
                ON CONFLICT (user_id, doc_table, lexeme) DO UPDATE SET df = t.df + excluded.df;
            ELSIF TG_OP = 'DELETE' THEN
                UPDATE term_stats t SET df = t.df - gone.n
                FROM (SELECT user_id, lexeme, count(*) AS n
                      FROM old_rows, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme) gone
                WHERE t.user_id = gone.user_id AND t.doc_table = TG_TABLE_NAME AND t.lexeme = gone.lexeme;
            ELSE  -- only the lexemes that came or went: a session document grows by appending
                INSERT INTO term_stats AS t(user_id, doc_table, lexeme, df)
                SELECT NEW.user_id, TG_TABLE_NAME, lexeme, sum(delta)
                FROM (SELECT unnest(tsvector_to_array(NEW.search)) AS lexeme, 1 AS delta
                      UNION ALL SELECT unnest(tsvector_to_array(OLD.search)), -1) changed
                GROUP BY lexeme HAVING sum(delta) <> 0
                ON CONFLICT (user_id, doc_table, lexeme) DO UPDATE SET df = t.df + excluded.df;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memories_terms_added AFTER INSERT ON memories
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
        CREATE TRIGGER memories_terms_removed AFTER DELETE ON memories
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
        CREATE TRIGGER memories_terms_changed AFTER UPDATE OF text, context ON memories
            FOR EACH ROW WHEN (OLD.search IS DISTINCT FROM NEW.search) EXECUTE FUNCTION count_terms();
        CREATE TRIGGER session_docs_terms_added AFTER INSERT ON session_docs
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
        CREATE TRIGGER session_docs_terms_removed AFTER DELETE ON session_docs
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
        CREATE TRIGGER session_docs_terms_changed AFTER UPDATE OF text ON session_docs
            FOR EACH ROW WHEN (OLD.search IS DISTINCT FROM NEW.search) EXECUTE FUNCTION count_terms();
        """,
    ),
    Migration(
        "0005_citus_keys",
        """
        -- Citus refuses a unique index without the distribution column (user_id). rowid is unique
        -- by its identity anyway; the index only serves ordering (reindex progress).
        DROP INDEX memories_rowid;
        CREATE INDEX memories_rowid ON memories(rowid);
        """,
    ),
    Migration(
        "0006_bm25_statistics",
        """
        -- The full-text arm computes the BM25 of SQLite's FTS5 (storage/postgres.py ranked_sql), so
        -- it indexes the tokens FTS5 indexes: the stems of Porter's original stemmer (FTS5's porter
        -- tokenizer; Snowball's English one stems otherwise: "generously", "skies"), of the words
        -- FTS5's unicode61 tokenizer cuts, accents folded (search_words). BM25 also needs each
        -- row's length in tokens (tokens) and the user's total (term_stats.tokens).
        CREATE TEXT SEARCH DICTIONARY cortadel_porter (TEMPLATE = snowball, Language = porter);
        ALTER TEXT SEARCH CONFIGURATION cortadel
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH cortadel_porter;
        DROP TEXT SEARCH DICTIONARY cortadel_stem;

        -- Text as unicode61 cuts it: every ASCII character but a letter or a digit separates words
        -- (PostgreSQL's parser keeps "advice/assistance", "3.5" or "self-care" whole as well), and
        -- accents are folded (as text.words() folds the query's: "café" was not found).
        CREATE FUNCTION search_words(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT regexp_replace(regexp_replace(normalize(t, NFKD), '[\\u0300-\\u036f]', '', 'g'),
                                        '[\\x01-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]', ' ', 'g') $$;
        -- how many tokens a search vector holds (each position one token)
        CREATE FUNCTION tsvector_tokens(v tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest(v) $$;

        -- The stored vectors were made by the old configuration: made again, with each row's length
        -- in tokens, by a trigger instead of generated columns: a generated length would tokenise
        -- the text a second time (a generated column cannot read another), at every append to a
        -- session document too: writing a LoCoMo session's document took 5.8 ms so, 3.2 ms by the
        -- trigger, 1.9 ms before this step (medians, load average 6).
        ALTER TABLE memories DROP COLUMN search CASCADE;  -- its index and update trigger come back below
        ALTER TABLE memories ADD COLUMN search tsvector, ADD COLUMN tokens integer;
        ALTER TABLE session_docs DROP COLUMN search CASCADE;
        ALTER TABLE session_docs
            -- FTS5 orders equal scores by insertion: so does ranked_sql, for sessions too
            ADD COLUMN rowid bigint GENERATED ALWAYS AS IDENTITY,
            ADD COLUMN search tsvector,
            ADD COLUMN tokens integer;
        -- a memory's text weighted A, its context B (text_search weighs B by the context weight)
        CREATE FUNCTION index_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'memories' THEN
                NEW.search := setweight(to_tsvector('cortadel', search_words(NEW.text)), 'A')
                              || setweight(to_tsvector('cortadel', search_words(NEW.context)), 'B');
            ELSE
                NEW.search := to_tsvector('cortadel', search_words(NEW.text));
            END IF;
            NEW.tokens := tsvector_tokens(NEW.search);
            RETURN NEW;
        END $$;
        CREATE TRIGGER memories_index BEFORE INSERT OR UPDATE OF text, context ON memories
            FOR EACH ROW EXECUTE FUNCTION index_terms();
        CREATE TRIGGER session_docs_index BEFORE INSERT OR UPDATE OF text ON session_docs
            FOR EACH ROW EXECUTE FUNCTION index_terms();
        UPDATE memories SET text = text;
        UPDATE session_docs SET text = text;
        ALTER TABLE memories ALTER COLUMN search SET NOT NULL, ALTER COLUMN tokens SET NOT NULL;
        ALTER TABLE session_docs ALTER COLUMN search SET NOT NULL, ALTER COLUMN tokens SET NOT NULL;
        CREATE INDEX memories_search ON memories USING gin(search);
        CREATE INDEX session_docs_search ON session_docs USING gin(search);

        -- tokens: kept on the '' row (every row) only: the tokens of all the user's rows, whose
        -- mean is BM25's average document length; 0 on a lexeme's row.
        ALTER TABLE term_stats ADD COLUMN tokens bigint NOT NULL DEFAULT 0;
        TRUNCATE term_stats;
        INSERT INTO term_stats(user_id, doc_table, lexeme, df, tokens)
            SELECT user_id, 'memories', lexeme, count(*), coalesce(sum(tokens) FILTER (WHERE lexeme = ''), 0)
            FROM memories, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme
            UNION ALL
            SELECT user_id, 'session_docs', lexeme, count(*), coalesce(sum(tokens) FILTER (WHERE lexeme = ''), 0)
            FROM session_docs, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme;
        CREATE OR REPLACE FUNCTION count_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO term_stats AS t(user_id, doc_table, lexeme, df, tokens)
                SELECT user_id, TG_TABLE_NAME, lexeme, count(*), coalesce(sum(tokens) FILTER (WHERE lexeme = ''), 0)
                FROM new_rows, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme
                ON CONFLICT (user_id, doc_table, lexeme) DO UPDATE SET df = t.df + excluded.df, tokens = t.tokens + excluded.tokens;
            ELSIF TG_OP = 'DELETE' THEN
                UPDATE term_stats t SET df = t.df - gone.n, tokens = t.tokens - gone.tokens
                FROM (SELECT user_id, lexeme, count(*) AS n, coalesce(sum(tokens) FILTER (WHERE lexeme = ''), 0) AS tokens
                      FROM old_rows, unnest(array_prepend('', tsvector_to_array(search))) lexeme GROUP BY user_id, lexeme) gone
                WHERE t.user_id = gone.user_id AND t.doc_table = TG_TABLE_NAME AND t.lexeme = gone.lexeme;
            ELSE  -- only the lexemes that came or went, and the length: a session document grows by appending
                INSERT INTO term_stats AS t(user_id, doc_table, lexeme, df, tokens)
                SELECT NEW.user_id, TG_TABLE_NAME, lexeme, sum(delta), sum(tokens)
                FROM (SELECT unnest(tsvector_to_array(NEW.search)) AS lexeme, 1 AS delta, 0 AS tokens
                      UNION ALL SELECT unnest(tsvector_to_array(OLD.search)), -1, 0
                      UNION ALL SELECT '', 0, NEW.tokens - OLD.tokens) changed
                GROUP BY lexeme HAVING sum(delta) <> 0 OR sum(tokens) <> 0
                ON CONFLICT (user_id, doc_table, lexeme) DO UPDATE SET df = t.df + excluded.df, tokens = t.tokens + excluded.tokens;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER memories_terms_changed AFTER UPDATE OF text, context ON memories
            FOR EACH ROW WHEN (OLD.search IS DISTINCT FROM NEW.search) EXECUTE FUNCTION count_terms();
        CREATE TRIGGER session_docs_terms_changed AFTER UPDATE OF text ON session_docs
            FOR EACH ROW WHEN (OLD.search IS DISTINCT FROM NEW.search) EXECUTE FUNCTION count_terms();
        """,
    ),
    Migration(
        "0007_last_written",
        """
        -- The memory a user last wrote with an app (pipeline/episodes.py, at every add): one index
        -- entry, where memories_user_created filtered every row of another app.
        CREATE INDEX memories_user_app_created ON memories(user_id, app_name, created_at DESC, rowid DESC);
        """,
    ),
    Migration(
        "0008_user_lexemes",
        """
        -- The full-text arms look up the lexemes of one user. A GIN index on search holds every
        -- user's rows: at 1,000 users x 1,000 memories the planner AND-ed it with the user's key
        -- range and read every user's rows holding a query word (46,663 for two words, 24 ms), and
        -- a GIN index led by user_id needs btree_gin, which pgserver does not ship. So each row
        -- also keeps its lexemes prefixed by a short key of its user ('1a2b3c4d:tea'), indexed;
        -- ranked_sql filters by overlap with the query's keyed lexemes and keeps search @@ as the
        -- recheck, so the matches are the same. md5, not hashtext: the key is stored, and must not
        -- change with the server's version. Two users sharing a key only share candidates.
        CREATE FUNCTION keyed_lexemes(user_id text, v tsvector) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT coalesce(array_agg(left(md5(user_id), 8) || ':' || lexeme), '{}')
                  FROM unnest(tsvector_to_array(v)) lexeme $$;
        CREATE OR REPLACE FUNCTION index_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'memories' THEN
                NEW.search := setweight(to_tsvector('cortadel', search_words(NEW.text)), 'A')
                              || setweight(to_tsvector('cortadel', search_words(NEW.context)), 'B');
            ELSE
                NEW.search := to_tsvector('cortadel', search_words(NEW.text));
            END IF;
            NEW.tokens := tsvector_tokens(NEW.search);
            NEW.user_lexemes := keyed_lexemes(NEW.user_id, NEW.search);
            RETURN NEW;
        END $$;
        ALTER TABLE memories ADD COLUMN user_lexemes text[];
        ALTER TABLE session_docs ADD COLUMN user_lexemes text[];
        -- from the stored vectors: no second tokenising (and no term_stats trigger: search is unchanged)
        UPDATE memories SET user_lexemes = keyed_lexemes(user_id, search);
        UPDATE session_docs SET user_lexemes = keyed_lexemes(user_id, search);
        ALTER TABLE memories ALTER COLUMN user_lexemes SET NOT NULL;
        ALTER TABLE session_docs ALTER COLUMN user_lexemes SET NOT NULL;
        CREATE INDEX memories_user_lexemes ON memories USING gin(user_lexemes) WITH (fastupdate = off);
        CREATE INDEX session_docs_user_lexemes ON session_docs USING gin(user_lexemes) WITH (fastupdate = off);
        DROP INDEX memories_search;
        DROP INDEX session_docs_search;
        """,
    ),
    Migration(
        "0009_changed_version",
        """
        -- The user version of the write that last changed the row (its embedding, text, context,
        -- state, anything): a replica whose cached vectors and lexemes are at version v reads only
        -- the rows with changed_version > v, not the user's every row (storage/postgres.py
        -- _changed_since). The backend sets it in every write; a row written by anything else
        -- (an INSERT or COPY that does not name it) takes the largest bigint, so every replica
        -- reads it again at each catch-up rather than miss it. Existing rows count as older than
        -- any cached entry: 0 (a constant default: no rewrite of the table).
        ALTER TABLE memories ADD COLUMN changed_version bigint NOT NULL DEFAULT 0;
        ALTER TABLE memories ALTER COLUMN changed_version SET DEFAULT 9223372036854775807;
        CREATE INDEX memories_user_changed ON memories(user_id, changed_version);
        """,
    ),
    Migration(
        "0010_session_docs_changed_version",
        """
        -- The same for session documents: a replica whose cached session lexemes are at version v
        -- reads the documents with changed_version > v (storage/postgres.py session_search), not
        -- every document of the user. Rows written by anything else take the largest bigint.
        ALTER TABLE session_docs ADD COLUMN changed_version bigint NOT NULL DEFAULT 0;
        ALTER TABLE session_docs ALTER COLUMN changed_version SET DEFAULT 9223372036854775807;
        CREATE INDEX session_docs_user_changed ON session_docs(user_id, changed_version);
        """,
    ),
    Migration(
        "0011_session_docs_unkeyed",
        """
        -- Session documents lose their keyed lexemes (0008). A user's documents are few and found
        -- by the user alone (user_id leads the primary key); those of a user with many memories
        -- are ranked in process. Each append re-indexed the whole document: a GIN entry and an
        -- md5 key per distinct lexeme, 0.95 of the 2.6 ms of a one-sentence append to a document
        -- of 800 tokens.
        CREATE OR REPLACE FUNCTION index_terms() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'memories' THEN
                NEW.search := setweight(to_tsvector('cortadel', search_words(NEW.text)), 'A')
                              || setweight(to_tsvector('cortadel', search_words(NEW.context)), 'B');
                NEW.user_lexemes := keyed_lexemes(NEW.user_id, NEW.search);
            ELSE
                NEW.search := to_tsvector('cortadel', search_words(NEW.text));
            END IF;
            NEW.tokens := tsvector_tokens(NEW.search);
            RETURN NEW;
        END $$;
        ALTER TABLE session_docs DROP COLUMN user_lexemes;  -- its GIN index with it
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
