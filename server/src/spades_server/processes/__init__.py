"""Processes: what reacts to events and to time: the turn clock, absent players, unclaimed
seats, house bots, the challenge flow, the tournament driver, the rating keeper, the lobby's
projection, the analysis workers (finished tables analysed in a pool of worker processes).

Each is driven by the store's changes or by a timer, and acts through the store's decisions,
so any replica may run it and each effect happens once. May import: ``store``, ``domain``,
``eventlog`` (its interface), ``ops``.
"""
