"""The bzrk command-line client."""
