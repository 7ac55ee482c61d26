"""The shell's commands on the ``spade-memory`` parser: ``memories`` (list, search,
show, add, update, delete, supersede, restore, history, consolidate, entities, about,
related, stats, export, import, forget), ``spaces`` (list, info, create, grant, revoke, govern,
proposals, approve, reject, rooms, bind, unbind, hear) and
``forget``, each with the options of the connection it logs in with."""

from __future__ import annotations

import argparse
import logging
import os
from importlib import import_module
from typing import Any, get_args

from spade_memory.protocol.graph import EntityKind
from spade_memory.protocol.memories import CATEGORIES
from spade_memory.protocol.rooms import DEFAULT_NICK
from spade_memory.protocol.space_names import ROLES
from spade_memory.server.shell import moments
from spade_memory.server.shell.session import JID_ENV, Verb, run_verb

MEMORY_VERBS: dict[str, str] = {
    # each verb's module is imported when it runs: a verb loads no other verb's models
    "list": "memories.list_verb",
    "search": "memories.search_verb",
    "show": "memories.show_verb",
    "add": "memories.add_verb",
    "update": "memories.update_verb",
    "delete": "memories.delete_verb",
    "supersede": "facts.supersede_verb",
    "restore": "facts.restore_verb",
    "history": "facts.history_verb",
    "consolidate": "facts.consolidate_verb",
    "entities": "graph.entities_verb",
    "about": "graph.about_verb",
    "related": "graph.related_verb",
    "stats": "memories.stats_verb",
    "export": "transfer.export_verb",
    "import": "transfer.import_verb",
    "forget": "forget.forget_verb",
}
SPACE_VERBS: dict[str, str] = {
    "list": "spaces.list_verb",
    "info": "spaces.info_verb",
    "create": "spaces.create_verb",
    "grant": "spaces.grant_verb",
    "revoke": "spaces.revoke_verb",
    "govern": "spaces.govern_verb",
    "proposals": "spaces.proposals_verb",
    "approve": "spaces.approve_verb",
    "reject": "spaces.reject_verb",
    "rooms": "rooms.rooms_verb",
    "bind": "rooms.bind_verb",
    "unbind": "rooms.unbind_verb",
    "hear": "rooms.hear_verb",
}


def run(args: argparse.Namespace) -> int:
    """Run a ``memories`` or ``spaces`` verb, or ``forget``; 0, or 1 with one sentence on
    stderr."""
    logging.basicConfig(level=logging.CRITICAL)  # what fails is said in one sentence
    if args.command == "forget":
        return run_verb(verb_named(MEMORY_VERBS["forget"]), args)
    verbs = MEMORY_VERBS if args.command == "memories" else SPACE_VERBS
    return run_verb(verb_named(verbs[args.verb]), args)


def verb_named(name: str) -> Verb:
    """The verb ``module.function`` of the shell's package (its module imported now)."""
    module, _, function = name.partition(".")
    verb: Verb = getattr(import_module(f"spade_memory.server.shell.{module}"), function)
    return verb


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """Add the verbs and flags of ``memories``, ``spaces`` or ``forget``."""
    if name == "memories":
        _memory_verbs(parser)
    elif name == "spaces":
        _space_verbs(parser)
    else:
        _forget_options(_connection(parser))


