"""gRPC-Web calls as a browser sends them: a request framed for the server's web port, its
response's messages and trailers read back (binary, or the base64 text variant)."""

from __future__ import annotations

import base64
import re

import aiohttp
from google.rpc import status_pb2

from spades.client import ErrorDetails
from spades_server.api.web import frame, unframe
from spades_server.app.server import SpadesServer

BINARY = "application/grpc-web+proto"
TEXT = "application/grpc-web-text"


def decode_text(body: bytes) -> bytes:
    """A grpc-web-text body: base64 chunks, one per frame, each padded on its own (as a server
    that streams must send them), decoded and joined as browser clients do."""
    chunks = re.findall(rb"[A-Za-z0-9+/]*={0,2}", body)
    return b"".join(base64.b64decode(chunk) for chunk in chunks if chunk)


def parse_response(body: bytes) -> tuple[list[bytes], dict[str, str]]:
    """A gRPC-Web response body: its messages and its trailers."""
    messages: list[bytes] = []
    trailers: dict[str, str] = {}
    for flag, payload in unframe(body):
        if flag & 0x80:
            for line in payload.decode().split("\r\n"):
                if line:
                    key, _, value = line.partition(":")
                    trailers[key.strip()] = value.strip()
        else:
            messages.append(payload)
    return messages, trailers


async def web_call(
    server: SpadesServer,
    method: str,
    request: bytes,
    *,
    content_type: str = BINARY,
    headers: dict[str, str] | None = None,
) -> tuple[int, list[bytes], dict[str, str]]:
    """POST one call (``/package.Service/Method``) to the server's web port: the HTTP status,
    the messages of the response (every one of a stream) and its trailers."""
    body = frame(0, request)
    if content_type.startswith(TEXT):
        body = base64.b64encode(body)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.web_url}{method.lstrip('/')}",
            data=body,
            headers={"Content-Type": content_type, "X-Grpc-Web": "1", **(headers or {})},
        ) as response,
    ):
        raw = await response.read()
        if content_type.startswith(TEXT):
            raw = decode_text(raw)
        messages, trailers = parse_response(raw) if response.status == 200 else ([], {})
        return response.status, messages, trailers


def status_details(trailers: dict[str, str]) -> ErrorDetails:
    """The details of the google.rpc.Status in gRPC-Web trailers (base64, maybe unpadded)."""
    encoded = trailers["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(base64.b64decode(encoded + "=" * (-len(encoded) % 4)))
    assert status.code == int(trailers["grpc-status"])
    return ErrorDetails.from_status(status)
