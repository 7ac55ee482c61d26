"""Spaces fixed in configuration: ``spade-memory run --spaces FILE`` creates them, with
their members and quotas, before the agents serve.

The file is TOML or YAML (by its suffix; ``.toml`` is TOML, anything else YAML),
one entry per space::

    [[spaces]]
    name = "team"
    owner = "researcher@localhost"
    description = "what the team found"
    max_memories = 10000          # optional: the deployment's per-space quota otherwise
    governed = true               # optional: a writer's writes wait for an admin
    members = { "writer@localhost" = "writer", "*@example.org" = "reader" }

Applying it is additive and repeatable: a space that exists keeps its memories,
declared members get the declared role, members granted at run time stay.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spade_memory.protocol.errors import Conflict
from spade_memory.protocol.space_names import Member, Role, SpaceName, is_domain_member
from spade_memory.spaces.directory import SpaceDirectory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]


class DeclaredSpace(BaseModel):
    """One space as the file declares it."""

    model_config = ConfigDict(extra="forbid")

    name: SpaceName
    owner: Member
    description: Annotated[str, Field(max_length=2_000)] | None = None
    max_memories: Annotated[int, Field(gt=0)] | None = None
    max_bytes: Annotated[int, Field(gt=0)] | None = None
    members: dict[Member, Role] = Field(default_factory=dict)
    governed: bool | None = None
    """Set at every start when given; left as run time set it when not."""


class SpacesFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")

    spaces: list[DeclaredSpace] = Field(default_factory=list)


class SpacesFileError(RuntimeError):
    """The spaces file cannot be read or says something that cannot be applied (the
    service does not start: a team's configuration is not applied by halves)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


def read_spaces_file(path: Path) -> SpacesFile:
    """The declared spaces.

    Returns them; raises ``SpacesFileError`` naming the file and the problem.
    """
    try:
        text = path.read_text(encoding="utf-8")
        raw: Any = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
        declared = SpacesFile.model_validate(raw or {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        raise SpacesFileError(path, str(error).splitlines()[0]) from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        given = repr(first.get("input"))[:60]
        raise SpacesFileError(path, f"{where}: {first['msg']} (given: {given})") from None
    for space in declared.spaces:
        if is_domain_member(space.owner):
            raise SpacesFileError(path, f"{space.name}: the owner must be one JID, not a domain")
        if space.name == "personal":
            raise SpacesFileError(path, "'personal' is every agent's own space, not a name")
    return declared


async def apply_spaces(declared: SpacesFile, directory: SpaceDirectory, path: Path) -> int:
    """Create the declared spaces, set their quotas and grant their members.

    Returns how many spaces the file declares; raises ``SpacesFileError`` when a
    declared name is taken by another owner.
    """
    for entry in declared.spaces:
        try:
            space = await directory.create(entry.name, entry.owner, entry.description)
        except Conflict:
            raise SpacesFileError(
                path, f"{entry.name}: the space exists with another owner"
            ) from None
        await directory.set_quota(space.id, entry.max_memories, entry.max_bytes)
        if entry.governed is not None and entry.governed != space.governed:
            await directory.set_governed(space.id, entry.governed)
        for member, role in entry.members.items():
            if member != space.owner:
                await directory.grant(space, member, role, f"spaces file {path.name}")
    return len(declared.spaces)
