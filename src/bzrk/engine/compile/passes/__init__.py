"""Rewrites of the compiled CTE chain before it is rendered: fusion and pruning."""
