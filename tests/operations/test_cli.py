"""``spades-server`` as operators run it: flags and environment, health, reflection, metrics, logs.

One real server process, configured through environment variables only, serves the whole module.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from spades.engine import Rules
from spades.v1 import actions_pb2, lobby_pb2, play_pb2
from spades_server.api import web
from spades_server.app import config
from spades_server.ops.settings import Settings
from tests.support.processes import (
    SERVER,
    ServerProcess,
    Stubs,
    clean_environment,
    play_actions,
    spades_server,
)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("cli")
    env = clean_environment(
        SPADES_LISTEN="127.0.0.1:0",
        SPADES_DATABASE=str(folder / "not-yet" / "tables.db"),
        SPADES_METRICS="127.0.0.1:0",
        SPADES_WEB="127.0.0.1:0",
        SPADES_LOG_FORMAT="json",
        # Debug: per-action lines are debug (tests/first_contact/test_quiet_logs.py).
        SPADES_LOG_LEVEL="debug",
        SPADES_DURABILITY="full",
    )
    with spades_server(folder / "server.log", env=env) as server:
        yield server


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


# -- flags and environment ---------------------------------------------------------------------


def test_help_lists_every_flag_with_its_environment_variable() -> None:
    shown = subprocess.run(
        [str(SERVER), "--help"], capture_output=True, text=True, check=True, env=clean_environment()
    ).stdout
    flags = [
        action for action in config.parser({})._actions if action.dest != "help" and action.help
    ]
    assert {action.dest for action in flags} == set(config.ENVIRONMENT)
    flat = " ".join(shown.split())
    for action in flags:
        flag = action.option_strings[0]
        assert flag in shown, flag
        assert f"env {config.ENVIRONMENT[action.dest]};" in flat, (flag, flat)


def test_environment_sets_what_flags_do_and_flags_win() -> None:
    env = {"SPADES_LISTEN": "0.0.0.0:6000", "SPADES_LOG_FORMAT": "json"}
    assert config.from_args([], env).listen == "0.0.0.0:6000"
    assert config.from_args([], env).log_format == "json"
    assert config.from_args(["--listen", "127.0.0.1:7000"], env).listen == "127.0.0.1:7000"
    assert config.from_args([], {}) == Settings()


@pytest.mark.parametrize(
    ("variable", "bad"),
    [
        ("SPADES_LOG_FORMAT", "xml"),
        ("SPADES_DURABILITY", "sometimes"),
        ("SPADES_LISTEN", "no-port"),
        ("SPADES_SHUTDOWN_GRACE", "soon"),
    ],
)
def test_a_bad_environment_value_is_refused(variable: str, bad: str) -> None:
    ran = subprocess.run(
        [str(SERVER)], capture_output=True, text=True, env=clean_environment(**{variable: bad})
    )
    assert ran.returncode == 2
    assert bad in ran.stderr


def test_a_busy_port_is_a_clear_error(tmp_path: Path, served: ServerProcess) -> None:
    ran = subprocess.run(
        [str(SERVER), "--listen", served.address, "--metrics", "off", "--web", "off"],
        capture_output=True,
        text=True,
        env=clean_environment(SPADES_DATABASE=str(tmp_path / "other.db")),
        timeout=30,
    )
    assert ran.returncode == 2
    assert f"cannot listen on {served.address}" in ran.stderr


def test_a_second_server_hears_of_every_busy_port_at_once(
    tmp_path: Path, served: ServerProcess
) -> None:
    web_address = served.web_url.removeprefix("http://").rstrip("/")
    metrics_address = served.metrics_url.removeprefix("http://").removesuffix("/metrics")
    ran = subprocess.run(
        [str(SERVER), "--listen", served.address, "--web", web_address],
        capture_output=True,
        text=True,
        env=clean_environment(
            SPADES_DATABASE=str(tmp_path / "other.db"), SPADES_METRICS=metrics_address
        ),
        timeout=30,
    )
    assert ran.returncode == 2
    (line,) = ran.stderr.strip().splitlines()
    assert f"cannot listen on {served.address}: the port is in use" in line
    assert f"cannot serve the web port on {web_address}: the port is in use" in line
    assert f"cannot serve metrics on {metrics_address}: the port is in use" in line
    assert "--web off" in line and "--metrics off" in line


def test_the_banner_says_whether_admin_is_on_and_how_to_turn_it_on(
    tmp_path: Path, served: ServerProcess
) -> None:
    (off,) = [line for line in served.banner if line.lstrip().startswith("admin:")]
    assert "off (turn it on: SPADES_OPERATOR_TOKEN=$(openssl rand -hex 32) " in off
    env = clean_environment(SPADES_OPERATOR_TOKEN="an-operator-token-for-the-banner-test-0123456")
    with spades_server(
        tmp_path / "admin.log",
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "off",
        "--database",
        str(tmp_path / "admin.db"),
        env=env,
    ) as admin:
        (on,) = [line for line in admin.banner if line.lstrip().startswith("admin:")]
    assert on.split()[1] == "on" and "spades-admin list" in on


def test_the_environment_configured_the_running_server(served: ServerProcess) -> None:
    banner = "\n".join(served.banner)
    assert served.address.startswith("127.0.0.1:") and not served.address.endswith(":0")
    assert f"spades-bot --server {served.address} --quick-match --bot random" in banner
    assert f"spades-watch TABLE_ID --server {served.address}" in banner
    assert f"spades-tables --server {served.address}" in banner
    assert served.metrics_url.startswith("http://127.0.0.1:")
    assert served.web_url.startswith("http://127.0.0.1:") and served.web_url.endswith("/")
    assert served.metrics_url.endswith("/metrics") and ":0/" not in served.metrics_url
    assert "durability full" in banner
    database = Path(served.log_path.parent / "not-yet" / "tables.db")
    assert database.exists(), "SPADES_DATABASE names the file, and its folder is created"


# -- health and reflection ----------------------------------------------------------------------


def test_health_reports_serving(served: ServerProcess) -> None:
    with grpc.insecure_channel(served.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "spades.v1.LobbyService", "spades.v1.PlayService"):
            answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, service


def test_reflection_describes_the_services(served: ServerProcess) -> None:
    with grpc.insecure_channel(served.address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert {"spades.v1.LobbyService", "spades.v1.PlayService", "grpc.health.v1.Health"} <= (
            services
        )
        lobby = database.FindFileContainingSymbol("spades.v1.LobbyService")
        assert "spades/v1/lobby.proto" in lobby.name


# -- metrics and logs that move with traffic ----------------------------------------------------

METRICS = (
    "spades_tables",
    "spades_open_streams",
    "spades_actions_total",
    "spades_action_seconds",
    "spades_log_append_seconds",
    "spades_events_appended_total",
    "spades_errors_total",
    "spades_quick_match_waiting",
)


@pytest.mark.asyncio
async def test_metrics_and_logs_follow_the_traffic(served: ServerProcess) -> None:
    before = served.metrics()
    async with grpc.aio.insecure_channel(served.address) as channel:
        stubs = Stubs(channel)
        table_id, tokens = await stubs.new_table(Rules(max_hands=1))
        seats = [await stubs.open_seat(token) for token in tokens]
        opened = served.metrics()
        assert value(opened, "spades_open_streams", kind="play") >= 4
        assert value(opened, "spades_tables", status="playing") >= 1

        played = await play_actions(seats, 6, random.Random(3))
        # A stale action (answers sequence 1) is refused and counted.
        stale_seat = played[-1][0]
        stale = actions_pb2.Action(bid=actions_pb2.Bid(kind=actions_pb2.Bid.KIND_TRICKS, tricks=3))
        refused = await stale_seat.act(stale, 1)
        assert not refused.accepted and refused.code == grpc.StatusCode.ABORTED.value[0]
        # An unknown table: an error by status code.
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stubs.lobby.GetTable(lobby_pb2.GetTableRequest(table_id="no-such-table"))
        assert missing.value.code() is grpc.StatusCode.NOT_FOUND
        await stubs.lobby.QuickMatch(lobby_pb2.QuickMatchRequest(player_name="queued", bot=True))
        watch = stubs.play.Watch(play_pb2.WatchRequest(table_id=table_id))
        await watch.read()
        during = served.metrics()
        watch.cancel()
        for seat in seats:
            seat.cancel()

    after = served.metrics()
    names = {name for name, _ in after}
    for metric in METRICS:
        assert any(name.startswith(metric) for name in names), metric

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    accepted = sum(
        moved("spades_actions_total", type=kind, result="accepted")
        for kind in ("bid", "play_card", "blind_nil_choice", "card_pass")
    )
    assert accepted >= 6
    assert moved("spades_actions_total", type="bid", result="refused") >= 1
    assert moved("spades_action_seconds_count") >= 7
    assert moved("spades_action_seconds_bucket", le="+Inf") >= 7
    # create + 4 joins + 6 actions + the quick-match table and seat: appends and events.
    assert moved("spades_log_append_seconds_count") >= 13
    assert moved("spades_events_appended_total") >= 13
    assert moved("spades_errors_total", code="ABORTED") >= 1
    assert moved("spades_errors_total", code="NOT_FOUND") >= 1
    assert value(during, "spades_quick_match_waiting") >= 1
    assert value(during, "spades_open_streams", kind="watch") >= 1
    assert value(during, "spades_tables", status="waiting") >= 1

    lines = served.log_lines()
    records = [json.loads(line) for line in lines if line.strip()]  # every line is one object
    applied = [
        record
        for record in records
        if record.get("event") == "action applied" and record.get("table_id") == table_id
    ]
    assert len(applied) >= 6
    for record in applied:
        assert {"table_id", "seat", "sequence", "request_id", "level", "timestamp"} <= set(record)
    # One Play stream is one request: all of a seat's lines share its request id.
    by_seat: dict[int, set[str]] = {}
    for record in applied:
        by_seat.setdefault(record["seat"], set()).add(record["request_id"])
    assert all(len(ids) == 1 for ids in by_seat.values()), by_seat
    assert len({next(iter(ids)) for ids in by_seat.values()}) == len(by_seat)
    refused_lines = [r for r in records if r.get("event") == "action refused"]
    assert any(r.get("table_id") == table_id and "request_id" in r for r in refused_lines)


def test_grpc_web_calls_are_measured_and_logged_like_native_ones(served: ServerProcess) -> None:
    """A call through the web port runs through the same interceptors as a native one: its
    refusal is counted in spades_errors_total and logged with its method and reason code."""
    before = served.metrics()
    request = urllib.request.Request(
        f"{served.web_url}spades.v1.PlayService/GetRecord",
        data=web.frame(0, play_pb2.GetRecordRequest(table_id="t" * 100).SerializeToString()),
        headers={"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        ((flag, trailers),) = web.unframe(response.read())
    assert flag == 0x80 and b"grpc-status: 3\r\n" in trailers  # INVALID_ARGUMENT
    after = served.metrics()
    moved = value(after, "spades_errors_total", code="INVALID_ARGUMENT") - value(
        before, "spades_errors_total", code="INVALID_ARGUMENT"
    )
    assert moved == 1
    for _ in range(50):
        refused = [
            record
            for record in map(json.loads, filter(str.strip, served.log_lines()))
            if record.get("event") == "request refused"
            and record.get("method") == "/spades.v1.PlayService/GetRecord"
        ]
        if refused:
            break
        time.sleep(0.1)
    (record,) = refused
    assert record["reason_code"] == "FIELD_TOO_LONG" and record["code"] == "INVALID_ARGUMENT"
    assert "request_id" in record
