"""The one catalogue of reason codes against docs/errors.md, the code that raises them, and the
documented maximum lengths of request fields against the server's checks."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from spades.reasons import CODES, DOMAIN, Reason
from spades.v1 import (
    account_pb2,
    admin_pb2,
    challenge_pb2,
    lobby_pb2,
    play_pb2,
    rating_pb2,
    tournament_pb2,
)
from spades_server.domain import checks, errors

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "errors.md"
#: The code that refuses: the engine and the server.
SOURCES = [
    *sorted((ROOT / "client_sdk" / "src" / "spades" / "engine").glob("*.py")),
    *sorted((ROOT / "server" / "src" / "spades_server").rglob("*.py")),
]
#: Constructors of a refusal, and how each names its code.
_STATUS_SHORTHANDS = {"not_found", "invalid", "precondition", "unauthenticated", "denied"}
_SHORTHANDS = _STATUS_SHORTHANDS | {"unavailable", "RequestError"}


def documented_rows() -> dict[str, tuple[str, str, str]]:
    """docs/errors.md's table: code -> (status, when, example)."""
    rows = {}
    for line in DOC.read_text().splitlines():
        match = re.fullmatch(r"\| `([A-Z_]+)` \| `([A-Z_]+)` \| (.+?) \| (.+?) \|", line)
        if match:
            code, status, when, example = match.groups()
            assert code not in rows, f"{code} is in docs/errors.md twice"
            rows[code] = (status, when, example)
    return rows


def test_the_docs_table_is_the_catalogue() -> None:
    rows = documented_rows()
    assert set(rows) == CODES, (
        f"missing from docs/errors.md: {sorted(CODES - set(rows))}; "
        f"not in spades.reasons: {sorted(set(rows) - CODES)}"
    )
    for reason in Reason:
        status, when, example = rows[reason]
        assert (status, when) == (reason.status, reason.when), reason
        assert example.strip(), reason


def test_every_code_is_its_name_with_a_real_status() -> None:
    for reason in Reason:
        assert reason.value == reason.name
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", reason.name)
        assert reason.status in grpc.StatusCode.__members__, reason
        assert reason.status != "OK" and reason.when, reason
    assert Reason.of("MUST_FOLLOW_SUIT") is Reason.MUST_FOLLOW_SUIT
    assert Reason.of("NO_SUCH_CODE") is None
    assert DOMAIN == "spades.v1"


def _code_argument(call: ast.Call) -> ast.expr | None:
    """The expression a refusal's code is given by, or None when it is given none."""
    for keyword in call.keywords:
        if keyword.arg in ("reason_code", "code"):
            return keyword.value
    return None


def _names(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def refusal_sites() -> list[tuple[str, int, str, ast.expr | None]]:
    """(file, line, constructor, code expression) for every refusal made in the engine and the
    server: IllegalAction(...), InvalidRules(...), errors.refuse(...), RequestError(...), the
    status shorthands and LimitExceeded(...)."""
    sites = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _names(node.func)
            where = str(path.relative_to(ROOT))
            errors_call = (
                isinstance(node.func, ast.Attribute) and _names(node.func.value) == "errors"
            )
            if (name == "IllegalAction" or (name == "refuse" and errors_call)) and (
                node.args or node.keywords
            ):
                first = node.args[0] if node.args else _code_argument(node)
                sites.append((where, node.lineno, name, first))
            elif name == "InvalidRules":
                code = node.args[2] if len(node.args) > 2 else _code_argument(node)
                sites.append((where, node.lineno, name, code or ast.Constant("INVALID_RULES")))
            elif name == "LimitExceeded":
                code = _code_argument(node)
                sites.append((where, node.lineno, name, code or ast.Constant("RATE_LIMITED")))
            elif name in _SHORTHANDS and isinstance(node.func, ast.Attribute | ast.Name):
                if name != "RequestError" and not errors_call:
                    continue
                sites.append((where, node.lineno, name, _code_argument(node)))
    return sites


def _literal_code(expression: ast.expr) -> str | None:
    """The code an expression names outright (Reason.X or "X"), None for a passed-on value."""
    if isinstance(expression, ast.Attribute) and _names(expression.value) == "Reason":
        return expression.attr
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return expression.value
    return None


def test_every_refusal_the_engine_and_the_server_make_has_a_catalogued_code() -> None:
    sites = refusal_sites()
    assert len(sites) > 80  # the scan sees the refusals (the engine's and the server's)
    for where, line, name, code in sites:
        if where.endswith(("spades_server/domain/errors.py", "engine/errors.py")):
            continue  # the constructors themselves
        assert code is not None, f"{where}:{line}: {name}(...) without a reason code"
        literal = _literal_code(code)
        if literal is None:
            # Passed on from an error that carries one (error.code, error.reason_code).
            assert isinstance(code, ast.Attribute) and code.attr in ("code", "reason_code"), (
                f"{where}:{line}: {ast.unparse(code)} is not a reason code"
            )
            continue
        assert literal in CODES, f"{where}:{line}: {literal} is not in spades.reasons"


def test_a_refusal_carries_its_code_status_field_and_delay_as_a_google_rpc_status() -> None:
    from google.rpc import error_details_pb2

    error = errors.refuse(
        Reason.RATE_LIMITED, "slow down", field="action_id", retry_delay=0.2501, metadata={"a": "b"}
    )
    status = errors.status_of(error)
    assert (status.code, status.message) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED.value[0],
        "slow down",
    )
    info, bad, retry = (
        error_details_pb2.ErrorInfo(),
        error_details_pb2.BadRequest(),
        error_details_pb2.RetryInfo(),
    )
    assert [
        detail.Unpack(each) for detail, each in zip(status.details, (info, bad, retry), strict=True)
    ] == [
        True,
        True,
        True,
    ]
    assert (info.reason, info.domain, dict(info.metadata)) == ("RATE_LIMITED", DOMAIN, {"a": "b"})
    assert [(v.field, v.description) for v in bad.field_violations] == [("action_id", "slow down")]
    assert retry.retry_delay.ToMilliseconds() == 251  # rounded up, never shorter


