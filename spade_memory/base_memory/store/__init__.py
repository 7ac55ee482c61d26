"""The long-term store: memories in SQLite (or PostgreSQL), written in one transaction
per batch, read through one condition.

``long_term`` (``LongTermStore``: open, apply a batch, purge, close), ``engine``
(SQLite or PostgreSQL, chosen once), ``listeners`` (who hears of commits), ``dispatch``
(one batch's ops through the dispatch table), ``context`` (what the handlers share),
``reads``, ``writes`` and ``deletes`` (the handlers), ``runs`` (plain stores,
one or a run), ``effects`` (what a batch carries past its own rows), ``ledger`` and
``words`` (bookkeeping rows and the FTS5 index of a batch, one statement per table),
``journal`` (change feed and counters left by every commit), ``history`` (earlier
versions), ``rows`` (rows with names), ``filters`` (which memories an op selects),
``access_counts``, ``sizes`` (byte quotas), ``tables`` and ``pg_tables`` (the SQL
tables and their migrations), ``imports`` (spade_llm's files).
"""
