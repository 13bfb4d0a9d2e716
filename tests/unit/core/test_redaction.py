"""The one redaction: secrets the process holds are masked wherever they are shown, before any
cut, and a fragment a cut left beside its mark is masked too."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.core.errors import AnalyticsError, bounded_repr
from airflow_provider_analytics.core.redaction import Redactor, Secret

SECRETS = st.text(
    "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789", min_size=8, max_size=40
)


def pieces(secret: str) -> set[str]:
    return {secret[:n] for n in range(5, len(secret) + 1)} | {
        secret[-n:] for n in range(5, len(secret) + 1)
    }


@given(secret=SECRETS, before=st.integers(0, 120), limit=st.integers(20, 120))
def test_a_secret_cut_anywhere_leaves_no_piece(secret: str, before: int, limit: int) -> None:
    """Property: a text holding a remembered secret, cut anywhere (by an excerpt, by
    ``bounded_repr``, or before it reached the error), shows no piece of it."""
    redaction.forget()
    text = "x" * before + secret + " tail"
    Secret(secret)
    cut_first = text[: limit - 3] + "..." if len(text) > limit else text
    shown = [
        Redactor().excerpt(text, limit),
        bounded_repr({text: [text]}, limit),
        str(AnalyticsError(f"got {cut_first}")),
        Redactor().text(cut_first),
    ]
    assert not [text for text in shown if any(piece in text for piece in pieces(secret))]


def test_a_secret_is_the_value_itself_but_shows_masked() -> None:
    redaction.forget()
    token = Secret("tok-Shown-5k2P")
    assert token == "tok-Shown-5k2P" and f"{token}" == "tok-Shown-5k2P"
    assert repr(token) == "'***'" and repr({"token": token}) == "{'token': '***'}"
    assert Redactor().text("echo tok-Shown-5k2P") == "echo ***"
    redaction.forget()
    assert Redactor().text("echo tok-Shown-5k2P") == "echo tok-Shown-5k2P"


def test_an_error_made_before_the_secret_was_known_masks_it_when_shown() -> None:
    redaction.forget()
    error = AnalyticsError("the platform said: invalid token tok-Later-8Hq3")
    redaction.remember(["tok-Later-8Hq3"])
    assert str(error) == "the platform said: invalid token ***"
    assert "tok-Later" not in repr(error)


SPECIAL = st.text("\\\"'\u00fc\u00df\u00a0\u00ad\n\t/\u2028\U0001f511", max_size=3)


@given(before=SPECIAL, after=SPECIAL, around=SPECIAL)
def test_a_secret_is_masked_however_json_or_repr_spells_it(
    before: str, after: str, around: str
) -> None:
    """A server echoing a request body spells a password as JSON does (``Gr\\u00fc\\u00dfe``), and
    a shape error shows a value through ``repr`` (``'tok\\\\SECRET'``): each spelling is
    masked, whichever quotes and escapes the text around it brings."""
    secret = f"{before}pw-K7Q9Z-{after}"
    redactor = Redactor([secret])
    body = {"note": around, "password": secret, "list": [around, secret]}
    shown = [
        json.dumps(body),
        json.dumps(body, ensure_ascii=False),
        repr(body),
        repr(secret),
        repr(around + secret),
        str(body),
    ]
    for text in shown:
        assert "K7Q9Z" not in redactor.text(text), text
