"""Engine backends: embedded chDB and a ClickHouse server through clickhouse-connect."""
