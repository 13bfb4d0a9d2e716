"""Every Python example of the README and the documentation, run against the emulator.

The examples are read from the Markdown itself (see ``markdown_examples``), so an edit that
breaks one fails here. How they run is described in ``example_runner``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from analytics_emulator.server import EmulatorServer

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from tests.docs.example_runner import REPO, PageRun, redirect
from tests.docs.markdown_examples import examples, fenced_python, table_examples

if TYPE_CHECKING:
    from analytics_emulator.config import EmulatorConfig

pytestmark = pytest.mark.integration

PAGES = sorted(
    str(path.relative_to(REPO))
    for path in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    if examples(path.read_text(encoding="utf-8"))
)
MOST_SKIPPED = 3
"""Examples that cannot run offline are marked and few."""


def test_the_readme_and_the_operator_pages_have_examples() -> None:
    assert "README.md" in PAGES and "docs/quickstart.md" in PAGES
    assert sum(page.startswith("docs/operators/") for page in PAGES) == 11
    table = list(table_examples((REPO / "docs" / "client.md").read_text(encoding="utf-8")))
    assert len(table) == 17  # one per operation of the interface


def test_skipped_examples_are_few_and_say_why() -> None:
    skipped = [
        (page, example)
        for page in PAGES
        for example in examples((REPO / page).read_text(encoding="utf-8"))
        if example.skip_reason is not None
    ]
    assert len(skipped) <= MOST_SKIPPED, skipped
    assert all(example.skip_reason.strip() for _, example in skipped)


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run_against_the_emulator(
    page: str,
    emulator_config: EmulatorConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    with EmulatorServer(emulator_config) as server:
        config = server.config
        monkeypatch.setenv(
            "AIRFLOW_CONN_ANALYTICS_DEFAULT",
            json.dumps(
                {
                    "conn_type": "analytics",
                    "host": server.base_url,
                    "password": config.token,
                    "extra": {
                        "app_api_key": config.app_key,
                        "xtoken": config.xtoken,
                        "timezone": "Asia/Shanghai",
                    },
                }
            ),
        )
        # The Iceberg examples name this catalog connection: a SQL catalog on SQLite.
        monkeypatch.setenv(
            "AIRFLOW_CONN_ANALYTICS_ICEBERG",
            json.dumps(
                {
                    "conn_type": "iceberg",
                    "extra": {
                        "uri": f"sqlite:///{tmp_path / 'catalog.db'}",
                        "warehouse": f"file://{tmp_path / 'warehouse'}",
                    },
                }
            ),
        )
        client_config = ClientConfig(server.base_url, token=config.token, app_key=config.app_key)
        with AnalyticsClient(client_config) as client:
            run = PageRun(page, client, tmp_path / "output")
            to_run = [
                example
                for example in examples((REPO / page).read_text(encoding="utf-8"))
                if example.skip_reason is None
            ]
            for example in to_run:
                run.run(example)
    assert run.ran == [example.line for example in to_run]
    assert all(run.pokes.values()), f"a sensor of {page} found no data: {run.pokes}"
    for task_id, result in run.results.items():
        uri = result.get("uri") if isinstance(result, dict) else None
        if uri is None:
            continue
        if uri.startswith("iceberg://"):  # a table, not an object
            assert result["rows"] > 0, (task_id, result)
            continue
        assert uri.startswith(f"file://{tmp_path}/"), (task_id, uri)
        assert (tmp_path / uri.removeprefix(f"file://{tmp_path}/")).stat().st_size > 0


def test_fenced_blocks_are_found_with_their_line_indentation_and_skip_marker() -> None:
    text = (
        "# Page\n"
        "```python\n"
        "a = 1\n"
        "```\n"
        "- item\n"
        "  <!-- example: skip (needs a real bucket) -->\n"
        "  ```python\n"
        "  if a:\n"
        "      b = 2\n"
        "  ```\n"
        "```bash\n"
        "echo not python\n"
        "```\n"
    )
    first, second = fenced_python(text)
    assert (first.line, first.code, first.skip_reason) == (3, "a = 1\n", None)
    assert (second.line, second.code) == (8, "if a:\n    b = 2\n")
    assert second.skip_reason == "needs a real bucket"


def test_an_unclosed_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="line 2"):
        list(fenced_python("text\n```python\nx = 1\n"))


def test_table_examples_come_from_the_example_column_only() -> None:
    text = (
        "| spec | method | example |\n"
        "|---|---|---|\n"
        "| 4.2 | `get_utm(id)` | `client.get_utm(campaign_id)` |\n"
        "| 4.3 | `other()` | see above |\n"
        "\n"
        "| field | meaning |\n"
        "|---|---|\n"
        "| host | `https://x` |\n"
    )
    (only,) = table_examples(text)
    assert (only.line, only.code) == (3, "client.get_utm(campaign_id)\n")


@pytest.mark.parametrize(
    ("destination", "expected"),
    [
        ("file:///data/analytics/funnel/", "file://{root}/data/analytics/funnel/"),
        ("s3://aws_default@lake/analytics/x/", "file://{root}/s3/lake/analytics/x/"),
        ("file:///elsewhere/x.parquet", "file:///elsewhere/x.parquet"),
        ("file:///home/ana/airflow/out/x/", "file://{root}/airflow_home/out/x/"),
        ("file:///home/ana/airflow-other/x/", "file:///home/ana/airflow-other/x/"),
    ],
)
def test_redirect_moves_shared_disks_the_airflow_home_and_buckets_only(
    destination: str, expected: str, tmp_path: Path
) -> None:
    home = Path("/home/ana/airflow")
    assert redirect(destination, tmp_path, home) == expected.format(root=tmp_path)
