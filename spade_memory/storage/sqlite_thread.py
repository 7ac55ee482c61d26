"""One sqlite3 connection in a thread of its own, driven from the event loop.

The connection is opened, used and closed in its thread and nowhere else. The event
loop hands that thread plain functions of the connection (``run``), one at a time in
the order given, and awaits what each returns or raises: the way datasette's
``execute_write_fn`` runs its writes. ``execute``, ``execute_fetchall``,
``executemany``, ``commit`` and ``rollback`` are such functions, for the stores'
code that awaits statement by statement (``connection.Database``); a whole
transaction can also be one function (``Transactions.inline``).

The thread is not a daemon: like any thread a store leaves running, it is named when
the service stops (and the process then ends anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")
Call = tuple[Callable[[Any], Any], asyncio.Future[Any]]
"""A function of the connection (of nothing, for the first, which opens it) and the
future of the caller awaiting it."""


class ThreadedConnection:
    """A sqlite3 connection living in a thread of its own (see the module)."""

    def __init__(self, name: str) -> None:
        self._calls: SimpleQueue[Call | None] = SimpleQueue()
        """What the thread runs next; None ends it."""
        self._conn: sqlite3.Connection | None = None
        """Used only in the thread, but for ``in_transaction``."""
        self._closed = False
        self._thread = threading.Thread(target=_serve, args=(self._calls,), name=name)
        """Not a daemon: a store left open keeps the process alive, and the service names
        it when it stops (the thread holds only its calls, so a connection dropped unclosed
        ends it when collected)."""

    @classmethod
    async def open(cls, database: str, **options: Any) -> ThreadedConnection:
        """Start the thread and open ``sqlite3.connect(database, **options)`` in it.

        Returns the connection; raises what ``sqlite3.connect`` raises (the thread then
        ends)."""
        connection = cls(f"spade-memory-sqlite {database}")
        connection._thread.start()
        try:
            connection._conn = await connection._call(
                lambda _: sqlite3.connect(database, **options)
            )
        except BaseException:
            connection._end()
            raise
        return connection

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (SQLite's autocommit flag, safe to read here)."""
        if self._conn is None:
            raise ValueError("the connection is closed")
        return self._conn.in_transaction

    async def run(self, function: Callable[[sqlite3.Connection], T]) -> T:
        """What ``function(connection)`` returns, run in the connection's thread after
        every function handed to it before; raises what it raises."""
        if self._closed:
            raise ValueError("the connection is closed")
        return await self._call(function)

    def _call(self, function: Callable[[Any], T]) -> asyncio.Future[T]:
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._calls.put((function, done))
        return done

    async def close(self) -> None:
        """Close the connection in its thread once what was handed to it before has run,
        and end the thread. Closing twice does nothing; raises what closing raised."""
        if self._closed:
            return
        try:
            await self.run(lambda conn: conn.close())
        finally:
            self._conn = None
            self._end()

    def _end(self) -> None:
        """No call is taken any more; the thread ends (closing the connection if it is
        still open) once the calls before have run."""
        if not self._closed:
            self._closed = True
            self._calls.put(None)

    def __del__(self) -> None:
        self._end()

    async def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        """Run one statement; the cursor serves for ``rowcount`` and ``lastrowid``
        (rows are read with ``execute_fetchall``: a cursor reads only in the thread)."""
        return await self.run(lambda conn: conn.execute(sql, parameters))

    async def execute_fetchall(self, sql: str, parameters: Any = (), /) -> list[Any]:
        """The rows of one statement."""
        return await self.run(lambda conn: conn.execute(sql, parameters).fetchall())

    async def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        return await self.run(lambda conn: conn.executemany(sql, parameters))

    async def commit(self) -> None:
        await self.run(lambda conn: conn.commit())

    async def rollback(self) -> None:
        await self.run(lambda conn: conn.rollback())


def _serve(calls: SimpleQueue[Call | None]) -> None:
    """The thread: open the connection (the first call), run each call in turn until
    told to end, and close the connection."""
    conn: sqlite3.Connection | None = None
    while (call := calls.get()) is not None:
        function, done = call
        try:
            result = function(conn)
        except BaseException as error:  # handed to the caller awaiting it
            _settle(done, None, error)
            continue
        if conn is None:
            conn = result
        _settle(done, result, None)
    if conn is not None:
        conn.close()  # nothing if ``close`` closed it


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """Hand a call's outcome to its caller on the event loop (from the thread)."""

    def settle() -> None:
        if done.done():  # its caller was cancelled
            return
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

    with contextlib.suppress(RuntimeError):  # a closed event loop: nobody waits any more
        done.get_loop().call_soon_threadsafe(settle)
