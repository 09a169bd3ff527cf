"""The ``cortadel`` command: a thin shell over the library. Each command builds the core, calls one method."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortadel_server import __version__
from cortadel_server.config import SETTINGS, Settings
from cortadel_server.errors import ConfigError, CortadelError
from cortadel_server.logs import configure_logging
from cortadel_server.transfer import FOREIGN_FORMATS

if TYPE_CHECKING:
    from tqdm import tqdm

    from cortadel_server.storage.sqlite_backup import BackupCopy

log = logging.getLogger("cortadel")


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        data=getattr(args, "data", None),
        workers=getattr(args, "workers", None),
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from cortadel_server.listening import ListeningServer, uvicorn_config
    from cortadel_server.server import build_app

    settings = _settings(args)
    configure_logging(settings)
    if settings.auth_secret is None and settings.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("binding to %s with no CORTADEL_AUTH_SECRET: every memory is open to anyone who can reach this port", settings.host)
    port_file = Path(args.port_file) if args.port_file else None

    def listening(port: int) -> None:
        workers = f", {settings.workers} worker processes" if settings.workers > 1 else ""
        log.info("Cortadel %s serving on http://%s:%s (data: %s%s)", __version__, settings.host, port,
                 settings.database_location, workers)
        if port_file is not None:
            partial = port_file.with_name(port_file.name + ".partial")
            partial.write_text(f"{port}\n", encoding="utf-8")
            partial.replace(port_file)  # a reader never sees a half-written file

    if settings.workers > 1:
        from cortadel_server.service import MemoryService
        from cortadel_server.worker_processes import serve_workers

        MemoryService.open(settings).close()  # migrations and the start checks, once, before any worker
        return serve_workers(settings, listening)
    server = ListeningServer(uvicorn_config(build_app(settings), settings), on_listening=listening)
    server.run()
    return 0 if server.started else 3  # 3: uvicorn's own exit code for a failed startup


def cmd_mint_key(args: argparse.Namespace) -> int:
    from cortadel_server.auth import mint_key

    settings = _settings(args)
    if not settings.auth_secret:
        raise ConfigError("CORTADEL_AUTH_SECRET: set it to mint keys (keys are HMACs under this secret)")
    print(mint_key(settings.auth_secret, args.user_id))
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from cortadel_server.service import MemoryService

    settings = _settings(args).replace(allow_dim_mismatch=True)
    configure_logging(settings)
    service = MemoryService.open(settings)
    try:
        total = service.storage.count_memories()
        with tqdm(total=total, unit="memory", desc=f"re-embedding with {service.model_label}") as bar:
            count = service.reindex(progress=bar.update)
        print(f"Re-embedded {count} memories with {service.model_label} (dimension {service.embedder.dim}).")
    finally:
        service.close()
    return 0


def cmd_delete_user(args: argparse.Namespace) -> int:
    from cortadel_server.service import MemoryService

    settings = _settings(args).replace(allow_dim_mismatch=True)  # erasing needs no vector search
    configure_logging(settings)
    service = MemoryService.open(settings)
    try:
        erased = service.delete_user(args.user_id)
    finally:
        service.close()
    print(json.dumps({"user_id": args.user_id, "erased": erased}, indent=2))
    return 0


def _sqlite_database(settings: Settings, command: str) -> Path:
    if settings.postgres_url is not None:
        raise ConfigError(
            f"cortadel {command}: works on the SQLite file; with PostgreSQL (CORTADEL_DATABASE_URL) use "
            "pg_dump and pg_restore (docs/deploy.md)"
        )
    return settings.database_path


def _report(copy: BackupCopy) -> None:
    print(json.dumps({"file": str(copy.path), "bytes": copy.bytes, "memories": copy.memories, "seconds": copy.seconds}, indent=2))


def cmd_backup(args: argparse.Namespace) -> int:
    from cortadel_server.storage.sqlite_backup import backup_database

    database = _sqlite_database(_settings(args), "backup")
    _report(backup_database(database, Path(args.file)))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from cortadel_server.storage.sqlite_backup import restore_database

    database = _sqlite_database(_settings(args), "restore")
    if database.exists() and not args.force:
        raise ConfigError(f"cortadel restore: {database} exists; pass --force to replace it with {args.file}")
    _report(restore_database(Path(args.file), database))
    return 0


def _progress_bar(total: int | None, desc: str) -> tqdm:
    from tqdm import tqdm

    # disable=None: drawn on a terminal only, so piped output and logs stay clean
    return tqdm(total=total, unit="memory", desc=desc, file=sys.stderr, disable=None)


def cmd_export(args: argparse.Namespace) -> int:
    from cortadel_server.storage import open_storage
    from cortadel_server.transfer.dump import export_lines, export_to_file, write_export

    storage = open_storage(_settings(args))
    try:
        users = args.user or None
        total = sum(storage.user_row_counts(u)["memories"] for u in users) if users else storage.count_memories()
        with _progress_bar(total, "exporting") as bar:
            if args.output == "-":
                write_export(export_lines(storage, users, bar.update), sys.stdout)
            else:
                export_to_file(storage, Path(args.output), users, bar.update)
    finally:
        storage.close()
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from cortadel_server.transfer.load import file_source, import_lines, read_file

    path = Path(args.file)
    if args.format != "cortadel":
        return _import_foreign(args, path)
    from cortadel_server.storage import open_storage

    storage = open_storage(_settings(args))
    try:
        with _progress_bar(None, f"importing {path.name}") as bar:
            report = import_lines(storage, read_file(path), source=file_source(path), progress=bar.update)
    finally:
        storage.close()
    print(json.dumps({"users": report.users, "resumed": report.resumed, "counts": report.counts}, indent=2))
    return 0


def _import_foreign(args: argparse.Namespace, path: Path) -> int:
    from cortadel_server.service import MemoryService
    from cortadel_server.transfer.importers import import_foreign

    settings = _settings(args)
    configure_logging(settings)
    service = MemoryService.open(settings)
    try:
        with _progress_bar(None, f"importing {path.name} ({args.format})") as bar:
            report = import_foreign(service, args.format, path, user_id=args.user, progress=bar.update)
    finally:
        service.close()
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from cortadel_server.transfer.migrate import migrate_store, open_location

    source = open_location(args.source)
    try:
        target = open_location(args.target)
        try:
            with _progress_bar(source.count_memories(), "migrating") as bar:
                done = migrate_store(source, target, bar.update)
        finally:
            target.close()
    finally:
        source.close()
    print(json.dumps(
        {"users": done.users, "memories": done.memories, "resumed": done.imported.resumed, "copied": done.imported.counts},
        indent=2,
    ))
    return 0


def cmd_version(args: argparse.Namespace) -> int:
    print(f"cortadel {__version__}")
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    from cortadel_server.openapi import generate_openapi

    text = json.dumps(generate_openapi(), indent=2, sort_keys=True) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from cortadel_server.mcp.stdio import run_stdio

    settings = _settings(args)
    configure_logging(settings, stream=sys.stderr)
    run_stdio(settings, user_id=args.user, client_name=args.client, project=args.project)
    return 0


def _setting_value(name: str) -> Callable[[str], Any]:
    """A flag's value read as the setting's own variable is (the same bounds, the same message)."""
    [setting] = [s for s in SETTINGS if s.name == name]

    def parse(text: str) -> Any:
        try:
            return setting.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="cortadel", description="Self-hosted long-term memory for AI agents.")
    sub = root.add_subparsers(dest="command", required=True)

    def with_data(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--data", help="SQLite database file (CORTADEL_DATA; default ./data/cortadel.db)")
        return p

    serve = with_data(sub.add_parser("serve", help="run the REST + MCP server"))
    serve.add_argument("--host", help="interface to bind (CORTADEL_HOST; default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (CORTADEL_PORT; default 3001; 0 lets the system pick a free one)")
    serve.add_argument("--port-file", help="once listening, write the bound port to this file (for --port 0)")
    serve.add_argument("--workers", type=_setting_value("workers"), help="server processes on the one port (CORTADEL_WORKERS; default 1)")
    serve.set_defaults(func=cmd_serve)

    mint = sub.add_parser("mint-key", help="print an API key bound to a user (needs CORTADEL_AUTH_SECRET)")
    mint.add_argument("user_id")
    mint.set_defaults(func=cmd_mint_key)

    with_data(sub.add_parser("reindex", help="re-embed every memory with the configured embedder (resumes an interrupted run)")).set_defaults(func=cmd_reindex)
    delete_user = with_data(sub.add_parser("delete-user", help="erase everything of one user and print the receipt"))
    delete_user.add_argument("user_id")
    delete_user.set_defaults(func=cmd_delete_user)
    backup = with_data(sub.add_parser("backup", help="copy the SQLite database to a file, online (writes go on meanwhile)"))
    backup.add_argument("file", help="the backup file to write (replaced if it exists)")
    backup.set_defaults(func=cmd_backup)
    restore = with_data(sub.add_parser("restore", help="put a backup in place of the SQLite database (the server stopped)"))
    restore.add_argument("file", help="a file written by `cortadel backup`")
    restore.add_argument("--force", action="store_true", help="replace an existing database")
    restore.set_defaults(func=cmd_restore)
    export = with_data(sub.add_parser("export", help="write every memory, its history, entities and sessions as JSON Lines"))
    export.add_argument("--user", action="append", help="only this user (repeatable; default: every user)")
    export.add_argument("--output", "-o", default="-", help="file to write (default: stdout)")
    export.set_defaults(func=cmd_export)
    imp = with_data(sub.add_parser("import", help="load an export, or memories from another tool (--format)"))
    imp.add_argument("file", help="the file to read")
    imp.add_argument(
        "--format", default="cortadel", choices=["cortadel", *FOREIGN_FORMATS],
        help="cortadel: a `cortadel export` file, loaded as is; the others run through the write pipeline",
    )
    imp.add_argument("--user", help="the user to file the memories under when the file names none")
    imp.set_defaults(func=cmd_import)
    migrate = sub.add_parser("migrate", help="copy a whole store to another database (resumable, verified)")
    migrate.add_argument("--from", dest="source", required=True, help="postgresql://… URL or SQLite file")
    migrate.add_argument("--to", dest="target", required=True, help="postgresql://… URL or SQLite file")
    migrate.set_defaults(func=cmd_migrate)
    sub.add_parser("version", help="print the version").set_defaults(func=cmd_version)

    openapi = sub.add_parser("openapi", help="write the generated OpenAPI spec")
    openapi.add_argument("--output", "-o", default="-", help="file to write (default: stdout)")
    openapi.set_defaults(func=cmd_openapi)

    mcp = with_data(sub.add_parser("mcp", help="serve the MCP tools over stdio for one user"))
    mcp.add_argument("--user", required=True, help="the user id (namespace) of every tool call")
    mcp.add_argument("--client", default="stdio", help="client name, recorded as the app name of writes")
    mcp.add_argument("--project", help="scope the session to a project")
    mcp.set_defaults(func=cmd_mcp)
    return root


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        code = args.func(args)
    except CortadelError as exc:
        print(f"cortadel: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)
