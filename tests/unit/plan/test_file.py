"""The tracking plan file: YAML/JSON/dict loading, path resolution, and checking all of it."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.plan.file import (
    DesiredPlan,
    PlannedEvent,
    PlannedProperty,
    TrackingPlanFileError,
    load_tracking_plan,
    parse_tracking_plan,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "example_dags" / "tracking_plan.yaml"

PLAN: dict[str, Any] = {
    "user_properties": [
        {"id": "vip_level", "name": "VIP level", "data_type": "number", "remark": "0 none, 1 gold"},
        {"id": "$city", "name": "City", "dataType": "string"},
    ],
    "events": [
        {
            "id": "purchase",
            "name": "Purchase",
            "properties": [{"id": "amount", "name": "Order amount", "data_type": "number"}],
        },
        {"id": "share"},
    ],
}

EXPECTED = DesiredPlan(
    user_properties=(
        PlannedProperty(
            "vip_level", "number", "user_properties[0]", name="VIP level", remark="0 none, 1 gold"
        ),
        PlannedProperty("$city", "string", "user_properties[1]", name="City"),
    ),
    events=(
        PlannedEvent(
            "purchase",
            "events[0]",
            name="Purchase",
            properties=(
                PlannedProperty("amount", "number", "events[0].properties[0]", name="Order amount"),
            ),
        ),
        PlannedEvent("share", "events[1]"),
    ),
)

YAML_TEXT = """\
user_properties:
  - {id: vip_level, name: VIP level, data_type: number, remark: "0 none, 1 gold"}
  - {id: $city, name: City, dataType: string}
events:
  - id: purchase
    name: Purchase
    properties:
      - {id: amount, name: Order amount, data_type: number}
  - id: share
