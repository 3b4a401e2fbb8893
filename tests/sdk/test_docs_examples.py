"""The Python examples of docs/views.md run as written, against a real server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from spades.client import SpadesClient
from spades.engine import Phase, Rules
from spades_server.app.server import SpadesServer

DOCS = Path(__file__).resolve().parents[2] / "docs"
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def examples(page: str) -> list[str]:
    return _PYTHON_BLOCK.findall((DOCS / page).read_text())


@pytest.mark.asyncio
async def test_the_get_view_example_shows_the_seat_its_hand(
    server: SpadesServer, client: SpadesClient, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = examples("views.md")
    namespace: dict[str, Any] = {}
    exec(compile(example, "docs/views.md", "exec"), namespace)
    created = await client.create_table("docs", Rules())
    tickets = [await client.join_table(created.table_id, f"p{n}") for n in range(4)]
    capsys.readouterr()
    await namespace["show"](f"127.0.0.1:{server.port}", created.table_id, tickets[1].token)
    # The server in this process logs to stdout too: the example's line is the one it printed.
    (printed,) = re.findall(r"^(\d+) (\S+) (.*)$", capsys.readouterr().out, re.MULTILINE)
    sequence, phase, rest = printed
    now = await client.get_view(created.table_id, tickets[1].token)
    assert int(sequence) == now.sequence and phase == str(Phase.BIDDING)
    assert now.view.hand is not None and len(now.view.hand) == 13
    assert all(repr(card) in rest for card in now.view.hand)
