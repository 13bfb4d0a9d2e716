"""The settings of cohorts at scale: the proxy cut, the membership change, and how a call's
members follow from them; every refusal names the setting."""

from __future__ import annotations

from typing import Any

import pytest
from analytics_emulator import catalog
from analytics_emulator.cohort_book import CohortBook
from analytics_emulator.cohort_settings import (
    DOCUMENTED_CUT_ROWS,
    GATEWAY_TIMEOUT,
    MID_LINE,
    Membership,
    MembershipChange,
    ProxyCut,
    SettingError,
    key_values,
    membership,
    membership_change_from,
    proxy_cut_from,
)
from analytics_emulator.config import MAX_PAGE_SIZE, EmulatorConfig


def test_the_documented_cut_is_the_default() -> None:
    cut = proxy_cut_from({})
    assert (cut.rows, cut.seconds, cut.ending) == (DOCUMENTED_CUT_ROWS, None, GATEWAY_TIMEOUT)
    assert proxy_cut_from({"ending": 504}).ending == GATEWAY_TIMEOUT
    assert proxy_cut_from({"rows": None, "seconds": 2.5}) == ProxyCut(None, 2.5, GATEWAY_TIMEOUT)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"rows": None}, "proxy_cut"),
        ({"rows": -1}, "proxy_cut.rows"),
        ({"rows": True}, "proxy_cut.rows"),
        ({"rows": 2.5}, "proxy_cut.rows"),
        ({"seconds": 0}, "proxy_cut.seconds"),
        ({"seconds": "ten"}, "proxy_cut.seconds"),
        ({"ending": "hang"}, "proxy_cut.ending"),
        ({"row": 5}, "proxy_cut"),
    ],
)
def test_a_proxy_cut_that_does_not_fit_is_refused_by_name(
    values: dict[str, Any], field: str
) -> None:
    with pytest.raises(SettingError) as refused:
        proxy_cut_from(values)
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({}, "membership_change.after_calls"),
        ({"after_calls": 0}, "membership_change.after_calls"),
        ({"after_calls": 1, "kind": "swap"}, "membership_change.kind"),
        ({"after_calls": 1, "users": 0}, "membership_change.users"),
        ({"after_calls": 1, "times": 0}, "membership_change.times"),
        ({"after_calls": 1, "every": 2}, "membership_change"),
    ],
)
def test_a_membership_change_that_does_not_fit_is_refused_by_name(
    values: dict[str, Any], field: str
) -> None:
    with pytest.raises(SettingError) as refused:
        membership_change_from(values)
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("kind", "calls", "expected"),
    [
        ("shift", 0, Membership(0, 10)),
        ("shift", 2, Membership(0, 10)),
        ("shift", 3, Membership(4, 10)),
        ("shift", 6, Membership(8, 10)),
        ("shift", 99, Membership(8, 10)),  # at most twice
        ("grow", 3, Membership(0, 14)),
        ("grow", 99, Membership(0, 18)),
        ("shrink", 3, Membership(0, 6)),
        ("shrink", 99, Membership(0, 2)),
    ],
)
def test_members_follow_the_change_after_every_k_calls(
    kind: str, calls: int, expected: Membership
) -> None:
    change = MembershipChange(after_calls=3, kind=kind, users=4, times=2)
    assert membership(10, change, calls) == expected


def test_a_cohort_never_shrinks_below_nobody() -> None:
    change = MembershipChange(after_calls=1, kind="shrink", users=7, times=5)
    assert membership(10, change, 5) == Membership(0, 0)


def test_the_book_counts_calls_per_cohort_and_a_reset_restores_it() -> None:
    change = MembershipChange(after_calls=1, users=5)
    book = CohortBook({"a": 10, "b": 3}, {"a": ProxyCut(rows=4)}, {"a": change})
    assert book.call("a").members == Membership(0, 10)
    assert book.call("a").members == Membership(5, 10)
    assert book.call("b").members == Membership(0, 3)
    assert book.call("a").proxy_cut == ProxyCut(rows=4)
    assert book.call("b").proxy_cut is None
    assert book.describe()["a"]["calls"] == 3
    book.define("a", 2, proxy_cut=None, membership_change=None)
    assert (book.call("a").members, book.call("a").proxy_cut) == (Membership(0, 2), None)
    book.reset()
    assert book.describe()["a"] == {
        "size": 10,
        "calls": 0,
        "proxy_cut": ProxyCut(rows=4).public(),
        "membership_change": change.public(),
    }


def test_the_large_catalog_cohorts_have_the_documented_cut_by_default() -> None:
    config = EmulatorConfig()
    assert set(config.cut_cohorts) == set(catalog.LARGE_COHORTS)
    assert all(cut == ProxyCut() for cut in config.cut_cohorts.values())
    assert catalog.COHORTS["cohort_massive"] == 10_000_000
    assert config.max_page_size == MAX_PAGE_SIZE == 10_000
    # a configuration of its own cohorts has no cut unless it asks for one
    assert EmulatorConfig(cohorts={"x": 5}).cut_cohorts == {}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"proxy_cuts": {"nope": ProxyCut()}}, "proxy_cuts: 'nope' is not a served cohort"),
        ({"membership_changes": {"x": {"after_calls": 1}}}, "must be a MembershipChange"),
        ({"max_page_size": 0}, "max_page_size"),
    ],
)
def test_a_config_that_does_not_fit_is_refused_by_name(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        EmulatorConfig(cohorts={"x": 5}, **settings)


def test_command_line_settings_read_numbers_and_null() -> None:
    assert key_values("rows=5,seconds=1.5,ending=mid_line,x=none", "proxy_cut") == {
        "rows": 5,
        "seconds": 1.5,
        "ending": MID_LINE,
        "x": None,
    }
    with pytest.raises(SettingError, match="key=value"):
        key_values("rows", "proxy_cut")
