"""An analysis for a person: a rich table per hand (each card coloured by the points it lost
double dummy), the bids beside the par, and each seat's and side's totals."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from spades.analysis.report import (
    Analysis,
    HandBids,
    Summary,
    seat_letter,
    side_letters,
)
from spades.analysis.tournament import TournamentAnalysis
from spades.engine import SEAT_NAMES

#: Colours by the points a card lost double dummy: none, a few (bags), a contract's worth.
_NO_LOSS, _SMALL_LOSS, _LARGE_LOSS = "green", "yellow", "bold red"
#: From this many points lost, a mistake is shown as large.
LARGE_LOSS = 10


def loss_style(loss_points: int) -> str:
    if loss_points == 0:
        return _NO_LOSS
    return _SMALL_LOSS if loss_points < LARGE_LOSS else _LARGE_LOSS


def render_analysis(analysis: Analysis) -> RenderableType:
    """Every hand's table, then the totals."""
    parts: list[RenderableType] = []
    for hand in analysis.hands:
        parts.append(_hand_table(analysis, hand))
        parts.append(_bids_line(analysis, hand))
        parts.append(Text(""))
    parts.append(_totals(analysis))
    parts.append(_mistakes(analysis))
    expected = (
        f"Expected loss: the mean over {analysis.worlds} worlds the seat could not tell apart "
        "(± its standard error)."
        if analysis.worlds
        else "Expected loss: none (no world sampled)."
    )
    parts.append(
        Text(f"Double dummy: every hand in view. {expected} See docs/analysis.md.", style="dim")
    )
    return Group(*parts)


def print_analysis(analysis: Analysis, console: Console | None = None) -> None:
    (console or Console()).print(render_analysis(analysis))


def _hand_table(analysis: Analysis, hand: HandBids) -> Table:
    seats = analysis.rules.seating.seats
    table = Table(title=f"Hand {hand.hand}", title_justify="left")
    table.add_column("Trick", justify="right")
    for seat in seats:
        table.add_column(SEAT_NAMES[seat])
    rows: dict[int, dict[int, Text]] = {}
    for play in analysis.hand_plays(hand.hand):
        cell = Text(play.card.symbol, style=loss_style(play.loss_points))
        if play.loss_points:
            cell.append(f" -{play.loss_points}", style=loss_style(play.loss_points))
        if play.worlds and (play.expected_loss_points or 0.0) >= 0.05:
            cell.append(f" ~{play.expected_loss_points:.1f}", style="dim")
        if play.timed_out:
            cell.append(" (clock)", style="dim")
        rows.setdefault(play.trick, {})[play.seat] = cell
    for trick in sorted(rows):
        table.add_row(str(trick), *(rows[trick].get(seat, Text("")) for seat in seats))
    return table


def _bids_line(analysis: Analysis, hand: HandBids) -> Text:
    line = Text("Bids ")
    line.append(
        ", ".join(
            f"{seat_letter(seat)} {'-' if bid is None else bid}"
            for seat, bid in enumerate(hand.bids)
        )
    )
    for index, seats in enumerate(analysis.rules.sides):
        bid = sum(made.tricks for made in (hand.bids[seat] for seat in seats) if made)
        par = None if hand.par is None else hand.par.tricks[index]
        took = sum(hand.tricks_won[seat] for seat in seats)
        line.append(f" · {side_letters(seats)}: bid {bid}, par ")
        line.append("?" if par is None else str(par), style="bold")
        line.append(f", took {took}")
    return line


#: The widest an entrant's name is kept whole in a tournament's tables (a longer one may be
#: cut at a narrow terminal).
NAME_WIDTH = 24


