"""ClickHouse schema of bzrk tables, writes, and the catalogue of databases, tables and fields."""
