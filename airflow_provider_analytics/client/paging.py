"""The paged cohort listing's rules across pages (spec 4.12, paging from ``API_NOTES.md``).

Each page is checked on its own by its declared answer (the page echoes the one asked, no
more users than the page size or ``count``). :class:`PagedListing` adds what only the
sequence shows, so a server that never stops, or repeats itself, cannot keep a reader busy
or hand it wrong rows:

- the listing stops after ``ceil(wanted / page_size)`` pages, where ``wanted`` is ``count``
  (or ``limit`` when smaller);
- ``count`` is the same on every page;
- no user appears twice (users are told apart by ``distinct_id`` when the records hold it;
  records without it carry no identity to compare);
- no more users arrive than ``wanted``, and no page before the last is short.

Each refusal names the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.client.answers import AnswerShapeError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

_OPERATION = "iter_cohort_user_pages"
_IDENTITY = "distinct_id"


class PagedListing:
    """The state of one paged listing: which page comes next, and what was seen so far.

    :param page_size: users asked per page.
    :param limit: most users asked in all; ``None`` for the whole cohort.
    """

    def __init__(self, *, page_size: int, limit: int | None) -> None:
        self._page_size = page_size
        self._limit = limit
        self._count: int | None = None
        self._read = 0
        self._number = 0
        self._finished = False
        self._first_seen: dict[int | str, int] = {}

    @property
    def wanted(self) -> int | None:
        """Users the listing will read in all; ``None`` until the first page is read."""
        if self._count is None:
            return None
        return self._count if self._limit is None else min(self._limit, self._count)

    def next_page(self) -> int | None:
        """The 1-based number of the page to ask for next; ``None`` when the listing is done."""
        if self._finished:
            return None
        return self._number + 1

    def take(self, page: Mapping[str, Any], secrets: Iterable[str] = ()) -> None:
        """Check one page (already decoded through its declared answer) against the pages
        before it.

        :raises AnswerShapeError: naming the page and what does not hold.
        """
        self._number += 1
        number = self._number
        count = page["count"]
        if self._count is None:
            self._count = count
        elif count != self._count:
            self._refuse(number, f"count is {count}, but page 1 said {self._count}", secrets)
        users = page["users"]
        page_ids: set[int | str] = set()
        for position, user in enumerate(users):
            identity = user.get(_IDENTITY)
            if not isinstance(identity, int | str):
                continue
            first = self._first_seen.setdefault(identity, number)
            if first != number or identity in page_ids:
                self._refuse(
                    number,
                    f"users[{position}] repeats {_IDENTITY} {identity!r} of page {first}",
                    secrets,
                )
            page_ids.add(identity)
        self._read += len(users)
        wanted = self.wanted
        assert wanted is not None
        if self._read > wanted:
            self._refuse(
                number, f"{self._read} users arrived, more than the {wanted} asked", secrets
            )
        last = -(-wanted // self._page_size) if wanted else 1
        if self._read == wanted or number >= last:
            if self._read < wanted:
                self._refuse(
                    number,
                    f"only {self._read} users arrived by the last page, but count promises "
                    f"{wanted}; the cohort may have changed while it was read",
                    secrets,
                )
            self._finished = True
        elif len(users) < self._page_size:
            self._refuse(
                number,
                f"holds {len(users)} users, fewer than the page size {self._page_size}, "
                f"although {wanted - self._read} more are promised by count",
                secrets,
            )

    @staticmethod
    def _refuse(number: int, problem: str, secrets: Iterable[str]) -> None:
        raise AnswerShapeError(
            f"{_OPERATION}: page {number}: {problem}", operation=_OPERATION, secrets=secrets
        )
