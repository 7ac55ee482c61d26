"""A TCP proxy whose open connections can be stalled: what they carry is read and dropped,
both ways, while TCP stays up (a routing task that died, a middle box that hangs).
Connections made after ``stall`` are carried as usual."""

from __future__ import annotations

import asyncio
import contextlib


class StallProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:upstream``."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = 0
        self.connections = 0
        self._stalled: set[int] = set()
        self._open: list[int] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stall(self) -> None:
        """Stall every connection open now."""
        self._stalled.update(self._open)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        self._open.append(number)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        pipes = [
            asyncio.create_task(self._pipe(number, reader, up_writer)),
            asyncio.create_task(self._pipe(number, up_reader, writer)),
        ]
        self._tasks.update(pipes)
        await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        for pipe in pipes:
            pipe.cancel()
        for closing in (writer, up_writer):
            closing.close()
        self._open.remove(number)
        self._tasks.difference_update(pipes)

    async def _pipe(
        self, number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while data := await reader.read(65536):
            if number not in self._stalled:
                writer.write(data)
                await writer.drain()
