"""The hold-off the shards of one plan share through their staging folder: what an answer's
``Retry-After`` publishes, what a process takes from the record (once, bounded, at most once a
refresh interval), the records refused by name, and the throttle that carries an answer's
hold-off to it and takes in what it holds. (Two processes over real HTTP: the integration
tests.)"""

from __future__ import annotations

import json
import math
import threading
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.client.throttle import PlatformThrottle, throttle_for
from airflow_provider_analytics.core.errors import ShardStagingError
from airflow_provider_analytics.export.shard_hold import (
    HOLD_FILE,
    RECORD_BYTES_MAX,
    REFRESH_SECONDS,
    SharedHold,
)
from airflow_provider_analytics.output.storage import write_bytes_atomically

if TYPE_CHECKING:
    from pathlib import Path

    import requests_mock as rm

WALL = 1_700_000_000.0
BASE = "https://analytics.example.com"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Scene:
    """A staging folder on local disk, one process' view of its hold record, and the
    process' throttle, with clocks the test moves."""

    def __init__(self, folder: Path, retry_after_max: float = 120.0) -> None:
        self.folder = folder
        self.wall = Clock(WALL)
        self.monotonic = Clock(50.0)
        self.throttle = PlatformThrottle(clock=self.monotonic)
        self.hold = self.view(retry_after_max)

    def view(self, retry_after_max: float = 120.0) -> SharedHold:
        """Another process' view of the same record."""
        return SharedHold(
            ObjectStoragePath(self.folder.as_uri() + "/") / HOLD_FILE,
            retry_after_max=retry_after_max,
            wall=self.wall,
            clock=self.monotonic,
        )

    def advance(self, seconds: float) -> None:
        self.wall.now += seconds
        self.monotonic.now += seconds

    def observe(self) -> float | None:
        """Let the throttle take in the record, as every call's turn does while a reader shares
        it; returns the seconds the record newly asked for, or ``None``."""
        seen: list[float | None] = []
        hold = self.hold

        class Watched:
            def publish(self, seconds: float, status: int, who: str) -> None:
                hold.publish(seconds, status, who)

            def observe(self) -> float | None:
                seen.append(hold.observe())
                return seen[-1]

        with self.throttle.sharing(Watched(), "reader"):
            self.throttle.pending(-math.inf)
        return seen[0]

    def held(self) -> float | None:
        """Seconds the throttle still holds every call, or ``None``."""
        pending = self.throttle.pending(-math.inf)
        return None if pending is None else pending[1]

    def write(self, record: Any) -> None:
        text = record if isinstance(record, str) else json.dumps(record)
        (self.folder / HOLD_FILE).write_text(text)

    def record(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.folder / HOLD_FILE).read_text())
        return loaded


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


def test_a_published_hold_is_written_and_held_by_the_other_processes(scene: Scene) -> None:
    scene.hold.publish(30.0, 429, "shard 3")
    record = scene.record()
    assert record["until"] == WALL + 30.0 and record["status"] == 429
    assert record["set_by"].startswith("shard 3 (pid ")
    assert scene.observe() is None  # the publisher's throttle holds already

    other = Scene(scene.folder)
    other.advance(0.5)
    assert other.observe() == pytest.approx(29.5)
    assert other.held() == pytest.approx(29.5)
    other.advance(REFRESH_SECONDS)
    assert other.observe() is None  # the same record holds once
    other.advance(29.0)
    assert other.held() is None


def test_an_earlier_end_does_not_replace_a_later_one(scene: Scene) -> None:
    scene.hold.publish(30.0, 429, "shard 1")
    scene.hold.publish(10.0, 503, "shard 2")
    assert scene.record()["until"] == WALL + 30.0
    scene.hold.publish(40.0, 503, "shard 2")
    assert scene.record()["until"] == WALL + 40.0 and scene.record()["status"] == 503


