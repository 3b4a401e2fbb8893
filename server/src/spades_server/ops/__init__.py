"""Operations: the settings the service runs with, metrics, structured logs, the log's health,
the clock, and stopping background tasks.

May import: ``domain``, ``eventlog`` (its interface).
"""
