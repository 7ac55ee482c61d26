"""Commit the beads file after a flush, so memories travel with the repository."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from pathlib import Path

logger = logging.getLogger("spade_memory.beads")


class GitCommitter:
    """Commits ``files`` of the work tree at ``repo`` (made a repository if it is none)."""

    def __init__(self, repo: Path, files: list[Path]) -> None:
        self.repo = repo
        self.files = [str(path.relative_to(repo)) for path in files]

    async def commit(self, message: str) -> bool:
        """Commit the files if they changed; True if a commit was made (never raises)."""
        try:
            return await self._commit(message)
        except OSError as error:
            logger.warning("git is not usable for the beads file: %s", error)
            return False

    async def _commit(self, message: str) -> bool:
        if (await self._git("rev-parse", "--is-inside-work-tree"))[0] != 0:
            await self._git("init", "--quiet")
        present = [name for name in self.files if (self.repo / name).exists()]
        if not present:
            return False
        await self._git("add", "--", *present)
        changed, _ = await self._git("diff", "--cached", "--quiet", "--", *present)
        if changed == 0:
            return False
        identity: list[str] = []
        if (await self._git("config", "user.email"))[0] != 0:
            identity = ["-c", "user.name=spade-memory", "-c", "user.email=spade-memory@localhost"]
        code, output = await self._git(
            *identity, "commit", "--quiet", "-m", message, "--", *present
        )
        if code != 0:
            logger.warning("git commit of the beads file failed: %s", output[-300:])
        return code == 0

    async def _git(self, *args: str) -> tuple[int, str]:
        # a thread, as ``bd_cli`` runs bd: asyncio's subprocesses depend on the loop policy
        done = await asyncio.to_thread(
            subprocess.run, ["git", *args], cwd=self.repo, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        return done.returncode or 0, done.stdout.decode(errors="replace")
