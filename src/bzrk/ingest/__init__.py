"""OTLP and Loki receivers, ingest tokens, batching and durable acknowledgement."""
