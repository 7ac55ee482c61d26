"""Serving: how a memory agent turns messages into replies, the same for every service.

``agent`` (``MemoryAgent`` and ``ServeRequests``: admission, dedupe by request id,
back-pressure with ``retry_after``, replies), ``fairness`` (one queue per sender,
served in turn), ``plugin`` (the contract a service fulfils: ``ServicePlugin`` and
``MemoryService``). It imports ``protocol``, ``xmpp`` and ``storage``; never a service.
"""
