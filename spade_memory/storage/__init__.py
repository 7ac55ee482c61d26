"""Storage every service shares: the engines (SQLite, PostgreSQL) and their connections,
request ids, answers kept for retries, FTS5 queries, files written safely, private
folders, named faults and byte quotas. It imports ``protocol`` only."""
