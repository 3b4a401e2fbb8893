"""``spades-bot`` is the SDK's command: an author's ``module:Class`` runs with the SDK alone,
the named bots come from the ``spades.bots`` entry points of spades-bots (and a missing one is
a one-line error, exit 2), and ``--account-key``, ``--rated`` and ``--tls-ca`` reach the server.

"The SDK alone" is this very environment with the spades-bots distribution taken out: a folder
of links to every entry of site-packages but spades-bots' own, as the one site folder of a
``python -I -S`` child, so neither ``spades_bots`` nor its entry points can be found."""

from __future__ import annotations

import asyncio
import importlib
import sys
import sysconfig
from importlib.metadata import entry_points
from pathlib import Path

import grpc
import pytest

import spades
from spades.bot import named_bot_class, play_match
from spades.client import SpadesClient
from spades.engine import Rules
from spades_server.app.server import SpadesServer
from tests.sdk.author_bot import Lowest
from tests.support.bot_process import SPADES_BOT
from tests.support.processes import clean_environment
from tests.support.servers import running_server
from tests.support.tls import self_signed

#: Seconds a whole one-hand match (or a refused call) may take, processes included.
MATCH_TIMEOUT = 120

#: The child's program: the SDK's source first, the stripped site folder, then ``-m``'s work.
SDK_ALONE = (
    "import runpy, site, sys; sdk, folder = sys.argv.pop(1), sys.argv.pop(1); "
    "sys.path.insert(0, sdk); site.addsitedir(folder); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)

AUTHOR_BOT = """
from spades.bot import Bot, BotView
from spades.engine import Card


class MyBot(Bot):
    def bid(self, view: BotView) -> int:  # 0 is Nil
        return 2 if 2 in view.legal_bids else min(bid for bid in view.legal_bids if bid > 0)

    def play(self, view: BotView) -> Card:  # the lowest card the rules allow
        return min(view.legal_cards, key=lambda card: card.rank)
"""


@pytest.fixture
def without_spades_bots(tmp_path: Path) -> Path:
    """A site folder holding everything installed here except the spades-bots distribution."""
    folder = tmp_path / "site-without-bots"
    folder.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "spades_bots" not in entry.name.replace("-", "_").lower():
            (folder / entry.name).symlink_to(entry)
    return folder


def sdk_alone(folder: Path, *args: str) -> list[str]:
    """The command line running ``python -m ARGS...`` with the SDK but not spades-bots."""
    sdk_source = str(Path(spades.__file__).resolve().parents[1])
    return [sys.executable, "-I", "-S", "-c", SDK_ALONE, sdk_source, str(folder), *args]


async def run(command: list[str], cwd: Path, **env: str) -> tuple[int, str]:
    """Run ``command`` to its end (bounded): its exit status and its output."""
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=clean_environment(**env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), MATCH_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, output.decode()


async def play_the_other_seats(client: SpadesClient, table_id: str, seats: list[str]) -> None:
    tickets = [await client.join_table(table_id, f"lowest {seat}", seat=seat) for seat in seats]
    await asyncio.gather(*(play_match(client, Lowest(), ticket.token) for ticket in tickets))


def test_spades_bot_is_the_sdk_command_and_spades_bots_registers_the_named_bots() -> None:
    (script,) = entry_points(group="console_scripts", name="spades-bot")
    assert script.value == "spades.commands.bot:main"
    assert script.dist is not None and script.dist.name == "spades-sdk"
    named = {entry.name: entry for entry in entry_points(group="spades.bots")}
    assert set(named) >= {"random", "heuristic", "search"}
    assert all(entry.dist is not None for entry in named.values())
    assert {entry.dist.name for entry in named.values() if entry.dist} == {"spades-bots"}
    assert named_bot_class("random").__name__ == "RandomBot"
    assert named_bot_class("search:250")().think_ms == 250  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="takes no argument"):
        named_bot_class("heuristic:7")
    with pytest.raises(ValueError, match="takes milliseconds"):
        named_bot_class("search:soon")


@pytest.mark.asyncio
async def test_without_spades_bots_a_named_bot_is_one_line_and_exit_2(
    without_spades_bots: Path, tmp_path: Path
) -> None:
    code, output = await run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            "import site, sys; site.addsitedir(sys.argv[1]); import spades_bots",
            str(without_spades_bots),
        ],
        tmp_path,
    )
    assert code == 1 and "No module named 'spades_bots'" in output  # truly not there
    for name in ("random", "heuristic", "search:50"):
        command = sdk_alone(
            without_spades_bots,
            "spades.commands.bot",
            "--bot",
            name,
            "--quick-match",
            "--server",
            "127.0.0.1:1",
        )
        code, output = await run(command, tmp_path)
        assert code == 2, output
        (line,) = output.strip().splitlines()
        bare = name.partition(":")[0]
        assert f"the bot {bare!r} comes with the spades-bots distribution" in line
        assert "pip install ./client_sdk ./bots" in line