def _memory_verbs(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = _verb(verbs, "list", "memories, most recently used first, a page at a time")
    listing.add_argument("--category", choices=CATEGORIES)
    listing.add_argument("--limit", type=int, default=20, help="memories per page (20)")
    listing.add_argument("--offset", type=int, default=0, help="memories to skip (0)")
    moments.add_moment_options(listing)
    _space(listing, reads=True)
    search = _verb(verbs, "search", "ranked search, with each memory's score")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--category", choices=CATEGORIES)
    moments.add_moment_options(search)
    _space(search, reads=True)
    show = _id(_verb(verbs, "show", "one memory in full"))
    moments.add_moment_options(show)
    _space(show, reads=True)
    add = _verb(verbs, "add", "store a memory (classified by the service without --category)")
    add.add_argument("content")
    add.add_argument("--category", choices=CATEGORIES)
    add.add_argument("--context")
    add.add_argument("--confidence", type=float, default=1.0, help="0 to 1 (1)")
    add.add_argument("--tag", action="append", help="a label (again for more)")
    add.add_argument("--supersedes", metavar="ID", help="the full id of a memory it replaces")
    add.add_argument("--valid-from", type=moments.moment, metavar="TIME", help="true since")
    add.add_argument("--valid-to", type=moments.moment, metavar="TIME", help="true until")
    add.add_argument(
        "--conflicts", choices=("auto", "report", "off"), default="auto",
        help="a memory it seems to replace: superseded when clear (auto), only reported,"
        " or not looked for",
    )  # fmt: skip
    _space(add)
    supersede = _id(_verb(verbs, "supersede", "replace a memory with what is true now"))
    supersede.add_argument("content", nargs="?", help="what is true now (or give --by)")
    supersede.add_argument("--by", metavar="ID", help="a memory already saying what is true now")
    supersede.add_argument("--context", help="why it changed")
    supersede.add_argument("--valid-from", type=moments.moment, metavar="TIME", help="true since")
    _space(supersede)
    _space(
        _id(_verb(verbs, "restore", "make a superseded memory current again (a wrong supersede)"))
    )
    _space(_id(_verb(verbs, "history", "a memory's versions and what replaced it")))
    consolidate = _verb(verbs, "consolidate", "merge the same fact stated in other words")
    consolidate.add_argument("--dry-run", action="store_true", help="only show what it would do")
    _space(consolidate)
    entities = _verb(verbs, "entities", "who and what the memories name, the most named first")
    entities.add_argument("prefix", nargs="?", help="only entities starting so")
    entities.add_argument("--kind", choices=get_args(EntityKind))
    entities.add_argument("--limit", type=int, default=30, help="entities shown (30)")
    _space(entities, reads=True)
    about = _verb(verbs, "about", "the memories naming someone or something")
    about.add_argument("entity", help="a name: Melanie, New York, pottery")
    about.add_argument("--limit", type=int, default=20)
    _space(about, reads=True)
    related = _id(_verb(verbs, "related", "the memories naming what one memory names"))
    related.add_argument("--limit", type=int, default=10)
    _space(related, reads=True)
    update = _id(
        _verb(verbs, "update", "change a memory's content, category, context or confidence")
    )
    update.add_argument("--content")
    update.add_argument("--category", choices=CATEGORIES)
    update.add_argument("--context")
    update.add_argument("--confidence", type=float)
    _space(update)
    _space(_id(_verb(verbs, "delete", "forget one memory")))
    _space(_verb(verbs, "stats", "how many memories, by category"))
    export = _verb(verbs, "export", "every memory of the agent's own space, as JSON lines")
    export.add_argument("file", nargs="?", default="-", help="default: standard output")
    load = _verb(verbs, "import", "store the memories of a JSON lines file (as export wrote)")
    load.add_argument("file", help="a file, or - for standard input")
    _forget_options(_verb(verbs, "forget", "everything of the agent, as spade-memory forget"))


def _space_verbs(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    _verb(verbs, "list", "the spaces the agent belongs to, with its role in each")
    _verb(verbs, "info", "a space's owner, members, counts and quota").add_argument("name")
    create = _verb(verbs, "create", "a new space, owned by the agent")
    create.add_argument("name")
    create.add_argument("--description")
    create.add_argument(
        "--governed", action="store_true",
        help="a writer's store, update and delete wait for an admin's approval",
    )  # fmt: skip
    grant = _verb(verbs, "grant", "give a member a role in a space")
    grant.add_argument("name")
    grant.add_argument("member", help="a bare JID, or *@domain for everyone of a domain")
    grant.add_argument("role", choices=ROLES)
    revoke = _verb(verbs, "revoke", "take a member's role in a space away")
    revoke.add_argument("name")
    revoke.add_argument("member")
    govern = _verb(verbs, "govern", "make a space's writers' writes wait for an admin")
    govern.add_argument("name")
    govern.add_argument("--off", action="store_true", help="stop governing the space")
    _verb(verbs, "proposals", "a governed space's writes waiting for an admin").add_argument("name")
    for verb, help_text in (
        ("approve", "approve a proposal: its write is applied as its proposer's own"),
        ("reject", "reject a proposal; its proposer is told"),
    ):
        decide = _verb(verbs, verb, help_text)
        decide.add_argument("name")
        decide.add_argument("proposal", help="the proposal's id (list them with proposals)")
        if verb == "reject":
            decide.add_argument("--reason", help="why, told to the proposer")
    _verb(verbs, "rooms", "the group-chat rooms bound to the spaces the agent reads")
    bind = _verb(verbs, "bind", "bind a group-chat room to a space: its talk is kept there")
    bind.add_argument("name", help="the space")
    bind.add_argument("room", help="the room's address, e.g. team@conference.example.org")
    bind.add_argument("--nick", default=DEFAULT_NICK, help="the agent's nickname in the room")
    unbind = _verb(verbs, "unbind", "unbind a room: the agent leaves it, its notes stay")
    unbind.add_argument("room")
    hear = _verb(verbs, "hear", "what was said in a bound room about a question")
    hear.add_argument("room")
    hear.add_argument("query")
    hear.add_argument("--limit", type=int, default=5, help="notes to show (at most 50)")


def _verb(verbs: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    return _connection(verbs.add_parser(name, help=help_text, description=help_text))


def _id(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("id", help="the memory's id, or a unique start or end of it")
    return parser


def _space(parser: argparse.ArgumentParser, *, reads: bool = False) -> None:
    where = "a shared space, or * for every space the agent reads" if reads else "a shared space"
    parser.add_argument("--space", help=f"{where} (default: the agent's own)")


def _forget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true", help="do not ask")


def _connection(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--jid", default=os.environ.get(JID_ENV), help=f"act as this agent (default: ${JID_ENV})"
    )
    parser.add_argument("--port", type=int, default=5222, help="XMPP client port (5222)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request (10)")
    return parser
