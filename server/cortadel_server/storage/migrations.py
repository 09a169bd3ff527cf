"""Schema migrations for the SQLite backend: named steps, applied once each, in order, recorded.

Add a step by appending to ``MIGRATIONS``; never edit one that has shipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from cortadel_server.storage.sqlite_terms import register


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_memories",
        """
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            user_key TEXT NOT NULL,
            text TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            gist TEXT,
            memory_type TEXT NOT NULL DEFAULT 'semantic',
            categories TEXT NOT NULL DEFAULT '[]',
            tags TEXT NOT NULL DEFAULT '[]',
            project TEXT,
            app_name TEXT,
            session_id TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL DEFAULT 'active',
            source_turn_uuids TEXT NOT NULL DEFAULT '[]',
            transcript_path TEXT,
            extraction_status TEXT NOT NULL DEFAULT 'done',
            valid_at REAL,
            invalid_at REAL,
            created_at REAL NOT NULL,
            expired_at REAL,
            superseded_by TEXT,
            updated_at REAL,
            embedding BLOB
        );
        CREATE INDEX memories_user_created ON memories(user_id, created_at DESC);
        CREATE INDEX memories_user_fingerprint ON memories(user_id, fingerprint);
        CREATE INDEX memories_user_session ON memories(user_id, session_id);

        -- External-content FTS: the text lives once, in memories. user_key is a per-user token so a
        -- MATCH narrows to one user inside the index instead of ranking every user's rows.
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, user_key, content='memories', content_rowid='rowid', tokenize='porter unicode61'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, user_key) VALUES (new.rowid, new.text, new.user_key);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, user_key)
                VALUES ('delete', old.rowid, old.text, old.user_key);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, user_key)
                VALUES ('delete', old.rowid, old.text, old.user_key);
            INSERT INTO memories_fts(rowid, text, user_key) VALUES (new.rowid, new.text, new.user_key);
        END;

        -- Bumped on every change to a user's memories; readers use it to know a cache is stale,
        -- also when another process (cortadel mcp over stdio) wrote to the same file.
        CREATE TABLE user_versions (user_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;

        CREATE TABLE memory_events (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            event TEXT NOT NULL,
            at REAL NOT NULL,
            detail TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX memory_events_memory ON memory_events(user_id, memory_id, id);

        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            canonical TEXT NOT NULL,
            kind TEXT NOT NULL,
            UNIQUE (user_id, canonical)
        );
        CREATE TABLE entity_aliases (
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            alias TEXT NOT NULL,
            PRIMARY KEY (entity_id, alias)
        ) WITHOUT ROWID;
        CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, entity_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_entities_entity ON memory_entities(entity_id);

        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            user_id TEXT NOT NULL,
            memory_id TEXT,
            payload TEXT NOT NULL DEFAULT '{}',
            status TEXT NOT NULL DEFAULT 'queued',
            attempts INTEGER NOT NULL DEFAULT 0,
            run_after REAL NOT NULL,
            last_error TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX jobs_due ON jobs(status, run_after);

        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        """,
    ),
    Migration(
        "0002_session_docs",
        """
        -- One document per (user, session): its members' texts in write order, kept up to date by
        -- the storage layer on every write. The session arm ranks these and expands to members.
        CREATE TABLE session_docs (
            rowid INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            user_key TEXT NOT NULL,
            text TEXT NOT NULL,
            UNIQUE (user_id, session_id)
        );
        CREATE VIRTUAL TABLE session_docs_fts USING fts5(
            text, user_key, content='session_docs', content_rowid='rowid', tokenize='porter unicode61'
        );
        CREATE TRIGGER session_docs_fts_insert AFTER INSERT ON session_docs BEGIN
            INSERT INTO session_docs_fts(rowid, text, user_key) VALUES (new.rowid, new.text, new.user_key);
        END;
        CREATE TRIGGER session_docs_fts_delete AFTER DELETE ON session_docs BEGIN
            INSERT INTO session_docs_fts(session_docs_fts, rowid, text, user_key)
                VALUES ('delete', old.rowid, old.text, old.user_key);
        END;
        CREATE TRIGGER session_docs_fts_update AFTER UPDATE OF text ON session_docs BEGIN
            INSERT INTO session_docs_fts(session_docs_fts, rowid, text, user_key)
                VALUES ('delete', old.rowid, old.text, old.user_key);
            INSERT INTO session_docs_fts(rowid, text, user_key) VALUES (new.rowid, new.text, new.user_key);
        END;
        -- Members in write order, for expansion and neighbour context.
        CREATE INDEX memories_user_session_created ON memories(user_id, session_id, created_at, rowid);
        INSERT INTO session_docs(user_id, session_id, user_key, text)
            SELECT user_id, session_id, user_key, group_concat(text, char(10))
            FROM (SELECT user_id, session_id, user_key, text FROM memories
                  WHERE session_id IS NOT NULL ORDER BY user_id, session_id, created_at, rowid)
            GROUP BY user_id, session_id;
        """,
    ),
    Migration(
        "0003_turn_context",
        """
        -- The text written just before a memory in the same session (a question, for the reply
        -- that answers it), indexed as a second, lower-weighted full-text column. Kept by the
        -- storage layer on every write and delete, so deleted text leaves its neighbours too.
        ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT '';
        UPDATE memories SET context = COALESCE((
            SELECT p.text FROM memories p
            WHERE p.user_id = memories.user_id AND p.session_id = memories.session_id
              AND (p.created_at < memories.created_at
                   OR (p.created_at = memories.created_at AND p.rowid < memories.rowid))
            ORDER BY p.created_at DESC, p.rowid DESC LIMIT 1
        ), '') WHERE session_id IS NOT NULL;

        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_delete;
        DROP TRIGGER memories_fts_update;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, context, user_key, content='memories', content_rowid='rowid', tokenize='porter unicode61'
        );
        INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, context, user_key)
                VALUES (new.rowid, new.text, new.context, new.user_key);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, context, user_key)
                VALUES ('delete', old.rowid, old.text, old.context, old.user_key);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, context ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, context, user_key)
                VALUES ('delete', old.rowid, old.text, old.context, old.user_key);
            INSERT INTO memories_fts(rowid, text, context, user_key)
                VALUES (new.rowid, new.text, new.context, new.user_key);
        END;
        """,
    ),
    Migration(
        "0004_purge_and_embedding_repair",
        """
        -- A deleted row's tokens leave the full-text indexes at once, instead of lingering in index
        -- segments (behind a delete marker) until a merge: deletion must really delete.
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO session_docs_fts(session_docs_fts, rank) VALUES ('secure-delete', 1);
        -- Rows without an embedding (left by an interrupted reindex of an older version), found and
        -- counted without a scan by the health check and the startup repair.
        CREATE INDEX memories_missing_embedding ON memories(rowid) WHERE embedding IS NULL;
        """,
    ),
    Migration(
        "0005_reconciliation",
        """
        -- Reconciliation (curation/): runs of a user, and the suggestions they found. A suggestion
        -- quotes memory ids, never memory text, so a deleted memory leaves no copy here.
        CREATE TABLE reconcile_runs (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            status TEXT NOT NULL,
            types TEXT NOT NULL DEFAULT '[]',
            lim INTEGER NOT NULL,
            created_at REAL NOT NULL,
            started_at REAL,
            finished_at REAL,
            error TEXT,
            suggested INTEGER NOT NULL DEFAULT 0,
            auto_approved INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX reconcile_runs_user ON reconcile_runs(user_id, created_at DESC);
        CREATE TABLE reconcile_suggestions (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            confidence REAL NOT NULL,
            subject TEXT NOT NULL,
            evidence TEXT NOT NULL,
            created_at REAL NOT NULL,
            status TEXT NOT NULL,
            run_id TEXT,
            decided_at REAL,
            decided_by TEXT,
            undo TEXT,
            undone_at REAL,
            UNIQUE (user_id, key)
        );
        CREATE INDEX reconcile_suggestions_user ON reconcile_suggestions(user_id, status, created_at DESC);
        """,
    ),
    Migration(
        "0006_memory_recalls",
        """
        -- When a memory was last returned by a search (curation/fading.py): kept apart from the
        -- memories so a recall is a small write that never moves the user's version on.
        CREATE TABLE memory_recalls (
            user_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (user_id, memory_id)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        "0007_per_user_terms",
        """
        -- Each user's words get doclists of their own (storage/sqlite_terms.py): a search and its
        -- BM25 statistics read only that user's rows, however many other users the file holds.
        -- Contentless: the text lives once, in memories; user_terms() is what the index holds. A
        -- delete hands the index the row's terms again, so secure-delete takes every one out.
        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_delete;
        DROP TRIGGER memories_fts_update;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, context, content='', tokenize='ascii'
        );
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO memories_fts(rowid, text, context)
            SELECT rowid, user_terms(user_key, text), user_terms(user_key, context) FROM memories;
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, context)
                VALUES (new.rowid, user_terms(new.user_key, new.text), user_terms(new.user_key, new.context));
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, context)
                VALUES ('delete', old.rowid, user_terms(old.user_key, old.text), user_terms(old.user_key, old.context));
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, context ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, context)
                VALUES ('delete', old.rowid, user_terms(old.user_key, old.text), user_terms(old.user_key, old.context));
            INSERT INTO memories_fts(rowid, text, context)
                VALUES (new.rowid, user_terms(new.user_key, new.text), user_terms(new.user_key, new.context));
        END;

        DROP TRIGGER session_docs_fts_insert;
        DROP TRIGGER session_docs_fts_delete;
        DROP TRIGGER session_docs_fts_update;
        DROP TABLE session_docs_fts;
        CREATE VIRTUAL TABLE session_docs_fts USING fts5(text, content='', tokenize='ascii');
        INSERT INTO session_docs_fts(session_docs_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO session_docs_fts(rowid, text) SELECT rowid, user_terms(user_key, text) FROM session_docs;
        CREATE TRIGGER session_docs_fts_insert AFTER INSERT ON session_docs BEGIN
            INSERT INTO session_docs_fts(rowid, text) VALUES (new.rowid, user_terms(new.user_key, new.text));
        END;
        CREATE TRIGGER session_docs_fts_delete AFTER DELETE ON session_docs BEGIN
            INSERT INTO session_docs_fts(session_docs_fts, rowid, text) VALUES ('delete', old.rowid, user_terms(old.user_key, old.text));
        END;
        CREATE TRIGGER session_docs_fts_update AFTER UPDATE OF text ON session_docs BEGIN
            INSERT INTO session_docs_fts(session_docs_fts, rowid, text) VALUES ('delete', old.rowid, user_terms(old.user_key, old.text));
            INSERT INTO session_docs_fts(rowid, text) VALUES (new.rowid, user_terms(new.user_key, new.text));
        END;
        """,
    ),
    Migration(
        "0008_job_claimers",
        # which process took a running job (storage/sqlite_claims.py), so another takes it over only
        # once that process is gone; jobs left running before this have none and count as orphaned
        "ALTER TABLE jobs ADD COLUMN claimed_by TEXT;",
    ),
    Migration(
        "0009_changed_version",
        """
        -- The user version of the write that last changed the row's embedding, text, context or
        -- current state: a process whose cached vectors and term index are at version v reads only
        -- the rows with changed_version > v, not the user's every row (storage/sqlite.py
        -- _changed_since). Every write of the backend sets it; existing rows count as older than
        -- any cached entry (0). An insert that does not name it (anything but the backend) gets the
        -- largest integer: every process reads it again at each catch-up rather than miss it.
        ALTER TABLE memories ADD COLUMN changed_version INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX memories_user_changed ON memories(user_id, changed_version);
        CREATE TRIGGER memories_unstamped AFTER INSERT ON memories WHEN new.changed_version = 0 BEGIN
            UPDATE memories SET changed_version = 9223372036854775807 WHERE rowid = new.rowid;
        END;
        """,
    ),
    Migration(
        "0010_session_docs_changed_version",
        """
        -- The same for session documents, and the version of the write that last replaced a
        -- document's text rather than appended to it: a process whose session index is at version
        -- v reads the documents with changed_version > v and extends its rows by what was appended,
        -- unless a document was replaced since (rebuilt_version > v: read whole).
        ALTER TABLE session_docs ADD COLUMN changed_version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE session_docs ADD COLUMN rebuilt_version INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX session_docs_user_changed ON session_docs(user_id, changed_version);
        CREATE TRIGGER session_docs_unstamped AFTER INSERT ON session_docs WHEN new.changed_version = 0 BEGIN
            UPDATE session_docs SET changed_version = 9223372036854775807, rebuilt_version = 9223372036854775807
            WHERE rowid = new.rowid;
        END;
        """,
    ),
    Migration(
        "0011_memory_terms_at_write_end",
        """
        -- The backend hands the full-text index a write's new memories at the end of the write,
        -- all at once (storage/sqlite.py insert_memory): a statement opened after FTS5 took a row
        -- flushed its pending terms to a segment of their own, and every insert (its trigger) was
        -- such a statement, so each memory cost a flush and the merges of the tiny segments. The
        -- trigger stays for inserts that are not the backend's (they name no changed_version).
        DROP TRIGGER memories_fts_insert;
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories WHEN new.changed_version = 0 BEGIN
            INSERT INTO memories_fts(rowid, text, context)
                VALUES (new.rowid, user_terms(new.user_key, new.text), user_terms(new.user_key, new.context));
        END;
        """,
    ),
)


def migrate(conn: apsw.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction, one process at a time. Returns
    the names applied."""
    register(conn)  # the full-text triggers (0007 on) call user_terms()
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    applied = []
    for step in MIGRATIONS:
        if step.name in done:
            continue
        # Asked again under the write lock: two processes opening a new file at once both found
        # the step pending, and the second failed on a table the first had made.
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not any(conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (step.name,))):
                conn.execute(step.sql)
                conn.execute(
                    "INSERT INTO schema_migrations(name, applied_at) VALUES (?, datetime('now'))", (step.name,)
                )
                applied.append(step.name)
        except BaseException:
            if not conn.getautocommit():  # some errors end the transaction themselves
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return applied
