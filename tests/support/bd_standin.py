"""A stand-in for the ``bd`` binary (not installable here), put on PATH by tests.

It accepts exactly the flags real bd declares for the commands the adapter
uses (read from bd's cobra definitions: create, update, close, show, list,
dep add, label add, search, ready, and the persistent ``--json``), rejects
anything else with exit code 2 as cobra would, records each argument list
in ``$BD_STANDIN_LOG`` (one JSON array per line), and keeps a tiny store in
``.beads/standin.json`` so its JSON answers look like bd's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

STATE = Path(".beads") / "standin.json"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="bd", allow_abbrev=False)
    root.add_argument("--json", action="store_true")
    commands = root.add_subparsers(dest="command", required=True)

    def command(name: str, *flags: str, parent: Any = commands) -> argparse.ArgumentParser:
        """A subcommand taking string ``flags`` ("--long/-s" for a pair) and bd's ``--json``."""
        sub: argparse.ArgumentParser = parent.add_parser(name, allow_abbrev=False)
        sub.add_argument("--json", action="store_true")
        for flag in flags:
            sub.add_argument(*flag.split("/"))
        return sub

    common = ("--title", "--assignee/-a", "--description/-d", "--notes", "--external-ref")
    create = command("create", *common, "--type/-t", "--priority/-p", "--id", "--parent")
    create.add_argument("title_arg", nargs="?")
    create.add_argument("--labels", "-l", action="append", default=[])
    create.add_argument("--deps", action="append", default=[])
    update = command("update", *common, "--status/-s", "--priority/-p", "--type/-t", "--metadata")
    update.add_argument("ids", nargs="+")
    update.add_argument("--add-label", action="append", default=[])
    update.add_argument("--remove-label", action="append", default=[])
    close = command("close", "--reason/-r")
    close.add_argument("ids", nargs="+")
    command("show").add_argument("ids", nargs="+")
    listing = command("list", "--status/-s", "--assignee/-a", "--type/-t")
    listing.add_argument("--all", action="store_true")
    listing.add_argument("--label", "-l", action="append", default=[])
    listing.add_argument("--label-any", action="append", default=[])
    listing.add_argument("--limit", "-n", type=int, default=50)
    dep = commands.add_parser("dep").add_subparsers(dest="dep_command", required=True)
    dep_add = command("add", "--type/-t", parent=dep)
    dep_add.add_argument("issue")
    dep_add.add_argument("depends_on")
    label = commands.add_parser("label").add_subparsers(dest="label_command", required=True)
    label_add = command("add", parent=label)
    label_add.add_argument("issue")
    label_add.add_argument("label")
    search = command("search", "--query", "--status/-s", "--assignee/-a", "--type/-t")
    search.add_argument("words", nargs="*")
    search.add_argument("--limit", "-n", type=int, default=50)
    command("ready", "--assignee/-a").add_argument("--limit", "-n", type=int, default=10)
    return root


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def main() -> int:
    with open(os.environ["BD_STANDIN_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(sys.argv[1:]) + "\n")
    args = parser().parse_args()
    issues: dict[str, dict[str, Any]] = json.loads(STATE.read_text()) if STATE.exists() else {}
    result = run(args, issues)
    if result is None:
        print("Error: issue not found", file=sys.stderr)
        return 1
    STATE.parent.mkdir(exist_ok=True)
    STATE.write_text(json.dumps(issues))
    print(json.dumps(result))
    return 0


def run(args: argparse.Namespace, issues: dict[str, dict[str, Any]]) -> Any:
    if args.command == "create":
        if args.title and args.title_arg and args.title != args.title_arg:
            return None
        issue_id = f"sd-{len(issues) + 1}"
        issues[issue_id] = {
            "id": issue_id,
            "title": args.title or args.title_arg,
            "description": args.description,
            "notes": args.notes,
            "status": "open",
            "priority": int(args.priority or 2),
            "issue_type": args.type or "task",
            "assignee": args.assignee,
            "external_ref": args.external_ref,
            "labels": args.labels,
            "created_at": now(),
            "updated_at": now(),
        }
        return issues[issue_id]
    if args.command == "list":
        found = [i for i in issues.values() if args.all or i["status"] == (args.status or "open")]
        found = [i for i in found if set(args.label) <= set(i["labels"])]
        return found[: args.limit or None]
    if args.command == "search":
        return [i for i in issues.values() if args.query.lower() in i["title"].lower()]
    if args.command == "ready":
        return [i for i in issues.values() if i["status"] == "open"][: args.limit]
    if args.command in ("dep", "label"):
        if args.issue not in issues:
            return None
        if args.command == "label":
            issues[args.issue]["labels"].append(args.label)
        else:
            issues[args.issue].setdefault("dependencies", []).append(
                {
                    "issue_id": args.issue,
                    "depends_on_id": args.depends_on,
                    "type": args.type or "blocks",
                }
            )
        return {"status": "ok"}
    if any(issue_id not in issues for issue_id in args.ids):
        return None
    changed = [issues[issue_id] for issue_id in args.ids]
    for issue in changed:
        if args.command == "close":
            issue.update(status="closed", closed_at=now(), close_reason=args.reason)
        elif args.command == "update":
            for key in ("title", "description", "notes", "status", "assignee"):
                if getattr(args, key) is not None:
                    issue[key] = getattr(args, key)
            if args.priority is not None:
                issue["priority"] = int(args.priority)
            if args.metadata is not None:
                issue["metadata"] = json.loads(args.metadata)
            labels = issue["labels"] + args.add_label
            issue["labels"] = [label for label in labels if label not in args.remove_label]
    return changed


if __name__ == "__main__":
    sys.exit(main())
