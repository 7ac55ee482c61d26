"""A person's side of a chat with an LLM agent: send a line, await the answer.

spade_llm's agents take messages tagged ``message_type=llm`` and answer in the
same thread; this agent does exactly that, for the demo, examples and tests.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from spade.agent import Agent
from spade.message import Message
from spade.template import Template

from spade_memory.xmpp.lifecycle import WakesWhenKilled


class _Listen(WakesWhenKilled):
    """Keeps answers by thread, so concurrent conversations each get their own."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: defaultdict[str, asyncio.Queue[Message]] = defaultdict(asyncio.Queue)

    async def run(self) -> None:
        message = await self.receive(timeout=1.0)
        if message is not None:
            self.answers[str(message.thread)].put_nowait(message)


class ChatUser(Agent):  # type: ignore[misc]
    """Chats with LLM agents: ``await user.ask(llm_jid, text, thread)``."""

    async def setup(self) -> None:
        """Listen for answers tagged ``message_type=llm``."""
        self.listen = _Listen()
        template = Template()
        template.set_metadata("message_type", "llm")
        self.add_behaviour(self.listen, template)

    async def ask(self, to: str, text: str, thread: str, timeout: float = 60.0) -> str:
        """Send ``text`` in conversation ``thread``; the text of the answer in that thread."""
        question = Message(to=to, body=text, thread=thread, metadata={"message_type": "llm"})
        await self.listen.send(question)
        answer = await asyncio.wait_for(self.listen.answers[thread].get(), timeout)
        return str(answer.body)
