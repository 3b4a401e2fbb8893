from collections.abc import Sequence

def context(
    players: int,
    next_seat: Sequence[int],
    maximizing: Sequence[int],
    must_break: bool,
    tricks: int,
    leaf: bytes,
    additive: bool,
    max_entries: int = 0,
) -> object: ...
def check_table(context: object) -> int: ...
def table_counts(context: object) -> dict[str, int]: ...
def solve(
    context: object,
    hands: Sequence[int],
    trick: Sequence[tuple[int, int]],
    leader: int,
    broken: bool,
    wins_index: int,
    root_cards: Sequence[int],
) -> list[int]: ...
