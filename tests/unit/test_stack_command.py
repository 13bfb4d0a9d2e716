"""The stack starts the emulator with whatever admin token it drew, however that token begins."""

from __future__ import annotations

import string

import pytest
from analytics_emulator.__main__ import parse_args
from hypothesis import given
from hypothesis import strategies as st

from devtools.stack import CREDENTIALS, emulator_command

# the alphabet of secrets.token_urlsafe
URLSAFE = string.ascii_letters + string.digits + "-_"


def parsed(port: int, admin_token: str) -> dict[str, object]:
    command = emulator_command(port, admin_token)
    assert command[1:3] == ["-m", "analytics_emulator"]
    return vars(parse_args(command[3:]))


@pytest.mark.parametrize("admin_token", ["-", "-x", "--admin-token", "--port", "-h", "a b"])
def test_a_token_that_looks_like_an_option_reaches_the_emulator_whole(admin_token: str) -> None:
    args = parsed(41_234, admin_token)
    assert args["admin_token"] == admin_token
    assert args["port"] == 41_234


@given(admin_token=st.text(URLSAFE, min_size=1, max_size=48))
def test_every_urlsafe_token_reaches_the_emulator_whole(admin_token: str) -> None:
    args = parsed(8_080, admin_token)
    assert args["admin_token"] == admin_token
    assert (args["token"], args["app_key"], args["xtoken"]) == (
        CREDENTIALS["token"],
        CREDENTIALS["app_key"],
        CREDENTIALS["xtoken"],
    )
