"""How the stack starts and stops its processes: the emulator's command line whatever admin
token was drawn, and a kill that reaches processes which left their parent's group."""

from __future__ import annotations

import contextlib
import os
import signal
import string
import subprocess
import sys
import time

import pytest
from analytics_emulator.__main__ import parse_args
from hypothesis import given
from hypothesis import strategies as st

from devtools.stack import CREDENTIALS, _kill_session, _session_members, emulator_command

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


# A parent that starts a child in a process group of its own (as Airflow's supervisor does with
# each task), prints the child's pid, then waits.
PARENT_WITH_A_REGROUPED_CHILD = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         preexec_fn=lambda: os.setpgid(0, 0))
print(child.pid, flush=True)
time.sleep(600)
"""


def test_killing_a_stack_process_also_kills_what_left_its_group() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT_WITH_A_REGROUPED_CHILD],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert os.getpgid(child) == child != parent.pid  # a group killpg(parent) would miss
        assert set(_session_members(parent.pid)) == {parent.pid, child}
        _kill_session(parent.pid)
        assert parent.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + 30
        while _session_members(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _session_members(parent.pid) == []
    finally:
        for pid in (child, parent.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
