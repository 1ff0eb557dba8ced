"""Process composition: settings, bzrk dev, bzrk serve, health, logging."""
