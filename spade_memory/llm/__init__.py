"""LLM agents with memory, for spade_llm: tools, the agent, recall, providers, a chat user.

Importing this package imports nothing of spade_llm; its modules do (``tools``,
``agent``, ``providers``), so the memory agents never load litellm (the ``llm`` extra installs it).
It imports ``protocol``, ``xmpp`` and ``client``: an LLM agent is a client of memory.
"""
