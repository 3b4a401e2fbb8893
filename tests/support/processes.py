"""The real ``spades-server`` process on ephemeral 127.0.0.1 ports, and a small gRPC client.

The process is started with ``--listen 127.0.0.1:0 --metrics 127.0.0.1:0`` (or the environment
equivalents) and the bound ports are read from its banner, so tests never guess a free port.
Its stderr (the structured log) goes to a file the tests can read.

A process that must come back on the same address after a kill (the fault tests) is given a
port of its own instead (:func:`free_port`, :func:`server_args`, :func:`server_process`,
:func:`kill`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import grpc
from prometheus_client.parser import text_string_to_metric_families

from spades import protocol
from spades.engine import Rules
from spades.v1 import actions_pb2, events_pb2, lobby_pb2, lobby_pb2_grpc, play_pb2, play_pb2_grpc
from tests.support.backends import LogStorage

SERVER = Path(sys.executable).with_name("spades-server")
TOKEN_KEY = "spades-seat-token"
START_TIMEOUT = 20.0
READ_TIMEOUT = 10.0
T = TypeVar("T")
_LISTENING = re.compile(r"listening on (\S+)")
_METRICS = re.compile(r"metrics:\s+(\S+)")
_WEB = re.compile(r"web:\s+(\S+)")


def clean_environment(**overrides: str) -> dict[str, str]:
    """The test's environment without any SPADES_* setting, plus ``overrides``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPADES_")}
    env.update(overrides)
    return env


@dataclass
class ServerProcess:
    """A running ``spades-server``: its address, metrics URL, banner and log file."""

    process: subprocess.Popen[str]
    address: str
    metrics_url: str
    banner: list[str]
    log_path: Path
    stdout_lines: queue.Queue[str | None] = field(repr=False)
    #: The web port's URL from the banner, or "off".
    web_url: str = "off"

    def log_lines(self) -> list[str]:
        return self.log_path.read_text().splitlines()

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample on /metrics: (name, sorted labels) -> value."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:
            text = response.read().decode()
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def terminate(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout)


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


