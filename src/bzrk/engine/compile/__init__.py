"""Compilation of a KQL syntax tree to ClickHouse SQL (one SELECT with CTEs per statement)."""
