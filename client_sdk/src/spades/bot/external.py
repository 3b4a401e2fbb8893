"""A bot in any language: a child process that speaks JSON lines (``--bot exec:COMMAND``).

:class:`ExternalBot` starts COMMAND, says hello, and at each turn sends the seat's view and
asks for one of the legal actions (:mod:`spades.bot.external_protocol`, specified in
docs/external-bots.md). A table must never stall on a child, so whatever goes wrong (it will
not start, crashes, exits, hangs past the turn's time, answers garbage or an action that is not
on offer) the turn falls to the SDK's default (the first legal action), the error is logged,
and the child is stopped; the next turn starts a fresh one.

>>> bot = ExternalBot("node bots/examples/simple.js")
>>> bot.name
'simple'
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
import weakref
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, ClassVar

from spades.bot import external_protocol as wire
from spades.bot.base import Bot, Noted
from spades.bot.thinking import decision_seconds
from spades.bot.view import BotView
from spades.engine import Card, ChooseBlindNil, MakeBid, PassCards, PlayCard
from spades.engine import events as ev

log = logging.getLogger("spades.bot.external")

#: The longest line a child may write (a view is a few kilobytes).
LINE_LIMIT = 1 << 20
#: How long a child that was told the match is over gets to exit before it is killed.
EXIT_GRACE = 1.0


class ChildFailed(Exception):
    """The child could not give an answer (it exited, or its stdin closed)."""


class _Child:
    """One running child process, tied to the event loop that started it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.loop = asyncio.get_running_loop()
        self.name = ""
        self.requests = 0
        # If the bot is dropped without being closed (a loop torn down mid-match), the child
        # must not outlive it.
        self._reaper = weakref.finalize(self, _kill, process.pid)

    @classmethod
    async def start(cls, argv: Sequence[str]) -> _Child:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=LINE_LIMIT,
            )
        except OSError as error:
            raise ChildFailed(f"cannot start {shlex.join(argv)}: {error}") from error
        child = cls(process)
        await child.send(wire.hello())
        child.name = wire.read_hello(await child.receive())
        return child

    async def send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(wire.encode(message))
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as error:
            raise ChildFailed(f"the child closed its input ({self._exit_note()})") from error

    async def receive(self) -> bytes:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            line = await stdout.readline()
        except ValueError as error:  # a line past LINE_LIMIT
            raise wire.ProtocolError(f"a line longer than {LINE_LIMIT} bytes") from error
        if not line.endswith(b"\n"):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), 0.2)
            raise ChildFailed(f"the child exited ({self._exit_note()})")
        return line

    async def ask(self, view: BotView, time_ms: int) -> wire.Answer:
        self.requests += 1
        await self.send(wire.decide(view, self.requests, time_ms))
        return wire.read_answer(await self.receive(), self.requests, view.legal_actions)

    def _exit_note(self) -> str:
        code = self.process.returncode
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by signal {-code}"
        return f"exit code {code}"

    async def stop(self, message: dict[str, Any] | None = None) -> int | None:
        """Tell the child goodbye (if ``message``), close its input, and make sure it ends;
        returns its exit code (None when only a signal could be sent)."""
        if self.loop is not asyncio.get_running_loop():
            self._reaper()  # its pipes belong to a loop that is gone: only a signal reaches it
            return None
        try:
            if message is not None and self.process.returncode is None:
                with contextlib.suppress(ChildFailed):
                    await self.send(message)
            stdin = self.process.stdin
            if stdin is not None:
                stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), EXIT_GRACE if message else 0)
        finally:
            # Also when cancelled (a loop shutting down, say at the end of asyncio.run): the
            # child is killed and reaped on this loop, so its pipes close before the loop does.
            if self.process.returncode is None:
                self._reaper()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), EXIT_GRACE)
            self._reaper.detach()
        return self.process.returncode


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


