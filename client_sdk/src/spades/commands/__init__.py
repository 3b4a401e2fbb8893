"""The SDK's commands for people at a terminal: ``spades-watch`` (a table told as it is
played), ``spades-tables`` (the lobby) and ``spades-admin`` (the operator's calls)."""