def test_the_record_is_read_at_most_once_a_refresh_interval(scene: Scene) -> None:
    assert scene.observe() is None  # no record yet: read, found none
    scene.write({"until": WALL + 20.0, "status": 429, "set_by": "shard 0"})
    scene.advance(REFRESH_SECONDS / 2)
    assert scene.observe() is None  # the last read is still fresh
    scene.advance(REFRESH_SECONDS / 2)
    assert scene.observe() == pytest.approx(20.0 - REFRESH_SECONDS)


def test_a_record_from_the_past_holds_nothing(scene: Scene) -> None:
    scene.write({"until": WALL - 5, "status": 503, "set_by": "shard 0"})
    assert scene.observe() is None
    assert scene.held() is None


def test_a_far_future_record_holds_once_and_at_most_retry_after_max(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scene = Scene(tmp_path, retry_after_max=2.0)
    scene.write({"until": WALL + 10_000_000, "status": 429, "set_by": "shard 0"})
    assert scene.observe() == 2.0
    assert scene.held() == 2.0
    assert "more than retry_after_max" in caplog.text
    for _ in range(5):  # the record stays; it holds no more
        scene.advance(REFRESH_SECONDS)
        assert scene.observe() is None
    assert scene.held() is None
    # a fresh 429 is still shared: the far-future record does not stand in for it
    scene.hold.publish(1.5, 429, "shard 4")
    assert scene.record()["until"] == scene.wall.now + 1.5


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"until": "soon", "status": 429, "set_by": "x"}', "until: Input should be a valid"),
        ('{"until": 1e400, "status": 429, "set_by": "x"}', "1e400 is beyond a double's range"),
        ('{"until": -1, "status": 429, "set_by": "x"}', "until: Input should be greater"),
        ('{"until": 5, "status": 500, "set_by": "x"}', "status: Input should be 429 or 503"),
        ('{"until": 5, "status": "429", "set_by": "x"}', "status: Input should be 429 or 503"),
        ('{"until": 5, "set_by": "x"}', "status: Field required"),
        ('{"until": 5, "status": 429, "set_by": "x", "by": 1}', "by: Extra inputs"),
        ("[1, 2]", "the record: Input should be"),
        ("until=5", "is not valid JSON"),
        ('{"set_by": "' + "x" * RECORD_BYTES_MAX + '"}', f"longer than {RECORD_BYTES_MAX}"),
        ('{"until": 5, "status": 429, "set_by": "x\\nINFO forged"}', "set_by: String should"),
        ('{"until": 5, "status": 429, "set_by": "x\\u2028INFO forged"}', "set_by: String should"),
        ('{"until": 5, "status": 429, "set_by": "x\\u0085INFO forged"}', "set_by: String should"),
        (
            '{"until": 5, "until": 9, "status": 429, "set_by": "x"}',
            "the key 'until' is given twice",
        ),
    ],
    ids=[
        "until a string",
        "until infinite",
        "until negative",
        "another status",
        "status a string",
        "no status",
        "an extra field",
        "not an object",
        "not JSON",
        "too long",
        "a line break in set_by (a forged log line)",
        "a line separator in set_by",
        "a C1 next-line in set_by",
        "a repeated key (the last would win)",
    ],
)
def test_a_record_of_another_shape_is_refused_by_name(scene: Scene, text: str, says: str) -> None:
    scene.write(text)
    with pytest.raises(ShardStagingError, match="not a hold record") as caught:
        scene.observe()
    assert says in str(caught.value)
    assert HOLD_FILE in str(caught.value)
    assert scene.held() is None


def test_a_record_that_cannot_be_written_is_logged_and_the_call_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "staging").write_text("a file where the folder should be")
    scene = Scene(tmp_path / "staging")
    scene.hold.publish(5.0, 429, "shard 0")
    assert "could not share the platform's hold-off" in caplog.text


