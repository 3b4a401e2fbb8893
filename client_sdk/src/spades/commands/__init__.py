"""The SDK's commands: ``spades-bot`` (a bot at a table), and for people at a terminal
``spades-watch`` (a table told as it is played), ``spades-tables`` (the lobby),
``spades-admin`` (the operator's calls) and ``spades-play`` (a seat in the terminal). They
connect through the flags of :mod:`spades.commands.common`."""
