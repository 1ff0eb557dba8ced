"""Tabular operators, one module per family: each compiles its operator into CTEs."""
