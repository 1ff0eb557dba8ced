"""The metadata store: databases, tables, users, principals, tokens, OAuth clients, runs, saved queries.

SQLAlchemy Core over SQLite (embedded default, a file in the data dir, WAL mode) or PostgreSQL
(by URL). Alembic migrations run on start. Nothing here imports the rest of bzrk.
"""

from bzrk.meta.store import MetaStore, new_id

__all__ = ["MetaStore", "new_id"]