"""


def problems_of(data: Any) -> list[str]:
    with pytest.raises(TrackingPlanFileError) as caught:
        parse_tracking_plan(data)
    return caught.value.problems


def test_yaml_json_and_dict_give_the_same_plan(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(YAML_TEXT, encoding="utf-8")
    (tmp_path / "plan.json").write_text(json.dumps(PLAN), encoding="utf-8")
    assert load_tracking_plan(tmp_path / "plan.yaml") == EXPECTED
    assert load_tracking_plan(str(tmp_path / "plan.json")) == EXPECTED
    assert load_tracking_plan(PLAN) == EXPECTED


def test_declared_fields_use_the_platform_names_and_leave_out_what_is_not_declared() -> None:
    prop, city = EXPECTED.user_properties
    assert prop.declared() == {
        "name": "VIP level",
        "remark": "0 none, 1 gold",
        "dataType": "number",
    }
    assert city.declared() == {"name": "City", "dataType": "string"}
    assert EXPECTED.events[1].declared() == {}


def test_an_empty_remark_is_declared_and_an_absent_one_is_not() -> None:
    plan = parse_tracking_plan({"events": [{"id": "share", "remark": ""}, {"id": "search"}]})
    assert plan.events[0].declared() == {"remark": ""}
    assert plan.events[1].declared() == {}


def test_a_relative_path_starts_at_the_given_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "plan.yaml").write_text(YAML_TEXT, encoding="utf-8")
    assert load_tracking_plan("plans/plan.yaml", base_dir=tmp_path) == EXPECTED
    absolute = tmp_path / "elsewhere.yaml"
    absolute.write_text(YAML_TEXT, encoding="utf-8")
    assert load_tracking_plan(absolute, base_dir=tmp_path / "plans") == EXPECTED
    monkeypatch.chdir(tmp_path / "plans")
    assert load_tracking_plan("plan.yaml") == EXPECTED  # no folder: the working directory


def test_the_example_plan_is_valid() -> None:
    plan = load_tracking_plan(EXAMPLE)
    assert {p.id for p in plan.user_properties} >= {"vip_level", "legacy_level", "pending_flag"}
    assert [e.id for e in plan.events][:2] == ["search", "purchase"]


def test_every_problem_is_reported_with_its_place() -> None:
    problems = problems_of(
        {
            "user_properties": [
                {"id": "1st_visit", "name": "First visit", "data_type": "date"},
                {"id": "ok", "name": "x" * 51, "data_type": "string", "remark": "50% off!"},
                {"name": "No id", "data_type": "number"},
                {"id": "no_type"},
            ],
            "events": [
                {"id": "purchase", "name": "Purchase", "properties": []},
                {
                    "id": "share",
                    "properties": [
                        {"id": "amount", "data_type": "number"},
                        {"id": "amount", "data_type": "number"},
                        {"id": "bad-id", "data_type": "array<number>"},
                    ],
                },
                {"id": "purchase"},
            ],
        }
    )
    joined = "\n".join(problems)
    for place in (
        "user_properties[0].id:",
        "user_properties[0].data_type:",
        "user_properties[1].name:",
        "user_properties[1].remark:",
        "user_properties[2].id: is required",
        "user_properties[3].data_type: is required",
        "events[1].properties[1].id: 'amount' is already declared at events[1].properties[0]",
        "events[1].properties[2].id:",
        "events[1].properties[2].data_type:",
        "events[2].id: 'purchase' is already declared at events[0]",
    ):
        assert place in joined, place
    assert len(problems) == 10


def test_the_error_message_lists_every_problem_and_says_nothing_was_sent(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "user_properties:\n  - {id: 9lives, data_type: number}\n  - {id: ok, data_type: text}\n",
        encoding="utf-8",
    )
    with pytest.raises(TrackingPlanFileError) as caught:
        load_tracking_plan(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: 2 problem(s)")
    assert "nothing was sent" in message
    assert "  - user_properties[0].id: must contain only letters" in message
    assert "  - user_properties[1].data_type: must be one of string, number" in message
    assert isinstance(caught.value, ValueError)


def test_the_error_survives_pickling() -> None:
    error = TrackingPlanFileError(["events[0].id: is required"], origin="plan.yaml")
    copy = pickle.loads(pickle.dumps(error))
    assert copy.problems == error.problems
    assert str(copy) == str(error)


def test_unknown_keys_are_reported_with_the_likely_intended_key() -> None:
    problems = problems_of(
        {
            "user_property": [],
            "events": [
                {"id": "share", "remarks": "x", "properties": [{"id": "a", "data_tpye": "string"}]}
            ],
        }
    )
    assert "plan.user_property: is not a known key; did you mean user_properties?" in problems
    assert "events[0].remarks: is not a known key; did you mean remark?" in problems
    assert (
        "events[0].properties[0].data_tpye: is not a known key; did you mean data_type?" in problems
    )
    assert "events[0].properties[0].data_type: is required" in problems


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, "the plan is empty: declare user_properties and/or events"),
        (["a"], "plan: must be a mapping with keys user_properties, events"),
        ({"events": {"id": "a"}}, "events: must be a list"),
        (
            {"events": ["purchase"]},
            "events[0]: must be a mapping with keys id, name, remark, properties",
        ),
        ({"events": [{"id": "a", "properties": "x"}]}, "events[0].properties: must be a list"),
        (
            {"user_properties": [{"id": "a", "data_type": "string", "dataType": "string"}]},
            "user_properties[0].data_type: give data_type or dataType, not both",
        ),
        ({"events": [{"id": "a", "name": True}]}, "events[0].name: must be a string (got True)"),
    ],
)
def test_shape_problems(data: Any, expected: str) -> None:
    assert expected in problems_of(data)


def test_an_empty_plan_mapping_is_a_plan_with_nothing_in_it() -> None:
    assert parse_tracking_plan({}) == DesiredPlan()
    assert parse_tracking_plan({"user_properties": None, "events": []}) == DesiredPlan()


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    broken_yaml = tmp_path / "plan.yml"
    broken_yaml.write_text("events: [\n  - id: a\n", encoding="utf-8")
    broken_json = tmp_path / "plan.json"
    broken_json.write_text('{"events": [}', encoding="utf-8")
    for path, kind in ((broken_yaml, "YAML"), (broken_json, "JSON")):
        with pytest.raises(TrackingPlanFileError, match=f"cannot be read as {kind}"):
            load_tracking_plan(path)
    with pytest.raises(TrackingPlanFileError) as caught:
        load_tracking_plan(tmp_path / "missing.yaml")
    assert str(caught.value).startswith(f"{tmp_path / 'missing.yaml'}: 1 problem(s)")
    assert caught.value.problems == ["file: cannot be read: No such file or directory"]


@pytest.mark.parametrize("name", ["shadow", "environ", "plan.txt", "plan.yaml.bak"])
def test_a_file_that_is_not_named_as_a_plan_is_refused_unread(tmp_path: Path, name: str) -> None:
    """A templated path could name any file the worker reads: the refusal quoted its lines."""
    path = tmp_path / name
    path.write_text("root:secret-hash:20228:0:99999:7:::\n", encoding="utf-8")
    with pytest.raises(
        TrackingPlanFileError, match=r"must be a \.yaml, \.yml, \.json file"
    ) as refused:
        load_tracking_plan(path)
    assert "secret-hash" not in str(refused.value)
