"""The store: one generic repository (``repository``, composing the bounded ``cache``, the
``following`` of held aggregates on a shared log and the change ``hub``) loads every aggregate
from the event log, decides on it and appends with the expected version, each aggregate one
``AggregateKind`` (the table's in ``table_store``); the bytes each stream's rows are (the
codecs), first-result claims.

May import: ``domain``, ``eventlog`` (its interface, never a backend), ``ops``.
"""