# -- documented maximum lengths ----------------------------------------------------------------

PROTOS = ROOT / "protos" / "spades" / "v1"
REQUESTS = [
    message
    for module in (
        lobby_pb2,
        play_pb2,
        admin_pb2,
        challenge_pb2,
        account_pb2,
        tournament_pb2,
        rating_pb2,
    )
    for message in module.DESCRIPTOR.message_types_by_name.values()
    if message.name.endswith("Request")
]


def _text_fields(message: Descriptor, seen: set[str]) -> list[tuple[Descriptor, FieldDescriptor]]:
    """Every string and bytes field of ``message`` and the messages it holds."""
    if message.full_name in seen or not message.full_name.startswith("spades.v1."):
        return []
    seen.add(message.full_name)
    found = []
    for field in message.fields:
        if field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            found.append((message, field))
        elif field.message_type is not None:
            found += _text_fields(field.message_type, seen)
    return found


def field_comments() -> dict[tuple[str, str], str]:
    """(message name, field name) -> the comment above the field, from protos/spades/v1."""
    comments = {}
    for path in PROTOS.glob("*.proto"):
        message = ""
        comment: list[str] = []
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if started := re.match(r"message (\w+) \{", stripped):
                message, comment = started.group(1), []
            elif stripped.startswith("//"):
                comment.append(stripped[2:].strip())
            elif field := re.match(r"(?:repeated )?(?:string|bytes) (\w+) = \d+;", stripped):
                comments[(message, field.group(1))] = " ".join(comment)
                comment = []
            else:
                comment = []
    return comments


def test_every_request_string_documents_the_maximum_length_the_server_checks() -> None:
    comments = field_comments()
    seen: set[str] = set()
    fields = [pair for request in REQUESTS for pair in _text_fields(request, seen)]
    assert len(fields) >= 15
    for message, field in fields:
        comment = comments.get((message.name, field.name), "")
        unit = "characters" if field.type == FieldDescriptor.TYPE_STRING else "bytes"
        documented = re.search(rf"at most (\d+) {unit}", comment)
        assert documented, f"{message.name}.{field.name}: say 'at most N {unit}' in its comment"
        assert int(documented.group(1)) == checks.max_length(field.name), (
            f"{message.name}.{field.name}: the comment says {documented.group(1)}, "
            f"the server checks {checks.max_length(field.name)}"
        )


def _set_text(request: Any, field: FieldDescriptor, value: object) -> None:
    """Set a text field (a repeated one, a list of ids: to that one item)."""
    if field.is_repeated:
        del getattr(request, field.name)[:]
        getattr(request, field.name).append(value)
    else:
        setattr(request, field.name, value)


@pytest.mark.parametrize("request_type", REQUESTS, ids=[r.name for r in REQUESTS])
def test_an_over_long_field_is_refused_without_echoing_it(request_type: Descriptor) -> None:
    from google.protobuf import message_factory

    message_class = message_factory.GetMessageClass(request_type)
    for field in request_type.fields:
        if field.type not in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            continue
        limit = checks.max_length(field.name)
        filler = "é" if field.type == FieldDescriptor.TYPE_STRING else b"\x01"
        request = message_class()
        _set_text(request, field, filler * limit)
        checks.check_lengths(request)  # at the limit: accepted
        _set_text(request, field, filler * 30_000)
        with pytest.raises(errors.RequestError) as refused:
            checks.check_lengths(request)
        error = refused.value
        assert (error.code, error.reason_code, error.field) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "FIELD_TOO_LONG",
            field.name,
        )
        assert len(error.reason) < 120 and "éé" not in error.reason
        assert len(errors.status_of(error).SerializeToString()) < 400
