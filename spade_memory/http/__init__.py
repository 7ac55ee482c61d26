"""What the two HTTP front doors (the MCP server over HTTP, the web view) share: the
address they listen at, given as ``[HOST:]PORT``, and its socket bound before anything
is served. Imports nothing of the project."""
