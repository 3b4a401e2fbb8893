from collections.abc import Sequence

def solve(
    players: int,
    next_seat: Sequence[int],
    maximizing: Sequence[int],
    hands: Sequence[int],
    trick: Sequence[tuple[int, int]],
    leader: int,
    must_break: bool,
    broken: bool,
    tricks_left: int,
    leaf: bytes,
    additive: bool,
    root_cards: Sequence[int],
) -> list[int]: ...
