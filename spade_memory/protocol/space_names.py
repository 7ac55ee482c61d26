"""What a space name, a member and a role may be: checked before anything is looked up.

Names are short and plain (letters, digits, ``.``, ``_``, ``-``; no ``@``, so
none can be mistaken for a JID, and no path separator, so none can leave a
folder). A member is a bare JID or ``*@domain`` for everyone of a domain;
JIDs compare case-folded, as XMPP servers fold them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from spade_memory.protocol.ops import PERSONAL

EVERY = "*"
"""As a space selector of a read: every space the sender can read, its own included."""

Role = Literal["reader", "writer", "admin"]
"""What a member may do: read; also store (and change what it stored); also manage the
space and change anyone's memories in it."""
ROLES: tuple[Role, ...] = ("reader", "writer", "admin")
RANK: dict[str, int] = {"reader": 1, "writer": 2, "admin": 3, "owner": 4}
"""Roles in order; the owner is above every member."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_NODE = r"[^\s\"&'/:<>@*]{1,256}"
_DOMAIN = r"[a-z0-9][a-z0-9.-]{0,252}"
BARE_JID = re.compile(f"{_NODE}@{_DOMAIN}")
"""A bare JID as members and rooms are written (case-folded): ``name@domain``."""
_MEMBER = re.compile(rf"(\*|{_NODE})@{_DOMAIN}")


def _space_name(name: str) -> str:
    if name == PERSONAL or _NAME.fullmatch(name):
        return name
    raise ValueError(
        "a space name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    )


def _selector(name: str) -> str:
    return name if name == EVERY else _space_name(name)


def _member(member: str) -> str:
    folded = member.casefold()
    if _MEMBER.fullmatch(folded):
        return folded
    raise ValueError("a member is a bare JID (name@domain) or *@domain")


SpaceName = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_space_name)]
"""A space's name, or ``personal`` for the sender's own space."""
SpaceSelector = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_selector)]
"""A space's name, ``personal``, or ``*`` for every space the sender can read."""
Member = Annotated[str, Field(min_length=3, max_length=520), AfterValidator(_member)]
"""A bare JID or ``*@domain`` (case-folded)."""
SpaceSelection = SpaceSelector | Annotated[list[SpaceName], Field(min_length=1, max_length=32)]
"""Where a read looks: one space, several, or ``*``."""


def domain_member(jid: str) -> str:
    """The member entry that covers everyone of ``jid``'s domain."""
    return "*@" + jid.rpartition("@")[2]


def is_domain_member(member: str) -> bool:
    """Whether ``member`` stands for a whole domain (``*@domain``)."""
    return member.startswith("*@")


def rank(role: str | None) -> int:
    """How much ``role`` allows (0 for none)."""
    return RANK.get(role or "", 0)


Need = Literal["read", "write"]
NEEDED: dict[Need, int] = {"read": RANK["reader"], "write": RANK["writer"]}
