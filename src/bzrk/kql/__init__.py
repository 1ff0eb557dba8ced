"""The KQL language: tokens, parser, syntax tree, binder, built-in catalogue, diagnostics."""
