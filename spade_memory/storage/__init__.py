"""Storage helpers every store shares: connections, request ids, FTS queries, files."""
