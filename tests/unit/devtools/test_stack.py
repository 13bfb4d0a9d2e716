"""How the stack starts and stops its processes: the emulator's command line whatever admin
token was drawn, and stopping that reaches processes which left their parent's group but never
a process the stack did not start."""

from __future__ import annotations

import os
import signal
import string
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from analytics_emulator.__main__ import parse_args
from hypothesis import given
from hypothesis import strategies as st

from devtools import sessions
from devtools.stack import CREDENTIALS, Stack, emulator_command

if TYPE_CHECKING:
    from collections.abc import Iterator

# the alphabet of secrets.token_urlsafe
URLSAFE = string.ascii_letters + string.digits + "-_"
PORT_FILE = Path("stack") / "emulator.port"


def parsed(admin_token: str) -> dict[str, object]:
    command = emulator_command(PORT_FILE, admin_token)
    assert command[1:3] == ["-m", "analytics_emulator"]
    return vars(parse_args(command[3:]))


@pytest.mark.parametrize("admin_token", ["-", "-x", "--admin-token", "--port", "-h", "a b"])
def test_a_token_that_looks_like_an_option_reaches_the_emulator_whole(admin_token: str) -> None:
    args = parsed(admin_token)
    assert args["admin_token"] == admin_token
    assert (args["port"], args["port_file"]) == (0, PORT_FILE)


@given(admin_token=st.text(URLSAFE, min_size=1, max_size=48))
def test_every_urlsafe_token_reaches_the_emulator_whole(admin_token: str) -> None:
    args = parsed(admin_token)
    assert args["admin_token"] == admin_token
    assert (args["token"], args["app_key"], args["xtoken"]) == (
        CREDENTIALS["token"],
        CREDENTIALS["app_key"],
        CREDENTIALS["xtoken"],
    )


# A session leader that starts a child in a process group of its own (as Airflow's supervisor
# does with each task), prints the child's pid, then waits. A signal to the leader's group
# stops the leader and misses the child.
LEADER_WITH_A_REGROUPED_CHILD = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         preexec_fn=lambda: os.setpgid(0, 0))
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture
def leader() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A session leader and its regrouped child, killed at the end if a test left them."""
    process = subprocess.Popen(
        [sys.executable, "-c", LEADER_WITH_A_REGROUPED_CHILD],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    child = int(process.stdout.readline())
    try:
        assert os.getpgid(child) == child != process.pid  # a group a killpg(leader) misses
        assert set(sessions.members(process.pid)) == {process.pid, child}
        yield process, child
    finally:
        sessions.kill(process.pid)  # only what is still in that session
        process.wait(timeout=30)


def test_killing_a_stack_process_kills_what_left_its_group(
    leader: tuple[subprocess.Popen[str], int],
) -> None:
    process, _ = leader
    stack = Stack(processes={"worker-1": process.pid})
    stack.kill("worker-1")
    # the leader's exit status is not looked at: the kill reaps it (it is this process's child)
    assert sessions.members(process.pid) == []


def test_stopping_kills_what_the_signal_to_the_group_missed(
    leader: tuple[subprocess.Popen[str], int],
) -> None:
    process, _ = leader
    assert sessions.stop({"worker-1": process.pid}, signal.SIGTERM, grace=0.5) == ["worker-1"]
    assert sessions.members(process.pid) == []


def test_down_leaves_alone_a_recorded_pid_that_is_now_another_process(
    tmp_path: Path, leader: tuple[subprocess.Popen[str], int]
) -> None:
    process, child = leader
    stack = Stack(root=tmp_path, processes={"worker-1": process.pid})
    stack.identities = {"worker-1": sessions.identity(process.pid).replace(":", ":1", 1)}
    assert stack.down() == []
    assert process.poll() is None
    assert set(sessions.members(process.pid)) == {process.pid, child}


def test_down_stops_a_recorded_process_that_is_still_the_same(
    tmp_path: Path, leader: tuple[subprocess.Popen[str], int]
) -> None:
    process, _ = leader
    stack = Stack(root=tmp_path, processes={"worker-1": process.pid})
    stack.identities = {"worker-1": sessions.identity(process.pid)}
    assert stack.down() == ["worker-1"]
    assert sessions.members(process.pid) == []


def test_a_process_name_that_is_not_utf8_does_not_stop_the_scan() -> None:
    renamed = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ctypes, time; ctypes.CDLL(None).prctl(15, b'py\\xe2\\x82)x', 0, 0, 0); "
            "print(flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert renamed.stdout is not None
        renamed.stdout.readline()
        assert b"\xe2\x82" in Path(f"/proc/{renamed.pid}/stat").read_bytes()
        assert sessions.members(renamed.pid) == [renamed.pid]
    finally:
        sessions.kill(renamed.pid)
        renamed.wait(timeout=30)


def test_the_callers_own_session_is_never_killed() -> None:
    with pytest.raises(ValueError, match="this process's own"):
        sessions.kill(os.getsid(0))
