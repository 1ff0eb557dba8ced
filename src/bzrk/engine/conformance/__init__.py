"""The KQL conformance runner: corpora in ``../shared/kql-conformance`` through the engine."""
