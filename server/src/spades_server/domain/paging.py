"""Pages of a listing: the one reading of ``page_size`` and ``page_token`` for every List call.

A page token is the offset of the page's first item, as this server gave it out.

>>> page(list("abcde"), page_size=2, page_token="2", default_size=50, max_size=100)
(['c', 'd'], '4')
>>> page(list("abcde"), page_size=0, page_token="", default_size=50, max_size=100)
(['a', 'b', 'c', 'd', 'e'], '')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from spades.reasons import Reason
from spades_server.domain import errors

T = TypeVar("T")


def page(
    items: Sequence[T], *, page_size: int, page_token: str, default_size: int, max_size: int
) -> tuple[list[T], str]:
    """The items of the page ``page_token`` names, and the next page's token ("" at the end);
    INVALID_ARGUMENT for a size out of range or a token this server did not give out."""
    offset, size = window(page_size, page_token, default_size, max_size)
    more = offset + size < len(items)
    return list(items[offset : offset + size]), str(offset + size) if more else ""


def window(page_size: int, page_token: str, default_size: int, max_size: int) -> tuple[int, int]:
    """The (offset, size) of the page a request names, for a listing paged from storage;
    INVALID_ARGUMENT as :func:`page`.

    >>> window(0, "100", default_size=50, max_size=100)
    (100, 50)
    """
    size = page_size or default_size
    if not 1 <= size <= max_size:
        raise errors.refuse(
            Reason.INVALID_PAGE_SIZE, f"page_size must be 1 to {max_size}", field="page_size"
        )
    token = page_token or "0"
    if not (token.isascii() and token.isdigit()):
        raise errors.refuse(
            Reason.INVALID_PAGE_TOKEN,
            "page_token is not one this server gave out",
            field="page_token",
        )
    return int(token), size
