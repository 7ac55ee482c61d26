"""The memory tools a model calls, whatever carries the call: one spec per tool
(``spec``), every spec (``catalog``), a model's arguments made into an op
(``arguments``), and the sentences it reads back (``sentences``).

spade_llm's tools (``llm.tools``) and the MCP server's (``mcp_bridge``) are both built
from these specs. It imports ``protocol`` only: no XMPP, no spade_llm, no MCP.
"""

from spade_memory.tools.arguments import Defaults, ToolArgumentError, op_for
from spade_memory.tools.catalog import EVERY_TOOL_SPEC, MORE_TOOL_SPECS, TOOL_SPECS
from spade_memory.tools.spec import ToolSpec

__all__ = [
    "EVERY_TOOL_SPEC",
    "MORE_TOOL_SPECS",
    "TOOL_SPECS",
    "Defaults",
    "ToolArgumentError",
    "ToolSpec",
    "op_for",
]