class ExternalBot(Bot):
    """Plays with the decisions of a child process (``command``: split like a shell would, but
    run without one).

    ``answer_seconds`` caps each decision (starting the child included); by default a decision
    may take the whole turn clock less a safety margin (:mod:`spades.bot.thinking`).
    """

    #: The command, for subclasses made by :func:`external_bot_class`.
    command: ClassVar[str] = ""

    def __init__(self, command: str | None = None, *, answer_seconds: float | None = None) -> None:
        self.argv = shlex.split(command if command is not None else self.command)
        if not self.argv:
            raise ValueError("exec: needs a command to run, like exec:'node my_bot.js'")
        self.name = PurePath(self.argv[-1]).stem or "external"
        self.answer_seconds = answer_seconds
        self.child: _Child | None = None
        #: Turns that fell to the default because the child failed.
        self.failures = 0
        #: Children started (the first, then one after each failure).
        self.starts = 0
        #: How each stopped child ended (negative: killed by that signal).
        self.exit_codes: list[int | None] = []
        self._goodbye: asyncio.Task[None] | None = None

    async def choose(self, view: BotView) -> wire.Answer:
        """The child's choice among ``view.legal_actions`` and its note, or the first action
        (without a note) if it fails."""
        legal = view.legal_actions
        seconds = decision_seconds(view.rules, self.answer_seconds)
        try:
            async with asyncio.timeout(seconds):
                child = await self._running_child()
                return await child.ask(view, int(seconds * 1000))
        except (TimeoutError, ChildFailed, wire.ProtocolError) as error:
            reason = f"no answer within {seconds:g} s" if isinstance(error, TimeoutError) else error
            log.warning(
                "%s failed at %s: %s; playing %s and restarting it",
                shlex.join(self.argv),
                view,
                reason,
                legal[0],
            )
            self.failures += 1
            await self.close()
            return wire.Answer(legal[0])

    async def _running_child(self) -> _Child:
        child = self.child
        if child is not None and child.loop is not asyncio.get_running_loop():
            await self._stop(child)
            child = self.child = None
        if child is None:
            self.starts += 1
            child = self.child = await _Child.start(self.argv)
        return child

    async def close(self) -> None:
        """Stop the child (the next decision starts a new one); also waits for the goodbye
        that the end of a match started."""
        goodbye, self._goodbye = self._goodbye, None
        if goodbye is not None:
            await goodbye
        child, self.child = self.child, None
        if child is not None:
            await self._stop(child)

    async def _stop(self, child: _Child, message: dict[str, Any] | None = None) -> None:
        self.exit_codes.append(await child.stop(message))

    # The Bot decisions, each from the one choice. Bot documents that a decision may be
    # async; its signatures name the plain result, hence the overrides.

    async def choose_blind_nil(self, view: BotView) -> Noted[bool]:  # type: ignore[override]
        action, note = await self.choose(view)
        return Noted(isinstance(action, ChooseBlindNil) and action.blind, note)

    async def bid(self, view: BotView) -> Noted[int]:  # type: ignore[override]
        action, note = await self.choose(view)
        assert isinstance(action, MakeBid)
        return Noted(action.tricks, note)

    async def pass_cards(self, view: BotView) -> Noted[list[Card]]:  # type: ignore[override]
        action, note = await self.choose(view)
        assert isinstance(action, PassCards)
        return Noted(list(action.cards), note)

    async def play(self, view: BotView) -> Noted[Card]:  # type: ignore[override]
        action, note = await self.choose(view)
        assert isinstance(action, PlayCard)
        return Noted(action.card, note)

    def on_match_end(self, end: ev.MatchEnded, view: BotView) -> None:
        # on_match_end is not async: the goodbye runs on the loop, and close() waits for it.
        child, self.child = self.child, None
        if child is not None:
            self._goodbye = asyncio.get_running_loop().create_task(self._stop(child, wire.end(end)))


def external_bot_class(command: str) -> type[ExternalBot]:
    """An :class:`ExternalBot` subclass that runs ``command``: what ``exec:COMMAND`` names, for
    code that makes bots from a class (the arena, house bots)."""
    if not shlex.split(command):
        raise ValueError("exec: needs a command to run, like exec:'node my_bot.js'")
    return type("ExternalBot", (ExternalBot,), {"command": command})
