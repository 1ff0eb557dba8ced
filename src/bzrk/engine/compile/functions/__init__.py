"""Scalar functions, aggregates and their families: KQL calls → typed ClickHouse SQL."""
