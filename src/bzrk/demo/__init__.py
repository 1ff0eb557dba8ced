"""Deterministic, realistic OTLP demo data for a small microservice system."""
