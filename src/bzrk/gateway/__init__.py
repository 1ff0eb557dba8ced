"""The public edge: authentication, forwarding, OAuth endpoints, protected-resource metadata."""
