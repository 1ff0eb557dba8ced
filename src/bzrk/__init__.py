"""bzrk: OTel ingest, ClickHouse storage and KQL over gRPC, ADX REST, MCP, a CLI and a web UI."""

__version__ = "0.1.0"
