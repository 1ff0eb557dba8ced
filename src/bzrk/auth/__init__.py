"""Token formats, hashing, internal token signing, OAuth and device-flow logic, permissions."""
