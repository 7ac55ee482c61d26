"""Configurable limits a memory agent enforces; exceeding one is ``resource-constraint``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask of a memory agent."""

    max_content_chars: int = 16_384
    """Longest content, context or query, in characters."""
    max_results: int = 1_000
    """Largest ``limit`` a request may ask for."""
    max_offset: int = 1_000_000
    """Largest ``offset`` a list may be asked to skip to (as many memories as a space
    holds by default; further than that, filters narrow the list sooner)."""
    max_body_bytes: int = 262_144
    """Largest request body, in bytes of UTF-8, checked before parsing."""
    max_batch_ops: int = 100
    """Most ops one ``batch`` request may carry."""
    max_in_flight: int = 32
    """Most requests of one sender waiting or being served; more are refused at once."""
    max_in_progress: int = 16
    """Most requests served at the same time, whoever sent them; more wait, senders in turn."""
    max_sender_ops: int = 32
    """Most ops of one sender being served at the same time (a batch counts its ops; a
    request over it is served alone): its other requests wait while others' are served."""
    sender_answer_rate: int = 1 << 20
    """Bytes a second of answers one sender is served, on average (a second's worth at
    once; 0: no limit): past it, its requests wait while others' are served."""
    max_waiting: int = 1_024
    """Most requests waiting for a turn, all senders together; more are refused at once."""
    max_memories_per_owner: int = 1_000_000
    """Most long-term memories one bare JID may have stored, in all spaces together."""
    max_bytes_per_owner: int = 1 << 30
    """Most bytes of content and context one bare JID may have stored, in all spaces."""
    max_memories_per_space: int = 1_000_000
    """Most memories one shared space may hold (a space's own quota may say otherwise)."""
    max_bytes_per_space: int = 1 << 30
    """Most bytes of content and context one shared space may hold."""
    retry_answers_bytes: int = 16 << 20
    """Bytes of answers to recent writes an agent keeps, so that a retry of one (same
    request id) is answered, not applied again; the oldest are forgotten first."""
    max_versions: int = 20
    """Most versions of one long-term memory kept for ``memory_history`` (the current one
    counted; older ones are dropped first)."""
    max_answer_bytes: int = 128 << 10
    """Most bytes of memories, notes or conversations one answer carries (a batch's
    answers together): a page past it ends early with the next page's offset, a search
    keeps the best that fit. Read a chunk of rows at a time, so a read holds little more."""
    max_reply_bytes: int = 240 << 10
    """Most bytes one reply's body may take in its stanza (escaped), from any agent:
    under Prosody's own limit on what a client sends (``c2s_stanza_size_limit``, 256 KiB),
    past which it closes the agent's stream. A longer answer is refused instead."""
    max_pending_proposals: int = 20
    """Most proposals one writer may have waiting in one governed space (each asks every
    admin in a message)."""
    max_space_proposals: int = 200
    """Most proposals waiting in one governed space, all writers together."""
