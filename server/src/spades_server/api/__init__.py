"""The API: gRPC servicers (thin: convert, call one use case, convert back), who may call
(seat tokens, account keys, the operator token), limits, and the web port's gRPC-Web.

May import: ``streams``, ``processes``, ``store``, ``domain``, ``eventlog`` (its interface),
``ops``.
"""
