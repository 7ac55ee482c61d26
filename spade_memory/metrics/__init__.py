"""The figures of this process in the Prometheus text format (prometheus_client): what
the memory agents served and how fast (``serving``), the work waiting in the background,
and the web view's own (logins, searches). One registry, exported at the web view's
``/metrics`` behind a token. Imports nothing of the project."""
