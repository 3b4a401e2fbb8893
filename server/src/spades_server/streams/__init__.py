"""Streams: what each viewer of a table is sent, in order: feeds (snapshot, then every later
event redacted for the viewer) and frames (each event serialised once per class of viewer).

May import: ``processes`` (the clock's deadlines), ``store``, ``domain``, ``ops``.
"""
