"""A refused request: a gRPC status code and a reason written for a person."""

from __future__ import annotations

import grpc


class RequestError(Exception):
    """Refuse a request with ``code`` and ``reason``; nothing was written."""

    def __init__(self, code: grpc.StatusCode, reason: str, *, reason_code: str = "") -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        # The stable UPPER_SNAKE code a program acts on (google.rpc.ErrorInfo.reason).
        self.reason_code = reason_code


def not_found(what: str) -> RequestError:
    return RequestError(grpc.StatusCode.NOT_FOUND, what)


def invalid(reason: str) -> RequestError:
    return RequestError(grpc.StatusCode.INVALID_ARGUMENT, reason)


def precondition(reason: str) -> RequestError:
    return RequestError(grpc.StatusCode.FAILED_PRECONDITION, reason)


def unauthenticated(reason: str) -> RequestError:
    return RequestError(grpc.StatusCode.UNAUTHENTICATED, reason)


def denied(reason: str) -> RequestError:
    return RequestError(grpc.StatusCode.PERMISSION_DENIED, reason)


def unavailable(reason: str) -> RequestError:
    return RequestError(grpc.StatusCode.UNAVAILABLE, reason)