def test_only_the_publishing_threads_answers_are_published(scene: Scene) -> None:
    with scene.throttle.sharing(scene.hold, "shard 7"):
        answered = {"status": 429}
        other = threading.Thread(target=scene.throttle.hold_off, args=(9.0,), kwargs=answered)
        other.start()
        other.join()
        assert not (scene.folder / HOLD_FILE).exists()  # another thread's call
        scene.throttle.hold_off(8.0)
        assert not (scene.folder / HOLD_FILE).exists()  # a hold passed on, not an answer
        scene.throttle.hold_off(7.0, status=503)
    assert scene.record()["set_by"].startswith("shard 7 ")
    assert scene.record()["until"] == WALL + 7.0
    scene.throttle.hold_off(60.0, status=429)  # after the block: nobody listens
    assert scene.record()["until"] == WALL + 7.0


def test_the_throttle_publishes_an_answers_hold_off_while_a_record_is_shared(
    requests_mock: rm.Mocker,
) -> None:
    events = BASE + "/uba/api/schema/event"
    requests_mock.get(
        events,
        [
            {"status_code": 429, "headers": {"Retry-After": "7"}},
            {"status_code": 503, "headers": {"Retry-After": "500"}},
            {"json": []},
            {"status_code": 429, "headers": {"Retry-After": "3"}},
            {"json": []},
        ],
    )
    heard: list[tuple[float, int, str]] = []

    class Record:
        def publish(self, seconds: float, status: int, who: str) -> None:
            heard.append((seconds, status, who))

        def observe(self) -> float | None:
            return None

    config = ClientConfig(BASE, token="tok", app_key="app", retry_after_max=60.0)
    api = AnalyticsClient(config, sleep=lambda _: None)
    with throttle_for(BASE).sharing(Record(), "shard 2"):
        assert api.list_events() == []
    assert heard == [(7.0, 429, "shard 2"), (60.0, 503, "shard 2")]  # bounded, as honoured
    assert api.list_events() == []  # no record shared any more
    assert len(heard) == 2


@pytest.mark.integration
def test_a_hold_written_by_another_process_is_seen_on_s3() -> None:
    """Each view has a file system of its own, as two processes do; the reader has listed the
    staging folder before the hold is written (its file system remembers the listing), and
    still sees it."""
    from upath import UPath

    from tests.moto_s3 import REGION, moto_server

    with moto_server("lake") as endpoint:

        def process_view() -> SharedHold:
            folder = UPath(
                "s3://lake/users.staging/dt=2024-01-15/",
                key="testing",
                secret="testing",
                skip_instance_cache=True,
                client_kwargs={"endpoint_url": endpoint, "region_name": REGION},
            )
            write_bytes_atomically(folder / "part-00001.json", b"{}")
            assert [entry.name for entry in folder.iterdir()] == ["part-00001.json"]
            return SharedHold(folder / HOLD_FILE, retry_after_max=120.0, refresh=0.0)

        writer, reader = process_view(), process_view()
        throttle = PlatformThrottle()
        with throttle.sharing(reader, "shard 1"):
            assert throttle.pending(-math.inf) is None  # no record yet
            writer.publish(30.0, 429, "shard 0")
            held = throttle.pending(-math.inf)
        assert held is not None and 25.0 < held[1] <= 30.0


def test_the_deprecated_listen_still_hears_every_threads_answers() -> None:
    throttle = PlatformThrottle()
    heard: list[tuple[float, int]] = []
    with pytest.warns(DeprecationWarning, match=r"PlatformThrottle\.sharing"):
        stop = throttle.listen(lambda seconds, status: heard.append((seconds, status)))
    other = threading.Thread(target=throttle.hold_off, args=(3.0,), kwargs={"status": 429})
    other.start()
    other.join()
    throttle.hold_off(2.0)  # not an answer's
    stop()
    stop()  # stopping twice is harmless
    throttle.hold_off(5.0, status=503)
    assert heard == [(3.0, 429)]
