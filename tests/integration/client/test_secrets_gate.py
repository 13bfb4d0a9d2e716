"""The one redaction end to end, against a server on 127.0.0.1: a secret the client holds,
sent back by the server anywhere (a message, a value, a record key, a long text cut for
display), never reaches an exception message, a log line or a result, whole or in part; and
no traceback's locals show a credential."""

from __future__ import annotations

import json
import logging
import socket
import traceback
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import export_cohort_to_parquet
from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

PLAN = [{"id": "score", "dataType": "number"}, {"id": "name", "dataType": "string"}]
ONCE = ExportSettings(attempts=1, retry_delay=0.0)
SECRETS = st.builds(
    # a digit last, as in issued keys: a tail of plain letters (``tok-schema``) would be
    # "shown" by any log line naming the API path /uba/api/schema/..., which is no leak
    lambda kind, tail, last: f"{kind}-{tail}{last}",
    st.sampled_from(["tok", "app"]),
    st.text("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789", min_size=6, max_size=40),
    st.sampled_from("23456789"),
)
FILLER = st.text("_ ~!.,;", max_size=120)


class ScriptedExport:
    """One export server for the whole test, sending the body the current example sets."""

    def __init__(self) -> None:
        self.body = b""
        self.server = ExportServer(plan=PLAN, count=1, write=lambda out: out.write(self.body))


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedExport]:
    script = ScriptedExport()
    with script.server:
        yield script


def shown(secret: str, *texts: str) -> list[str]:
    """Every text that shows ``secret`` or a piece of it (its first or last 5 characters or
    more, the shortest piece masked)."""
    pieces = {secret[:size] for size in range(5, len(secret) + 1)}
    pieces |= {secret[-size:] for size in range(5, len(secret) + 1)}
    return [text for text in texts if any(piece in text for piece in pieces)]


def export(script: ScriptedExport, token: str, app_key: str, tmp_path: Path) -> Any:
    config = ClientConfig(script.server.base_url, token=token, app_key=app_key)
    with AnalyticsClient(config) as client:
        return export_cohort_to_parquet(client, "c1", tmp_path / "users.parquet", settings=ONCE)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    token=SECRETS,
    app_key=SECRETS,
    which=st.sampled_from(["token", "app_key"]),
    before=FILLER,
    after=FILLER,
    where=st.sampled_from(["error object msg", "error object data", "value", "key"]),
)
def test_a_secret_sent_back_anywhere_is_never_shown(
    scripted: ScriptedExport,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    token: str,
    app_key: str,
    which: str,
    before: str,
    after: str,
    where: str,
) -> None:
    """Property over the class: whatever the secret, wherever the server puts it and whatever
    surrounds it (so that a cut for display falls anywhere in it), it is masked whole."""
    redaction.forget()
    secret = token if which == "token" else app_key
    echoed = f"{before}{secret}{after}"
    record: dict[str, Any] = {"score": 1, "name": "u"}
    if where == "error object msg":
        record = {"code": 500, "msg": f"invalid token {echoed}", "data": None}
    elif where == "error object data":
        record = {"code": 500, "msg": "invalid", "data": {echoed: [echoed]}}
    elif where == "value":
        record["score"] = echoed
    else:
        record[echoed] = 1
    scripted.body = json.dumps(record).encode() + b"\n"
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        try:
            result = export(scripted, token, app_key, tmp_path).as_dict()
        except AnalyticsError as error:
            assert where != "key"
            texts = [str(error), repr(error), json.dumps([error.msg, error.data], default=str)]
        else:
            assert where == "key"
            texts = [json.dumps(result)]
            assert result["unexpected_keys"]
    texts.append(caplog.text)
    assert shown(secret, *texts) == []


def test_a_tracebacks_locals_show_no_credential() -> None:
    """Under ``pytest -l``, Sentry or a debugger the request object showed
    ``headers={'token': …, 'appKey': …}`` in clear."""
    token, app_key = "tok-Locals-7Qx2Vb9", "app-Locals-3Kd8Wn1"
    with socket.socket() as unused:  # a port nothing listens on: the call fails in transport
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    config = ClientConfig(f"http://127.0.0.1:{port}", token=token, app_key=app_key, max_attempts=1)
    with AnalyticsClient(config) as client, pytest.raises(AnalyticsError) as caught:
        client.list_user_properties()
    shown = traceback.TracebackException.from_exception(caught.value, capture_locals=True)
    frames = [frame for frame in shown.stack if "airflow_provider_analytics" in frame.filename]
    shown_locals = json.dumps([frame.locals for frame in frames])
    # the transport's frames are among them, with what they send: its credentials masked
    assert any(frame.filename.endswith("client/session.py") for frame in frames)
    assert token not in shown_locals and app_key not in shown_locals
    assert repr(config.token) == "'***'" and config.token == token


def test_the_sample_fragments_of_the_issue_are_masked(
    scripted: ScriptedExport, tmp_path: Path
) -> None:
    """Values were cut to length before masking, leaving ``…tok-W4-secret-9f...``."""
    token, app_key = "tok-W4-secret-9f3a8c2d", "app-W4-secret-77e1b0"
    scripted.body = json.dumps({"score": "x" * 40 + token, "name": "u"}).encode() + b"\n"
    with pytest.raises(AnalyticsError) as refused:
        export(scripted, token, app_key, tmp_path)
    assert shown(token, str(refused.value)) == []
    assert "***" in str(refused.value)
