"""LLM agents with memory, for spade_llm: tools, the agent, recall, providers, a chat user.

Importing this package imports nothing of spade_llm; its modules do (``tools``,
``agent``, ``providers``), so the memory agents never load litellm.
"""
