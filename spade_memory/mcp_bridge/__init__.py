"""An MCP server over the memory agents: the same memory for every assistant of a team.

``spade-memory mcp`` runs it. It logs in to the deployment as one XMPP account
(``link``) and talks to the memory agents like any peer, through the client, so
identity, spaces, quotas and change notices hold as for any agent. Its tools are the
memory tool specs (``tools``: the same names, descriptions and schemas as the spade_llm
tools); its resources are a space's recent memories and working-memory sessions
(``resources``), updated from the spaces' change notices (``watch``); ``server`` builds
the SDK's low-level server and ``transports`` runs it over stdio or streamable HTTP.
Needs the ``mcp`` extra.
"""