def render_tournament_analysis(analysis: TournamentAnalysis) -> RenderableType:
    """Each entrant's totals over its tables (in the order of the standings), then each
    entrant's costliest mistakes, with their tables."""
    totals = Table(title=f"Tournament {analysis.tournament_id}", title_justify="left")
    # An entrant's name is never cut (the numbers' columns narrow instead), up to NAME_WIDTH.
    names = min(NAME_WIDTH, max((len(entrant.name) for entrant in analysis.entrants), default=0))
    for column in ("#", "Entrant", "Tables", "Plays", "Accuracy", "Points lost", "Per hand"):
        if column == "Entrant":
            totals.add_column(column, justify="left", no_wrap=True, min_width=names)
        else:
            totals.add_column(column, justify="right")
    totals.add_column("Tricks lost", justify="right")
    totals.add_column("Expected loss", justify="right")
    for entrant in analysis.entrants:
        _total_row(totals, entrant.name, entrant.total, (str(entrant.rank),), len(entrant.sides))
    mistakes = Table(title="Costliest mistakes", title_justify="left")
    for column in ("Entrant", "Table", "Hand", "Trick", "Seat", "Played", "Lost", "Best"):
        if column == "Entrant":
            mistakes.add_column(column, no_wrap=True, min_width=names)
        else:
            mistakes.add_column(column, justify="right" if column in ("Hand", "Trick") else "left")
    for entrant in analysis.entrants:
        for mistake in entrant.costliest:
            play = mistake.play
            mistakes.add_row(
                entrant.name,
                mistake.table_id,
                str(play.hand),
                str(play.trick),
                SEAT_NAMES[play.seat],
                play.card.symbol,
                Text(f"-{play.loss_points}", style=loss_style(play.loss_points)),
                " ".join(card.symbol for card in play.best),
            )
    tables = len(analysis.tables)
    note = (
        f"{tables} table{'' if tables == 1 else 's'}; each entrant's side at every table it "
        "played. Double dummy: every hand in view. See docs/analysis.md."
    )
    return Group(totals, mistakes, Text(note, style="dim"))


def print_tournament_analysis(analysis: TournamentAnalysis, console: Console | None = None) -> None:
    (console or Console()).print(render_tournament_analysis(analysis))


def _totals(analysis: Analysis) -> Table:
    table = Table(title="Totals", title_justify="left")
    for column in ("", "Plays", "Accuracy", "Points lost", "Per hand", "Tricks lost"):
        table.add_column(column, justify="left" if not column else "right")
    table.add_column("Expected loss", justify="right")
    rules = analysis.rules
    for seat in rules.seating.seats:
        _total_row(table, SEAT_NAMES[seat], analysis.seat_summary(seat))
    if rules.players == 4:
        table.add_section()
        for index, seats in enumerate(rules.sides):
            _total_row(table, side_letters(seats), analysis.side_summary(index))
    return table


def _total_row(
    table: Table,
    name: str,
    summary: Summary,
    before: tuple[str, ...] = (),
    tables: int | None = None,
) -> None:
    """A summary's row; ``before`` the cells ahead of the name, ``tables`` a count after it."""
    error = "" if summary.expected_loss_se is None else f" ± {summary.expected_loss_se:.1f}"
    expected = _expected(summary.expected_loss_points)
    table.add_row(
        *before,
        name,
        *(() if tables is None else (str(tables),)),
        str(summary.plays),
        f"{summary.accuracy:.0%}",
        str(summary.loss_points),
        f"{summary.loss_points_per_hand:.1f}",
        str(summary.loss_tricks),
        f"{expected}{error}" if summary.expected_loss_points is not None else expected,
    )


def _mistakes(analysis: Analysis) -> Table:
    table = Table(title="Costliest mistakes", title_justify="left")
    for column in ("Seat", "Hand", "Trick", "Played", "Lost", "Expected", "Best"):
        table.add_column(column, justify="left" if column in ("Seat", "Best") else "right")
    for seat in analysis.rules.seating.seats:
        for play in analysis.seat_summary(seat).costliest:
            table.add_row(
                SEAT_NAMES[seat],
                str(play.hand),
                str(play.trick),
                play.card.symbol,
                Text(f"-{play.loss_points}", style=loss_style(play.loss_points)),
                _expected(play.expected_loss_points),
                " ".join(card.symbol for card in play.best),
            )
    return table


def _expected(loss: float | None) -> str:
    """An expected loss as shown: one decimal, or a dash when no world was sampled."""
    return "-" if loss is None else f"{loss:.1f}"
