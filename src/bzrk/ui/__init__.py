"""The web UI: built assets and the routes that serve them."""
