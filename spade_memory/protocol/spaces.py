"""The space ops the base memory agent serves, and their replies.

Which spaces an op of any service acts on is its ``space`` field (see
``names``); these ops manage the spaces themselves: create one, grant and
revoke roles, leave, list, describe, delete, and subscribe to its changes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from spade_memory.protocol.ops import PERSONAL, Op, Record
from spade_memory.protocol.space_names import Member, Role, SpaceName

# -- replies ------------------------------------------------------------------------


class Membership(Record):
    """One member of a space and its role (the owner is listed with role ``owner``)."""

    member: str
    role: str


class SpaceSummary(Record):
    """A space the sender belongs to, and the sender's role there."""

    name: str
    owner: str
    role: str
    description: str | None = None


class SpaceList(Record):
    """Result of ``list_spaces``: the spaces the sender belongs to, by name."""

    spaces: list[SpaceSummary] = Field(default_factory=list)


class SpaceDetails(Record):
    """A space as its members see it: who is in it, what it holds, its quota."""

    name: str
    owner: str
    description: str | None = None
    created_at: datetime
    role: str
    """The sender's role."""
    members: list[Membership]
    memories: int = 0
    bytes: int = 0
    """Bytes of content and context held."""
    max_memories: int | None = None
    max_bytes: int | None = None
    subscribers: int = 0


class SpaceDone(Record):
    """Result of ``leave_space``, ``delete_space`` and ``unsubscribe``."""

    space: str
    done: bool = True


class Subscribed(Record):
    """Result of ``subscribe``: notices follow every committed change after ``cursor``
    (the space's newest change now); ``changes_since`` catches up from any cursor."""

    space: str
    cursor: int


# -- ops --------------------------------------------------------------------------


def _not_personal(name: str) -> str:
    if name == PERSONAL:
        raise ValueError(f"{PERSONAL!r} is every agent's own space and cannot be managed")
    return name


SharedSpace = Annotated[SpaceName, AfterValidator(_not_personal)]
"""A space that can be shared (any name but ``personal``)."""


class CreateSpace(Op[SpaceDetails]):
    """Create a space owned by the sender (the same name again returns it to its owner)."""

    op: Literal["create_space"] = "create_space"
    name: SharedSpace
    description: str | None = Field(default=None, max_length=2000)


class Grant(Op[SpaceDetails]):
    """Give ``member`` (a bare JID or ``*@domain``) a role in the space (admins only)."""

    op: Literal["grant"] = "grant"
    space: SharedSpace
    member: Member
    role: Role


class Revoke(Op[SpaceDetails]):
    """Take ``member``'s role away (admins only; the owner cannot be revoked)."""

    op: Literal["revoke"] = "revoke"
    space: SharedSpace
    member: Member


class LeaveSpace(Op[SpaceDone]):
    """Give up the sender's own membership (the owner deletes the space instead)."""

    op: Literal["leave_space"] = "leave_space"
    space: SharedSpace


class ListSpaces(Op[SpaceList]):
    """The spaces the sender belongs to (as itself or through its domain), with its role."""

    op: Literal["list_spaces"] = "list_spaces"
    reads_only: ClassVar[bool] = True


class SpaceInfo(Op[SpaceDetails]):
    """Members, counts and quota of a space (members only)."""

    op: Literal["space_info"] = "space_info"
    reads_only: ClassVar[bool] = True
    space: SharedSpace = Field(description="The shared space's name")


class DeleteSpace(Op[SpaceDone]):
    """Delete a space and every memory in it (its owner only)."""

    op: Literal["delete_space"] = "delete_space"
    space: SharedSpace


class Subscribe(Op[Subscribed]):
    """Be told of every committed store, update and delete in the space (members only),
    at the address (full JID) the request came from."""

    op: Literal["subscribe"] = "subscribe"
    space: SharedSpace


class Unsubscribe(Op[SpaceDone]):
    """Stop the space's change notices to the sender."""

    op: Literal["unsubscribe"] = "unsubscribe"
    space: SharedSpace


SpaceOp = (
    CreateSpace | Grant | Revoke | LeaveSpace | ListSpaces | SpaceInfo | DeleteSpace
    | Subscribe | Unsubscribe
)  # fmt: skip
"""Every op that manages spaces (served by the base memory agent)."""
SPACE_OPS: tuple[type[Op[Any]], ...] = (
    CreateSpace, Grant, Revoke, LeaveSpace, ListSpaces, SpaceInfo, DeleteSpace,
    Subscribe, Unsubscribe,
)  # fmt: skip