@pytest.mark.asyncio
async def test_an_authors_bot_from_a_file_plays_a_match_with_the_sdk_alone(
    without_spades_bots: Path, tmp_path: Path, client: SpadesClient, server: SpadesServer
) -> None:
    (tmp_path / "mybot.py").write_text(AUTHOR_BOT)
    created = await client.create_table("sdk alone", Rules(max_hands=1))
    command = sdk_alone(
        without_spades_bots,
        "spades.commands.bot",
        "--bot",
        "mybot:MyBot",
        "--server",
        f"127.0.0.1:{server.port}",
        "--table",
        created.table_id,
        "--seat",
        "north",
        "--name",
        "my file's bot",
    )
    bot = asyncio.create_task(run(command, tmp_path))
    await _wait_for_seat(client, created.table_id, 0)
    await asyncio.wait_for(
        play_the_other_seats(client, created.table_id, ["east", "south", "west"]), MATCH_TIMEOUT
    )
    code, output = await bot
    assert code == 0, output
    assert "match over" in output
    table = await client.get_table(created.table_id)
    assert table.status == "finished"
    assert table.seats[0].player_name == "my file's bot"


@pytest.mark.asyncio
async def test_a_named_bot_plays_with_an_account_key_from_the_environment(
    tmp_path: Path, client: SpadesClient, server: SpadesServer
) -> None:
    account = await client.create_account("Console Bot")
    created = await client.create_table("named", Rules(max_hands=1))
    command = [
        str(SPADES_BOT),
        "--bot",
        "random",
        "--server",
        f"127.0.0.1:{server.port}",
        "--table",
        created.table_id,
        "--seat",
        "east",
    ]
    bot = asyncio.create_task(run(command, tmp_path, SPADES_ACCOUNT_KEY=account.key))
    await _wait_for_seat(client, created.table_id, 1)
    seated = await client.get_table(created.table_id)
    assert seated.message.seats[1].account_id == account.account.account_id
    await asyncio.wait_for(
        play_the_other_seats(client, created.table_id, ["north", "south", "west"]), MATCH_TIMEOUT
    )
    code, output = await bot
    assert code == 0, output
    assert account.key not in output  # a key is a secret: never in the logs
    table = await client.get_table(created.table_id)
    assert table.status == "finished"
    assert table.message.seats[1].account_id == account.account.account_id
    # Without a key the seat is anonymous (the flag, not a default, put the account there).
    assert table.message.seats[0].account_id == ""


@pytest.mark.asyncio
async def test_rated_asks_the_rated_queue_which_needs_an_account(
    tmp_path: Path, server: SpadesServer
) -> None:
    command = [
        str(SPADES_BOT),
        "--bot",
        "random",
        "--server",
        f"127.0.0.1:{server.port}",
        "--quick-match",
        "--rated",
    ]
    code, output = await run(command, tmp_path)
    assert code == 1, output
    assert "PERMISSION_DENIED" in output, output
    assert "the rated queue is for accounts" in output
    code, output = await run([str(SPADES_BOT), "--rated", "--table", "x"], tmp_path)
    assert code == 2 and "--rated needs --quick-match" in output


@pytest.mark.asyncio
async def test_tls_ca_connects_the_commands_to_a_tls_server(tmp_path: Path) -> None:
    cert_file, key_file, _ = self_signed(tmp_path)
    async with running_server(
        tmp_path / "tables.db", tls_cert=str(cert_file), tls_key=str(key_file)
    ) as server:
        address = f"127.0.0.1:{server.port}"
        credentials = grpc.ssl_channel_credentials(root_certificates=cert_file.read_bytes())
        async with SpadesClient(address, credentials=credentials) as client:
            created = await client.create_table("over TLS", Rules(max_hands=1))
            tables = Path(sys.executable).with_name("spades-tables")
            code, output = await run(
                [str(tables), "--server", address, "--tls-ca", str(cert_file)], tmp_path
            )
            assert code == 0, output
            assert created.table_id in output
            code, output = await run([str(tables), "--server", address], tmp_path)
            assert code == 1 and created.table_id not in output  # plaintext is refused

            command = [
                str(SPADES_BOT),
                "--bot",
                "random",
                "--server",
                address,
                "--tls-ca",
                str(cert_file),
                "--table",
                created.table_id,
                "--seat",
                "west",
            ]
            bot = asyncio.create_task(run(command, tmp_path))
            await _wait_for_seat(client, created.table_id, 3)
            await asyncio.wait_for(
                play_the_other_seats(client, created.table_id, ["north", "east", "south"]),
                MATCH_TIMEOUT,
            )
            code, output = await bot
            assert code == 0, output
            assert (await client.get_table(created.table_id)).status == "finished"

    (tmp_path / "not-a-cert.pem").write_text("hello")
    for flag in (str(tmp_path / "missing.pem"), str(tmp_path / "not-a-cert.pem")):
        code, output = await run([str(SPADES_BOT), "--tls-ca", flag, "--quick-match"], tmp_path)
        assert code == 2 and "--tls-ca" in output, output


