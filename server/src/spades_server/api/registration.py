"""Every service is registered on the server from its descriptor, by one function.

The generated ``add_<Service>Servicer_to_server`` functions list each method by hand and
serialise every response as a message; ours read the service's methods (name, streaming,
request and response types) from the ``.proto``'s descriptor, so a method added to a proto is
served as soon as its servicer has it, and a stream's response may be ``bytes`` already
serialised (:mod:`spades_server.streams.frames`: each event serialised once for every stream
that shows it), written as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from spades_server.streams import frames

_HANDLER_FACTORIES: dict[tuple[bool, bool], Callable[..., grpc.RpcMethodHandler[Any, Any]]] = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def handler_of(servicer: object, method: MethodDescriptor) -> grpc.RpcMethodHandler[Any, Any]:
    """The handler of one method: the servicer's method of the same name, the request read as
    the method's input type, the response written as its output type (or as bytes given)."""
    request = message_factory.GetMessageClass(method.input_type)
    response = message_factory.GetMessageClass(method.output_type)
    factory = _HANDLER_FACTORIES[(method.client_streaming, method.server_streaming)]
    return factory(
        getattr(servicer, method.name),
        request_deserializer=request.FromString,
        response_serializer=frames.serializer(response),
    )


def register(servicer: object, service: ServiceDescriptor, server: grpc.aio.Server) -> None:
    """Serve every method of ``service`` with ``servicer``'s method of the same name."""
    handlers: dict[str, Any] = {
        method.name: handler_of(servicer, method) for method in service.methods
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    server.add_registered_method_handlers(service.full_name, handlers)  # type: ignore[attr-defined]
