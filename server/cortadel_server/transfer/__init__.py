"""Taking data out and in: lossless export and import (JSON Lines, transfer/jsonl.py), moving a
store between backends (transfer/migrate.py), and importers from other memory tools
(transfer/importers/). The ``cortadel export|import|migrate`` commands are thin shells over these."""

#: what `cortadel import --format` reads besides its own export (transfer/importers/)
FOREIGN_FORMATS = ("mem0", "zep", "mastra", "messages")
