"""XEP-0050 ad-hoc commands: a person in a client that runs ad-hoc commands runs a memory
op by filling in a data form, with no JSON to write.

A ``Command`` names its form's fields, how the filled-in values become an op's body,
and how the op's result becomes a result form. The op then goes the way every request
goes (``ServeRequests.outcome``: parsed, authorised as the sender's bare JID, within
the limits, applied by the service), so a command can do nothing a message could not. A
failure is answered as an XMPP error with the op's condition and text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_json
from slixmpp import ClientXMPP
from slixmpp.exceptions import XMPPError
from slixmpp.plugins.xep_0004 import Form
from spade.message import Message

from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.ops import Outcome, Record


@dataclass(frozen=True)
class Field:
    """One field of a command's form."""

    var: str
    label: str
    required: bool = False
    options: Sequence[str] = ()
    """For a choice (``list-single``); none: free text."""
    default: str | None = None


@dataclass(frozen=True)
class Command:
    """An ad-hoc command: its node, its name, its form, and how it maps to an op."""

    node: str
    name: str
    op: Callable[[dict[str, str]], dict[str, Any]]
    """The op's body from the form's values (only the fields filled in)."""
    answer: Callable[[Record, Form], None]
    """Writes the result into the (result-typed) form."""
    fields: Sequence[Field] = field(default_factory=tuple)


Serve = Callable[[Message], Awaitable[Outcome]]
"""How a request is served: ``ServeRequests.outcome``."""


def offer(client: ClientXMPP, commands: Sequence[Command], serve: Serve) -> None:
    """Offer ``commands`` at the client's JID, in this session and after each reconnection
    (the full JID may change)."""
    client.register_plugin("xep_0004")
    client.register_plugin("xep_0050")

    def add(_: Any = None) -> None:
        for command in commands:
            client["xep_0050"].add_command(
                node=command.node, name=command.name, handler=_start(client, command, serve)
            )

    client.add_event_handler("session_bind", add)
    add()


def _start(client: ClientXMPP, command: Command, serve: Serve) -> Callable[..., Any]:
    async def start(iq: Any, session: dict[str, Any]) -> dict[str, Any]:
        if not command.fields:  # nothing to ask: run it at once
            return await _run(client, command, serve, session, {})
        form = client["xep_0004"].make_form(ftype="form", title=command.name)
        for wanted in command.fields:
            kind = "list-single" if wanted.options else "text-single"
            added = form.add_field(
                var=wanted.var, ftype=kind, label=wanted.label, required=wanted.required,
                value=wanted.default or "",
            )  # fmt: skip
            for option in wanted.options:
                added.add_option(label=option, value=option)
        session.update(payload=form, next=submitted, has_next=False, allow_complete=True)
        return session

    async def submitted(payload: Any, session: dict[str, Any]) -> dict[str, Any]:
        values = payload.get_values() if payload else {}
        filled = {key: str(value) for key, value in values.items() if value not in (None, "")}
        return await _run(client, command, serve, session, filled)

    return start


async def _run(
    client: ClientXMPP,
    command: Command,
    serve: Serve,
    session: dict[str, Any],
    values: dict[str, str],
) -> dict[str, Any]:
    try:
        body = command.op(values)
    except KeyError as missing:
        text = f"{command.name}: fill in {missing.args[0]}"
        raise XMPPError("bad-request", text, etype="modify") from None
    except ValueError as error:
        raise XMPPError("bad-request", f"{command.name}: {error}", etype="modify") from None
    request = Message(
        to=str(session["to"]), sender=str(session["from"]), body=to_json(body).decode()
    )
    outcome = await serve(request)
    if isinstance(outcome, MemoryServiceError):
        raise XMPPError(outcome.condition.value, outcome.text, etype="modify")
    form = client["xep_0004"].make_form(ftype="result", title=command.name)
    command.answer(outcome, form)
    session.update(payload=form, next=None, has_next=False)
    return session