@contextlib.contextmanager
def spades_server(
    log_path: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    wrap: Sequence[str] = (),
) -> Iterator[ServerProcess]:
    """Start ``spades-server *args`` (in ``cwd``; behind the command ``wrap``, which must exec
    it, when given); wait for its banner; on exit make sure it is gone.

    Unless ``args`` or ``env`` choose a web port, the server's is ``127.0.0.1:0`` (any free
    port), so that servers started side by side never fight over the default 8080."""
    environment = dict(env) if env is not None else clean_environment()
    if "--web" not in args and "SPADES_WEB" not in environment:
        args = (*args, "--web", "127.0.0.1:0")
    with log_path.open("w") as log_file:
        process = subprocess.Popen(
            [*wrap, str(SERVER), *args],
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
            env=environment,
            cwd=cwd,
        )
    try:
        lines: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        banner: list[str] = []
        deadline = time.monotonic() + START_TIMEOUT
        while not any("stop:" in line for line in banner):
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no banner in {START_TIMEOUT} s: {banner}") from None
            if line is None:
                raise AssertionError(
                    f"spades-server exited ({process.wait()}): {log_path.read_text()}"
                )
            banner.append(line)
        text = "\n".join(banner)
        listening, metrics = _LISTENING.search(text), _METRICS.search(text)
        web = _WEB.search(text)
        assert listening is not None and metrics is not None and web is not None, text
        yield ServerProcess(
            process, listening[1], metrics[1], banner, log_path, lines, web_url=web[1]
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


# -- a small client ----------------------------------------------------------------------------


class Stubs:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        self.play = play_pb2_grpc.PlayServiceStub(channel)

    async def new_table(self, rules: Rules | None = None) -> tuple[str, list[str]]:
        """A table with four seated bots: its id and the four seat tokens."""
        created = await self.lobby.CreateTable(
            lobby_pb2.CreateTableRequest(
                name="operations", rules=protocol.rules_to_proto(rules or Rules())
            )
        )
        table_id = created.table.table_id
        tokens = []
        for index in range(4):
            joined = await self.lobby.JoinTable(
                lobby_pb2.JoinTableRequest(table_id=table_id, player_name=f"bot {index}", bot=True)
            )
            tokens.append(joined.seat_token)
        return table_id, tokens

    async def open_seat(self, token: str, after_sequence: int = 0) -> Seat:
        """Open the seat's Play stream; its messages are read in the background from then on."""
        call = self.play.Play(metadata=((TOKEN_KEY, token),))  # type: ignore[call-arg]
        await call.write(
            play_pb2.PlayRequest(start=play_pb2.StartPlay(after_sequence=after_sequence))
        )
        first = cast(play_pb2.PlayResponse, await asyncio.wait_for(call.read(), READ_TIMEOUT))
        assert first.WhichOneof("kind") == "snapshot", first
        return Seat(call, first.snapshot)


class Seat:
    """One seat's Play stream, read by a background task until the server ends it."""

    def __init__(self, call: Any, snapshot: play_pb2.Snapshot) -> None:
        self.call = call
        self.snapshot = snapshot
        self.sequence = snapshot.sequence
        self.prompt: play_pb2.TurnPrompt | None = None
        self.events: list[events_pb2.Event] = []
        self.results: dict[str, play_pb2.ActionResult] = {}
        #: The status the server ended the stream with (None while open or after a clean end).
        self.error: grpc.aio.AioRpcError | None = None
        self.closed = False
        self.news = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            while True:
                message = await self.call.read()
                if message is grpc.aio.EOF:  # type: ignore[attr-defined]
                    return
                kind = message.WhichOneof("kind")
                if kind == "event":
                    self.events.append(message.event)
                    self.sequence = message.event.sequence
                elif kind == "prompt":
                    self.prompt = message.prompt
                elif kind == "action_result":
                    self.results[message.action_result.action_id] = message.action_result
                self.news.set()
        except grpc.aio.AioRpcError as error:
            self.error = error
        finally:
            self.closed = True
            self.news.set()

    async def until(self, check: Callable[[], T | None], timeout: float = READ_TIMEOUT) -> T:
        """Wait until ``check()`` returns something (re-checked on every message)."""
        return await until(check, [self], timeout)

    async def send(self, action: actions_pb2.Action, sequence: int, action_id: str = "") -> str:
        if self.prompt is not None and self.prompt.sequence == sequence:
            # Answered: until this seat's stream brings the action's events, the table still
            # looks at that sequence, and next_turn would hand this seat its own prompt again.
            self.prompt = None
        action_id = action_id or uuid.uuid4().hex
        await self.call.write(
            play_pb2.PlayRequest(
                action=play_pb2.ActionRequest(action_id=action_id, sequence=sequence, action=action)
            )
        )
        return action_id

    async def act(
        self, action: actions_pb2.Action, sequence: int, action_id: str = ""
    ) -> play_pb2.ActionResult:
        sent = await self.send(action, sequence, action_id)
        return await self.until(lambda: self.results.get(sent))

    async def ended(self, timeout: float = READ_TIMEOUT) -> grpc.aio.AioRpcError | None:
        """Wait for the server to end the stream; its error status, if any."""
        await self.until(lambda: self.closed or None, timeout)
        return self.error

    def cancel(self) -> None:
        self.call.cancel()


async def until(check: Callable[[], T | None], seats: Sequence[Seat], timeout: float) -> T:
    async def poll() -> T:
        while True:
            value = check()
            if value is not None:
                return value
            if all(seat.closed for seat in seats):
                raise EOFError("every stream ended")
            for seat in seats:
                seat.news.clear()
            waiters = [asyncio.create_task(seat.news.wait()) for seat in seats]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()

    return await asyncio.wait_for(poll(), timeout)


def seat_on_turn(seats: Sequence[Seat]) -> Seat | None:
    """The seat holding a prompt for the table's latest sequence, if any."""
    latest = max(seat.sequence for seat in seats)
    for seat in seats:
        if seat.prompt is not None and seat.prompt.sequence == latest == seat.sequence:
            return seat
    return None


async def next_turn(seats: Sequence[Seat]) -> Seat:
    """Wait for the seat whose turn it is (with its prompt)."""
    return await until(lambda: seat_on_turn(seats), seats, READ_TIMEOUT)


async def play_actions(
    seats: Sequence[Seat], count: int, rng: random.Random
) -> list[tuple[Seat, str, play_pb2.ActionResult]]:
    """Play ``count`` random legal actions in turn; each one's seat, action id and result."""
    played = []
    for _ in range(count):
        seat = await next_turn(seats)
        prompt = seat.prompt
        assert prompt is not None
        result = await seat.act(rng.choice(list(prompt.legal_actions)), prompt.sequence)
        assert result.accepted, result
        played.append((seat, result.action_id, result))
    return played


# -- a server process on a port of its own, restarted on the same address ------------------

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice), to pass to the server explicitly:
    a restarted server must come back on the same address for the SDK to find it."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different free ports: every probe stays bound until all are chosen (one closed
    at once lets the kernel hand the same port out again, to the next probe)."""
    probes: list[socket.socket] = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probes.append(probe)
            probe.bind((LOOPBACK, 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


@contextlib.contextmanager
def unanswered_address() -> Iterator[str]:
    """An address on the loopback where nothing answers while the block runs: a socket bound to
    it, never listening, refuses every connection, and keeps the port from the kernel's other
    choices meanwhile. A port found free and let go (:func:`free_port`) is no such address: a
    server of a test running beside may be given it next, and then answers there."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        held.bind((LOOPBACK, 0))
        yield f"{LOOPBACK}:{held.getsockname()[1]}"
    finally:
        held.close()


def server_args(storage: LogStorage | Path, port: int, *extra: str) -> list[str]:
    """Flags for a server process on ``storage`` (a PostgreSQL one after ``prepare()``): each
    restart with the same flags comes back on the same log and address."""
    return [
        "--listen",
        f"{LOOPBACK}:{port}",
        "--metrics",
        f"{LOOPBACK}:0",
        *LogStorage.of(storage).flags(),
        "--log-format",
        "json",
        "--shutdown-grace",
        "1",
        *extra,
    ]


@contextlib.asynccontextmanager
async def server_process(log_path: Path, *args: str) -> AsyncIterator[ServerProcess]:
    """``spades-server *args`` started off the event loop (the clients keep running while it
    boots); killed on exit if still alive."""
    manager = spades_server(log_path, *args)
    running = await asyncio.to_thread(manager.__enter__)
    try:
        yield running
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)


async def kill(server: ServerProcess, signum: int) -> int:
    server.terminate(signum)
    return await asyncio.to_thread(server.wait, 10)
