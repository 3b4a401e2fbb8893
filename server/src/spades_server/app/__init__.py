"""The application: wiring (the log chosen, the stores, processes and servicers put together),
configuration from flags and the environment, start-up checks, the ``spades-server`` command
and the demos.

May import every layer; nothing imports it.
"""
