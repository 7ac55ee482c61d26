"""``spade-memory accounts``: list, set a password of, or delete the embedded server's
accounts, while the service runs or not.

The embedded server makes an account at its first login, with whatever password that
login gave: a second program that logs in as the same JID with another password is
refused, and until now nothing said which accounts exist or let an operator mend one.
Passwords come from ``$SPADE_MEMORY_AGENT_PASSWORD``, a prompt or standard input,
never from the command line (where ``ps`` and the shell's history would keep them).
The memory agents' own accounts are refused without ``--force``: their password is
the one ``run`` keeps in ``DATA_DIR/agent-password``.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sqlite3
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Column, Table

from spade_memory.server import account_admin
from spade_memory.server.account_admin import NoSuchAccount
from spade_memory.server.data_dir import default_data_dir
from spade_memory.server.registry import SERVICES

PASSWORD_ENV = "SPADE_MEMORY_AGENT_PASSWORD"
"""Where a new password may come from (the shell's agent password, the same variable)."""


class AccountsError(Exception):
    """What an ``accounts`` verb cannot do, in one sentence."""


def add_arguments(accounts: argparse.ArgumentParser, name: str = "accounts") -> None:
    """Add the verbs of ``accounts`` and their flags."""
    verbs = accounts.add_subparsers(dest="verb", required=True)
    listed = verbs.add_parser("list", help="every account and when it was made (no passwords)")
    changed = verbs.add_parser(
        "set-password",
        help=f"give an account a new password (from ${PASSWORD_ENV}, a prompt or stdin)",
    )
    deleted = verbs.add_parser("delete", help="delete an account; its name is then free")
    for verb in (listed, changed, deleted):
        verb.add_argument("--data-dir", type=Path, default=None)
        verb.add_argument(
            "--domain", default="localhost", help="the server's XMPP domain (localhost)"
        )
    for verb in (changed, deleted):
        verb.add_argument("jid", metavar="JID", help="the account, such as assistant@localhost")
        verb.add_argument("--force", action="store_true", help="also a memory agent's own account")
    deleted.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace) -> int:
    """Run an ``accounts`` verb on its data directory; 0, or 1 with one sentence on
    stderr."""
    data_dir: Path = args.data_dir or default_data_dir()
    try:
        if not data_dir.is_dir():
            raise AccountsError(f"{data_dir} is not a data directory (see --data-dir)")
        if args.verb == "list":
            return _list(data_dir, args.domain)
        name = _account_name(args.jid, args.domain, force=args.force)
        if args.verb == "set-password":
            account_admin.set_password(data_dir, name, _new_password())
            print(f"{name}@{args.domain}: new password set; it holds from the next login on")
            return 0
        _confirm(f"{name}@{args.domain}", yes=args.yes)
        account_admin.delete_account(data_dir, name)
        print(f"{name}@{args.domain}: deleted; its name is free for the next login to take")
        return 0
    except AccountsError as error:
        print(f"spade-memory accounts: {error}", file=sys.stderr)
    except NoSuchAccount:
        print(
            f"spade-memory accounts: {data_dir} has no account {args.jid}"
            " (`spade-memory accounts list` shows them)",
            file=sys.stderr,
        )
    except (OSError, sqlite3.Error) as error:
        print(f"spade-memory accounts: cannot use {data_dir}: {error}", file=sys.stderr)
    return 1


def _list(data_dir: Path, domain: str) -> int:
    accounts = account_admin.list_accounts(data_dir)
    if not accounts:
        print(f"{data_dir}: no accounts yet (the embedded server makes each at its first login)")
        return 0
    services = {service.node: service.title for service in SERVICES}
    table = Table(
        Column("account", no_wrap=True), Column("made (UTC)", no_wrap=True), "memory agent"
    )
    for account in accounts:
        made = account.made.strftime("%Y-%m-%d %H:%M:%S") if account.made else "-"
        table.add_row(f"{account.name}@{domain}", made, services.get(account.name, ""))
    Console().print(table)
    return 0


def _account_name(jid: str, domain: str, *, force: bool) -> str:
    """The account name a JID argument names on this server (its local part)."""
    name, at, given_domain = jid.partition("@")
    given_domain = given_domain.split("/", 1)[0]
    if not name or (at and given_domain != domain):
        raise AccountsError(
            f"{jid} is not an account of the server of domain {domain} (see --domain)"
        )
    services = {service.node: service.title for service in SERVICES}
    if name in services and not force:
        raise AccountsError(
            f"{jid} is the {services[name]}'s own account (`spade-memory run` logs it in with"
            " the password kept in DATA_DIR/agent-password); add --force to change it anyway"
        )
    return name


def _new_password() -> str:
    """The new password: from the environment, else a prompt (twice), else stdin's line."""
    password = os.environ.get(PASSWORD_ENV)
    if password is None:
        if sys.stdin.isatty():
            password = getpass.getpass("new password: ")
            if getpass.getpass("again: ") != password:
                raise AccountsError("the two passwords differ; nothing was changed")
        else:
            password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise AccountsError(
            f"no password given: set {PASSWORD_ENV}, type it at the prompt or pipe it in"
        )
    return password


def _confirm(jid: str, *, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise AccountsError(f"not deleting {jid} without confirmation: add --yes")
    answer = input(f"delete the account {jid}? Its name is then anyone's to take [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise AccountsError(f"{jid} was not deleted")
