"""The space ops the base memory agent serves, and their replies.

Which spaces an op of any service acts on is its ``space`` field (see
``names``); these ops manage the spaces themselves: create one, grant and
revoke roles, leave, list, describe, delete, and subscribe to its changes; and, in a
governed space, list and decide the writes that wait for an admin (proposals).
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
    governed: bool = False


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
    governed: bool = False
    """A writer's store, update and delete wait for an admin's approval."""
    pending: int = 0
    """Proposals waiting for an admin."""


class SpaceDone(Record):
    """Result of ``leave_space``, ``delete_space`` and ``unsubscribe``."""

    space: str
    done: bool = True


class ProposalInfo(Record):
    """A write of a governed space that waits for (or was decided by) an admin."""

    id: str
    space: str
    proposer: str
    op: dict[str, Any]
    """The write, as its proposer sent it."""
    created_at: datetime
    expires_at: datetime
    state: Literal["pending", "approved", "rejected", "expired", "failed"]
    decided_by: str | None = None
    note: str | None = None
    """Why it was rejected, or why an approved write could not be applied."""


class ProposalList(Record):
    """Result of ``list_proposals``: the pending proposals, oldest first."""

    proposals: list[ProposalInfo] = Field(default_factory=list)


class ProposalDecided(Record):
    """Result of ``decide_proposal``: the proposal as decided, and what applying an
    approved one gave (the write's own result, as JSON)."""

    proposal: ProposalInfo
    result: dict[str, Any] | None = None


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
    governed: bool = Field(
        default=False,
        description="A writer's store, update and delete wait for an admin's approval",
        exclude_if=lambda governed: not governed,
    )


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


class Govern(Op[SpaceDetails]):
    """Make a writer's store, update and delete in the space wait for an admin's approval,
    or stop (``governed`` false; what waits stays to be decided). Admins only."""

    op: Literal["govern"] = "govern"
    space: SharedSpace
    governed: bool = True


class ListProposals(Op[ProposalList]):
    """The space's pending proposals: all of them for an admin, a writer's own for it."""

    op: Literal["list_proposals"] = "list_proposals"
    reads_only: ClassVar[bool] = True
    space: SharedSpace


class DecideProposal(Op[ProposalDecided]):
    """Approve a proposal (its write is applied as its proposer's own) or reject it
    (admins only); its proposer is told either way. A proposal is decided once."""

    op: Literal["decide_proposal"] = "decide_proposal"
    space: SharedSpace
    proposal: str = Field(min_length=1, max_length=64)
    approve: bool
    reason: str | None = Field(default=None, max_length=2000)


SpaceOp = (
    CreateSpace | Grant | Revoke | LeaveSpace | ListSpaces | SpaceInfo | DeleteSpace
    | Subscribe | Unsubscribe | Govern | ListProposals | DecideProposal
)  # fmt: skip
"""Every op that manages spaces (served by the base memory agent)."""
SPACE_OPS: tuple[type[Op[Any]], ...] = (
    CreateSpace, Grant, Revoke, LeaveSpace, ListSpaces, SpaceInfo, DeleteSpace,
    Subscribe, Unsubscribe, Govern, ListProposals, DecideProposal,
)  # fmt: skip
