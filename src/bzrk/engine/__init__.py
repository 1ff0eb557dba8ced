"""Planning and execution of KQL on ClickHouse: windows, plans, SQL, backends, snapshots."""