async def _wait_for_seat(client: SpadesClient, table_id: str, seat: int) -> None:
    """Until a player (another process) sits at ``seat``."""
    async with asyncio.timeout(MATCH_TIMEOUT / 2):
        while not (await client.get_table(table_id)).seats[seat].occupied:
            await asyncio.sleep(0.1)


@pytest.mark.asyncio
async def test_rated_with_an_account_key_plays_a_rated_quick_match(
    tmp_path: Path, server: SpadesServer
) -> None:
    address = f"127.0.0.1:{server.port}"
    async with SpadesClient(address) as lobby:
        accounts = [await lobby.create_account(f"Rated {number}") for number in range(4)]
    command = [str(SPADES_BOT), "--bot", "random", "--server", address, "--quick-match", "--rated"]
    bot = asyncio.create_task(run(command, tmp_path, SPADES_ACCOUNT_KEY=accounts[0].key))
    others = [SpadesClient(address, account_key=account.key) for account in accounts[1:]]
    try:
        async with asyncio.timeout(MATCH_TIMEOUT):
            while not (await others[0].list_tables("waiting")).tables:
                await asyncio.sleep(0.1)  # the bot's rated table is open: the others join it
            tickets = [
                await other.quick_match(f"rated {n}", rated=True) for n, other in enumerate(others)
            ]
            await asyncio.gather(
                *(
                    play_match(other, Lowest(), ticket.token)
                    for other, ticket in zip(others, tickets, strict=True)
                )
            )
        code, output = await bot
        assert code == 0, output
        table = await others[0].get_table(tickets[0].table_id)
    finally:
        for other in others:
            await other.close()
    assert table.status == "finished" and table.message.rated
    seated = {seat.account_id for seat in table.message.seats}
    assert seated == {account.account.account_id for account in accounts}


@pytest.mark.parametrize("command", ["bot", "watch", "tables", "admin", "play"])
def test_every_sdk_command_takes_tls_ca(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"spades.commands.{command}")
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    assert "--tls-ca FILE" in capsys.readouterr().out


@pytest.mark.asyncio
async def test_a_mistaken_bot_name_lists_the_named_bots_or_the_modules_classes(
    tmp_path: Path,
) -> None:
    (tmp_path / "mybot.py").write_text(AUTHOR_BOT)
    nowhere = ["--quick-match", "--server", "127.0.0.1:1"]
    code, output = await run([str(SPADES_BOT), "--bot", "bogus", *nowhere], tmp_path)
    assert code == 2, output
    (line,) = output.strip().splitlines()
    assert "no bot is named 'bogus': the named bots are expert, heuristic, random, search;" in line
    code, output = await run([str(SPADES_BOT), "--bot", "mybot:Missing", *nowhere], tmp_path)
    assert code == 2, output
    (line,) = output.strip().splitlines()
    assert "mybot has no class 'Missing' (its bot classes: MyBot)" in line


@pytest.mark.asyncio
async def test_a_bot_without_a_name_is_shown_by_its_class_name(
    tmp_path: Path, client: SpadesClient, server: SpadesServer
) -> None:
    (tmp_path / "mybot.py").write_text(AUTHOR_BOT)  # MyBot keeps Bot's default name, "bot"
    created = await client.create_table("unnamed", Rules(max_hands=1))
    command = [str(SPADES_BOT), "--bot", "mybot:MyBot", "--server", f"127.0.0.1:{server.port}"]
    bot = asyncio.create_task(run([*command, "--table", created.table_id], tmp_path))
    await _wait_for_seat(client, created.table_id, 0)
    assert (await client.get_table(created.table_id)).seats[0].player_name == "MyBot"
    await asyncio.wait_for(
        play_the_other_seats(client, created.table_id, ["east", "south", "west"]), MATCH_TIMEOUT
    )
    code, output = await bot
    assert code == 0, output
