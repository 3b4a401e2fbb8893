"""The domain: pure aggregates (tables, accounts, challenges, tournaments, rating pools), their
folds and decisions, and the refusals they make.

No I/O, no clock read, no network: a decision is a function of an aggregate (and a request) to
what to append, or a refusal. May import: the SDK (``spades``, its engine and messages) and the
server's log messages (``spades_server.v1``); nothing else of the server. ``grpc`` only for the
status code a refusal names (:mod:`spades_server.domain.errors`).
"""
