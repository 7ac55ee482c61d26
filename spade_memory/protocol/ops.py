"""What every memory service shares about requests and replies.

An op is a frozen, strict pydantic model tagged by its ``op`` literal, and it
names its result type through its base class: ``class StoreMemory(Op[Stored])``
(as langgraph's ``GetOp``/``PutOp`` each imply their result). The serving
behaviour, the stores, the client and the JSON Schema all read the result
type from the op itself, so there is no string-keyed map of results to keep
in step. A service's ops form one discriminated union, parsed once.

Ops never carry the owner's identity as a trusted value: the owner is the
sender's bare JID. An ``owner`` (or spade_llm's ``agent_id``) field is
accepted only so that a body claiming someone else can be refused.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, Union, cast

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)

from spade_memory.protocol.errors import BadRequest, MemoryServiceError

T = TypeVar("T")

MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A memory's id, as a store, search or list gives it",
    ),
]
MOST_ASKED = 2**31 - 1
"""The largest ``limit`` an op takes: more than any store returns, and small enough that
what a read makes of it (a row more, a few times as many candidates) stays an SQL
integer on both engines (the agent's ``Limits`` bound what peers send far lower)."""
Limit = Annotated[int, Field(ge=1, le=MOST_ASKED)]
PageOffset = Annotated[
    int,
    Field(
        ge=0,
        le=2**63 - 1,
        description="What to skip, to page: the reply's next_offset",
        exclude_if=lambda value: value == 0,  # a first page reads as it did before paging
    ),
]
"""Where a paged read starts (its first page's requests are sent as before paging)."""
NextOffset = Annotated[int | None, Field(exclude_if=lambda value: value is None)]
"""The ``offset`` of the next page, when the answer stopped at the bytes one answer may
carry (``Limits.max_answer_bytes``); absent from an answer that holds everything."""


DEFERRED = ConfigDict(defer_build=True)
"""A type adapter's config: its validator is built at its first use, not at import."""


class Record(BaseModel):
    """Base of every reply payload: frozen and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class _OpOf:
    """``Op[TheResult]`` at run time: a base that stands for ``Op`` itself
    (``__mro_entries__``, PEP 560) and names the result. Pydantic's own ``Op[...]``
    would build a generic model class per op, one to two milliseconds each for about
    sixty ops, paid by every command that starts."""

    origin: type[Op[Any]]
    result: Any

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type[Op[Any]]]:
        return (self.origin,)


class Op(BaseModel, Generic[R]):
    """Base of every request body: frozen, strict types, no unknown fields.

    Subclass it as ``Op[TheResult]``; ``result`` is then ``TheResult``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    result: ClassVar[type[Record]] = Record
    """The reply payload this op answers with (taken from ``Op[...]``)."""
    need: ClassVar[Literal["read", "write"] | None] = None
    """What the op asks of the space its ``space`` field names (None: it names none)."""
    reads_only: ClassVar[bool] = False
    """True when the op changes nothing: a retry of it is simply served again, so its
    answer is not kept for one (see ``storage.answers``)."""
    in_a_space: ClassVar[bool] = False
    """True when the op acts in a space found through what it names (a room's), with no
    ``space`` field: that space's rules decide it, also for an account of another server
    (see ``serving.remote``)."""

    owner: str | None = Field(
        default=None,
        validation_alias=AliasChoices("owner", "agent_id"),
        description="Optional. If given it must equal the sender's bare JID, "
        "otherwise the request is refused with not-authorized.",
    )

    def __class_getitem__(cls, result: Any) -> Any:
        return _OpOf(cls, result)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            named = base.result if isinstance(base, _OpOf) else None
            if isinstance(named, type) and issubclass(named, Record):
                cls.result = named

    @classmethod
    def tag(cls) -> str:
        """The ``op`` tag of this op class."""
        return str(cls.model_fields["op"].default)


class SenderForgotten(Record):
    """Base of the results of the ops that forget everything the sender keeps at a
    service (what ``spade-memory forget`` sends to each). Besides what the service
    deletes, its stored answers to the sender's earlier requests go: they carry the text
    a retry would get back (kept 24 h in a store's ledger, and for this run in the
    agent's memory, see ``storage.requests`` and ``storage.answers``)."""

    replies: int = 0
    """Answers to the sender's earlier requests deleted (a dry run: that would be)."""
    dry_run: bool = False
    """True: everything was counted, nothing deleted."""


PERSONAL = "personal"
"""The name of every agent's own space (see ``spaces``)."""


@dataclass(frozen=True)
class Place:
    """A space as a store sees it, once the sender's access was checked: the key its
    rows carry (the owner's bare JID for a personal space, the space's id otherwise),
    the name replies give, the sender's role there, the space's quota, and whether it is
    governed."""

    key: str
    name: str = PERSONAL
    role: str = "owner"
    max_memories: int | None = None
    max_bytes: int | None = None
    governed: bool = False
    """A writer's writes here wait for an admin (see ``spaces.proposals``)."""

    @property
    def personal(self) -> bool:
        """Whether this is the sender's own space."""
        return self.name == PERSONAL

    @property
    def may_change_any(self) -> bool:
        """Whether the sender may change or delete what others stored here."""
        return self.role in ("admin", "owner")


@dataclass(frozen=True)
class Request:
    """One op to apply, with the request id that makes a retried write apply once, and
    the places it acts on (none given: the sender's personal space)."""

    op: Op[Any]
    id: str | None = None
    places: tuple[Place, ...] = ()

    def places_of(self, owner: str) -> tuple[Place, ...]:
        """Where the op acts: its places, or ``owner``'s personal space."""
        return self.places or (Place(owner),)


Outcome = Record | MemoryServiceError
"""What applying one op gave: its result, or the typed error it failed with."""


def op_types(union: Any) -> tuple[type[Op[Any]], ...]:
    """The op classes of a (possibly ``Annotated``) union of ops, in order."""
    if typing.get_origin(union) is Annotated:
        union = typing.get_args(union)[0]
    if typing.get_origin(union) in (Union, types.UnionType):
        return tuple(cls for member in typing.get_args(union) for cls in op_types(member))
    return (union,)


def parse_op(adapter: TypeAdapter[T], body: str) -> T:
    """Parse a JSON request body.

    Returns the op; raises ``BadRequest`` with a readable text for any problem.
    """
    try:
        return adapter.validate_json(body)
    except ValidationError as exc:
        raise BadRequest(describe(exc)) from None


def describe(exc: ValidationError, most: int = 3) -> str:
    """A short human text for a validation error, without echoing huge inputs (an
    unknown op: its name and the close ones, not every op there is)."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:most]:
        where = ".".join(str(p) for p in error["loc"]) or "body"
        if error["type"] == "union_tag_invalid":
            parts.append(_unknown_tag(where, error.get("ctx", {})))
            continue
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - most
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _unknown_tag(where: str, context: Mapping[str, object]) -> str:
    """``unknown op 'forget_everything'; did you mean 'forget_memories'?``: the close
    names of the ones expected, and where the rest are listed."""
    given = str(context.get("tag", ""))
    expected = re.findall(r"'([^']*)'", str(context.get("expected_tags", "")))
    close = difflib.get_close_matches(given, expected, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
    field = str(context.get("discriminator", "'op'")).strip("'")
    what = "op" if field == "op" else field
    listed = (
        " (`spade-memory schema` lists them)"
        if what == "op"
        else f" (one of {', '.join(expected)})"
    )
    prefix = "" if where == "body" else f"{where}: "
    return f"{prefix}unknown {what} {given!r}{hint}{listed}"


def in_place(
    total: int, refused: Mapping[int, Outcome], applied: Iterable[Outcome]
) -> list[Outcome]:
    """A batch's outcomes in request order: each refused request's error where it
    was, the applied requests' outcomes (in order) everywhere else."""
    rest = iter(applied)
    return [refused[index] if index in refused else next(rest) for index in range(total)]


class AppliesOps(ABC):
    """What every store and service offers: a list of ops of one owner, applied together.

    ``batch`` is the one method to implement (langgraph's ``abatch``);
    ``apply`` is a batch of one.
    """

    @abstractmethod
    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply ``requests`` for ``owner`` in order, in one transaction where the store has them.

        Returns one outcome per request: its result or the typed error it failed with.
        """

    async def apply(self, owner: str, op: Op[R], request_id: str | None = None) -> R:
        """Apply one op for ``owner``.

        Returns its result; raises its typed error (a ``MemoryServiceError``).
        """
        (outcome,) = await self.batch(owner, [Request(op, request_id)])
        if isinstance(outcome, MemoryServiceError):
            raise outcome
        return cast(R, outcome)
