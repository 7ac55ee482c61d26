"""What the tests share: services and servers in their own processes, client agents,
plain XMPP peers, MCP and web clients, stand-ins, and the command line run in this
process. Nothing here is a test."""
