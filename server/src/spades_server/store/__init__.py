"""The store: aggregates loaded from the event log, decided on and appended with the expected
version; the bytes each stream's rows are (the codecs), first-result claims, the change hub.

May import: ``domain``, ``eventlog`` (its interface, never a backend), ``ops``.
"""
