"""The web port: gRPC-Web for browsers, and the web client's files, with no proxy in front.

Browsers cannot speak gRPC (no HTTP/2 trailers from JavaScript), so they speak gRPC-Web: the
protocol of Envoy's ``grpc_web`` filter, which standard browser clients (grpc-web, Connect's
``createGrpcWebTransport``) use. This module is that filter, inside the server process.

Why a gateway in front of our own gRPC server rather than a second implementation of the
services: every gRPC-Web call is forwarded, as raw bytes, to the server's native gRPC port over a
private Unix socket, so it runs through exactly the same servicers, interceptors (error mapping,
limits), authentication, metrics and logs as a native call; nothing is written twice and nothing
can drift. Libraries that host grpc servicers in an ASGI app (sonora) bypass grpc.aio's
interceptors, and connect-python needs its own generated servicers. The cost is one loopback hop
per message (small beside a log append).

What the gateway does per call (``POST /package.Service/Method``):

* accepts ``application/grpc-web`` (+``proto``) and ``application/grpc-web-text`` (base64);
* forwards the request's headers as gRPC metadata (``authorization``, ``spades-seat-token`` and
  the rest; ``-bin`` headers base64-decoded; hop-by-hop and browser headers dropped), the
  ``grpc-timeout`` header as the deadline, and the browser's address in :data:`WEB_PEER_KEY`,
  which the server trusts only on calls that arrive through the private socket
  (:func:`spades_server.api.auth.peer_of`), so per-address limits see the browser, not the
  gateway;
* answers unary and server-streaming methods (``Watch``; a seat's feed) with data frames as they
  come and a trailer frame with ``grpc-status``, ``grpc-message`` and any other trailing
  metadata (``grpc-status-details-bin`` included); client-streaming methods (``Play``) cannot
  be carried by gRPC-Web and get ``UNIMPLEMENTED`` saying so;
* answers CORS preflights (any origin by default: the service's calls are authenticated by
  tokens in headers, never by cookies) and exposes the gRPC headers to scripts.

``GET /`` and every other path serve the web client's built files (``server/web/dist``) when
they are there, else a short page saying how to build them.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc
import structlog
from aiohttp import web
from google.protobuf import descriptor_pool

from spades.reasons import Reason
from spades_server.api.auth import WEB_PEER_KEY
from spades_server.domain import errors

log = structlog.get_logger("spades.web")

#: The gRPC-Web content types (the ``+proto`` suffix is optional).
_BINARY = "application/grpc-web"
_TEXT = "application/grpc-web-text"
_DATA = 0x00
_TRAILERS = 0x80
#: Request headers that describe the HTTP exchange itself, not the call: never forwarded.
_NOT_METADATA = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "connection",
        "content-length",
        "content-type",
        "cookie",
        "dnt",
        "grpc-timeout",
        "host",
        "keep-alive",
        "origin",
        "pragma",
        "priority",
        "referer",
        "te",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-grpc-web",
        "x-user-agent",
        WEB_PEER_KEY,
    }
)
_CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, GET, OPTIONS",
    "Access-Control-Expose-Headers": "grpc-status, grpc-message, grpc-status-details-bin",
    "Access-Control-Max-Age": "600",
}
_NOT_BUILT = """<!doctype html>
<html lang="en"><meta charset="utf-8"><title>Spades</title>
<body><h1>Spades</h1>
<p>The web client is not built. <code>make web</code> builds it into <code>server/web/dist</code>;
this port already serves gRPC-Web for every service.</p></body></html>
"""
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def frame(flag: int, payload: bytes) -> bytes:
    """One gRPC-Web frame: a flag byte, a big-endian 32-bit length, the payload."""
    return struct.pack(">BI", flag, len(payload)) + payload


def unframe(body: bytes) -> list[tuple[int, bytes]]:
    """The frames of a gRPC-Web body; ValueError when it is not a whole number of frames."""
    frames = []
    offset = 0
    while offset < len(body):
        if len(body) - offset < 5:
            raise ValueError("a gRPC-Web frame header is cut short")
        flag, length = struct.unpack_from(">BI", body, offset)
        offset += 5
        if len(body) - offset < length:
            raise ValueError("a gRPC-Web frame is shorter than its length says")
        frames.append((flag, body[offset : offset + length]))
        offset += length
    return frames


def trailer_block(
    code: grpc.StatusCode, message: str, metadata: Iterable[tuple[str, str | bytes]] = ()
) -> bytes:
    """The trailers of a call, in HTTP/1 header syntax, as gRPC-Web carries them."""
    lines = [f"grpc-status: {code.value[0]}"]
    if message:
        # Percent-encoded, as gRPC's own grpc-message is, so any text survives one header line.
        lines.append(f"grpc-message: {_percent_encode(message)}")
    for key, value in metadata:
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode()
        lines.append(f"{key}: {value}")
    return ("\r\n".join(lines) + "\r\n").encode()


def _percent_encode(text: str) -> str:
    out = []
    for byte in text.encode():
        if 0x20 <= byte <= 0x7E and byte != 0x25:
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def parse_timeout(value: str) -> float | None:
    """``grpc-timeout`` (for example ``"1500m"``) in seconds; None when absent or malformed."""
    if len(value) < 2 or value[-1] not in _TIMEOUT_UNITS or not value[:-1].isdigit():
        return None
    return int(value[:-1]) * _TIMEOUT_UNITS[value[-1]]


def call_metadata(headers: Any, peer: str) -> list[tuple[str, str | bytes]]:
    """The request's headers as gRPC metadata, plus the browser's address."""
    metadata: list[tuple[str, str | bytes]] = []
    for key, value in headers.items():
        name = key.lower()
        if name in _NOT_METADATA or name.startswith(("sec-", "access-control-", ":")):
            continue
        if name.endswith("-bin"):
            with contextlib.suppress(binascii.Error, ValueError):
                metadata.append((name, base64.b64decode(value + "=" * (-len(value) % 4))))
            continue
        metadata.append((name, value))
    metadata.append((WEB_PEER_KEY, peer))
    return metadata


def _method_kind(path: str) -> tuple[bool, bool] | None:
    """(client streaming, server streaming) of ``/package.Service/Method``; None if unknown."""
    service, _, method = path.lstrip("/").partition("/")
    try:
        found = descriptor_pool.Default().FindMethodByName(f"{service}.{method}")
    except KeyError:
        return None
    return found.client_streaming, found.server_streaming


def _client_peer(request: web.Request) -> str:
    """The browser's address in ``context.peer()`` form (``ipv4:1.2.3.4:5678``)."""
    peername = request.transport.get_extra_info("peername") if request.transport else None
    if not peername:
        return "unknown"
    host, port = peername[0], peername[1]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class Gateway:
    """gRPC-Web on an HTTP port, forwarded to the server's own gRPC port at ``target``."""

    def __init__(self, target: str, static_dir: Path | None = None) -> None:
        self._target = target
        self._static_dir = static_dir
        self._channel: grpc.aio.Channel | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    def application(self) -> web.Application:
        app = web.Application(client_max_size=1 << 20)
        app.router.add_route("OPTIONS", "/{tail:.*}", self._preflight)
        app.router.add_post("/{service}/{method}", self._call)
        app.router.add_get("/{tail:.*}", self._static)
        return app

    async def start(self, listen: str) -> int:
        """Serve on ``listen`` (``HOST:PORT``, port 0 for any); returns the bound port."""
        host, _, port = listen.rpartition(":")
        self._channel = grpc.aio.insecure_channel(self._target)
        # handler_cancellation: a browser that goes away cancels its call's handler, and with
        # it the forwarded call (a Watch must not keep streaming to nobody).
        self._runner = web.AppRunner(self.application(), handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host.strip("[]") or "127.0.0.1", int(port))
        await site.start()
        # The bound port (port 0 asks for any): aiohttp keeps the listening sockets here.
        server: Any = site._server
        sockets = server.sockets if server is not None else ()
        self.port = sockets[0].getsockname()[1] if sockets else int(port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._channel is not None:
            await self._channel.close(None)

    # -- handlers ----------------------------------------------------------------------------

    async def _preflight(self, request: web.Request) -> web.Response:
        asked = request.headers.get("Access-Control-Request-Headers", "")
        headers = dict(_CORS_HEADERS)
        headers["Access-Control-Allow-Headers"] = asked or "content-type, x-grpc-web"
        return web.Response(status=204, headers=headers)

    async def _static(self, request: web.Request) -> web.StreamResponse:
        root = self._static_dir
        if root is None or not (root / "index.html").is_file():
            return web.Response(text=_NOT_BUILT, content_type="text/html")
        relative = request.match_info["tail"]
        candidate = (root / relative).resolve()
        if relative and candidate.is_file() and candidate.is_relative_to(root.resolve()):
            return web.FileResponse(candidate)
        return web.FileResponse(root / "index.html")  # the app routes the rest itself

    async def _call(self, request: web.Request) -> web.StreamResponse:
        content_type = request.headers.get("Content-Type", "")
        text = content_type.startswith(_TEXT)
        if not (text or content_type.startswith(_BINARY)):
            return web.Response(
                status=415,
                text=f"expected {_BINARY} or {_TEXT}, got {content_type or 'no content type'}",
                headers=_CORS_HEADERS,
            )
        path = request.path
        body = await request.read()
        response = web.StreamResponse(
            status=200, headers={**_CORS_HEADERS, "Content-Type": content_type}
        )

        async def send(payload: bytes) -> None:
            await response.write(base64.b64encode(payload) if text else payload)

        try:
            if text:
                body = base64.b64decode(body)
            frames = unframe(body)
        except (ValueError, binascii.Error) as error:
            return await self._finish(
                request, response, send, errors.refuse(Reason.MALFORMED_REQUEST, str(error))
            )
        messages = [payload for flag, payload in frames if flag == _DATA]
        kind = _method_kind(path)
        if kind is not None and kind[0]:
            return await self._finish(
                request,
                response,
                send,
                errors.refuse(
                    Reason.CLIENT_STREAMING_UNSUPPORTED,
                    f"{path} streams from the client, which gRPC-Web cannot carry",
                ),
            )
        if len(messages) != 1:
            return await self._finish(
                request,
                response,
                send,
                errors.refuse(
                    Reason.MALFORMED_REQUEST,
                    f"a gRPC-Web request carries exactly one message, this one {len(messages)}",
                ),
            )
        assert self._channel is not None
        metadata = call_metadata(request.headers, _client_peer(request))
        timeout = parse_timeout(request.headers.get("grpc-timeout", ""))
        server_streaming = kind is not None and kind[1]
        if server_streaming:
            call: Any = self._channel.unary_stream(path, None, None)(
                messages[0], timeout=timeout, metadata=metadata
            )
        else:
            call = self._channel.unary_unary(path, None, None)(
                messages[0], timeout=timeout, metadata=metadata
            )
        try:
            await self._relay(call, server_streaming, response, request, send)
        except (ConnectionResetError, ConnectionError):
            call.cancel()
            raise
        finally:
            if not call.done():
                call.cancel()
        return response

    async def _relay(
        self,
        call: Any,
        server_streaming: bool,
        response: web.StreamResponse,
        request: web.Request,
        send: Any,
    ) -> None:
        try:
            initial = await call.initial_metadata()
        except grpc.aio.AioRpcError:
            initial = None
        for key, value in initial or ():
            if not key.endswith("-bin") and isinstance(value, str):
                response.headers[key] = value
        await response.prepare(request)
        try:
            if server_streaming:
                async for message in call:
                    await send(frame(_DATA, message))
            else:
                await send(frame(_DATA, await call))
        except grpc.aio.AioRpcError:
            pass  # the status goes out in the trailer frame below
        code = await call.code()
        details = await call.details()
        trailing = await call.trailing_metadata()
        await send(frame(_TRAILERS, trailer_block(code, details or "", _pairs(trailing))))
        await response.write_eof()

    async def _finish(
        self,
        request: web.Request,
        response: web.StreamResponse,
        send: Any,
        refusal: errors.RequestError,
    ) -> web.StreamResponse:
        """Answer with no message: just the trailer frame carrying the refusal's status."""
        await response.prepare(request)
        details = (("grpc-status-details-bin", errors.status_of(refusal).SerializeToString()),)
        await send(frame(_TRAILERS, trailer_block(refusal.code, refusal.reason, details)))
        await response.write_eof()
        return response


def _pairs(metadata: Sequence[Any] | None) -> list[tuple[str, str | bytes]]:
    """Trailing metadata to pass on (``grpc-status-details-bin`` included): all but the two
    keys the trailer block writes itself."""
    return [
        (key, value)
        for key, value in (metadata or ())
        if key not in ("grpc-status", "grpc-message")
    ]
