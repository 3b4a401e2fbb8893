"""Operations: the settings the service runs with, metrics, structured logs, the log's health.

May import: ``domain``, ``eventlog`` (its interface).
"""
