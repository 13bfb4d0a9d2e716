"""The tracking plan file: load it (YAML or JSON) and check all of it before any request.

A product team keeps its agreed plan in a file beside its DAGs::

    user_properties:
      - {id: vip_level, name: VIP level, data_type: number, remark: 0 none, 1 silver}
    events:
      - id: purchase
        name: Purchase
        properties:
          - {id: amount, name: Order amount, data_type: number}

Every item is checked with the client's rules (ids, names, remarks, data types) and ids
must be unique in their list. All problems are collected and raised together, each with its
place in the file (``events[2].properties[0].id: ...``), so one run shows everything to fix.

A plan file is small, and its decoded form must be small too, whatever a hostile file asks.
A YAML alias bomb (a few hundred bytes whose aliases refer to lists of aliases) expands to
billions of nodes once anything walks it, so the YAML loader counts the nodes every alias
stands for while it composes the document and stops past :data:`MAX_NODES`. Nesting deeper
than :data:`MAX_DEPTH`, a file over :data:`MAX_CHARACTERS` and a key given twice in one
mapping are refused as well, the last naming the line of both occurrences (YAML and JSON
would otherwise keep the later value silently, dropping a whole block of the plan).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from airflow_provider_analytics.core import rules, strict_json
from airflow_provider_analytics.core.errors import (
    AnalyticsError,
    AnalyticsValidationError,
    bounded_repr,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Collection, Sequence

    from yaml.error import Mark

_T = TypeVar("_T")

TOP_LEVEL_KEYS = ("user_properties", "events")
PROPERTY_KEYS = ("id", "name", "remark", "data_type", "dataType")
EVENT_KEYS = ("id", "name", "remark", "properties")
MAX_LISTED_PROBLEMS = 50
MAX_CHARACTERS = 5_000_000
MAX_NODES = 200_000
MAX_DEPTH = 64


class TrackingPlanFileError(AnalyticsError, ValueError):
    """The plan file cannot be read or breaks the spec's rules; nothing was sent.

    :param problems: every problem found, each starting with its place in the file.
    :param origin: the file (or ``plan`` for a plan given as a dict), for the message.
    """

    def __init__(self, problems: Sequence[str], *, origin: str) -> None:
        listing = "\n".join(f"  - {problem}" for problem in problems[:MAX_LISTED_PROBLEMS])
        if len(problems) > MAX_LISTED_PROBLEMS:
            listing += f"\n  - ... and {len(problems) - MAX_LISTED_PROBLEMS} more"
        super().__init__(
            f"{origin}: {len(problems)} problem(s) in the tracking plan; "
            f"nothing was sent to the platform:\n{listing}"
        )
        self.problems = list(problems)
        self.origin = origin


class DecodeError(AnalyticsError, ValueError):
    """The text is not a document of the accepted size and shape; the message says where."""


def _where(mark: Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and documents too large once expanded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._expanded: dict[int, int] = {}
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            where = _where(self.peek_event().start_mark)
            alias = super().compose_node(parent, index)
            if alias is None or id(alias) not in self._expanded:
                raise DecodeError(f"{where}: an alias refers to a node that contains it")
            return alias
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise DecodeError(
                f"{_where(self.peek_event().start_mark)}: nested deeper than {MAX_DEPTH} "
                "levels; a plan needs four"
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is not None:
            self._count(node)
        return node

    def _count(self, node: Node) -> None:
        """Record how many nodes ``node`` stands for once every alias in it is expanded."""
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [child for pair in node.value for child in pair]
        size = 1 + sum(self._expanded[id(child)] for child in children)
        if size > MAX_NODES:
            raise DecodeError(
                f"{_where(node.start_mark)}: expands to more than {MAX_NODES:,} values through "
                "aliases (*name); a plan file needs far fewer, so this looks like an alias bomb"
            )
        self._expanded[id(node)] = size

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_at: dict[Any, Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                earlier = first_at.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                break
            if earlier is not None:
                raise DecodeError(
                    f"{_where(key_node.start_mark)}: key {bounded_repr(key)} is given twice in "
                    f"one mapping (first at {_where(earlier.start_mark)}); YAML would keep only "
                    "the last"
                )
            first_at[key] = key_node
        return super().construct_mapping(node, deep=deep)


def decode_yaml(text: str) -> Any:
    """The one YAML document in ``text``, within the bounds of the module's docstring.

    :raises DecodeError: too large, too deep, a key given twice, or not YAML.
    """
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise DecodeError(f"cannot be read as YAML: {bounded_repr(str(exc), 400)}") from None
    finally:
        loader.dispose()


@dataclass(frozen=True)
class PlannedProperty:
    """A user property or event property as the file declares it.

    ``None`` means the file does not declare the field: the platform's value is kept.

    :param id: property id.
    :param data_type: one of the spec's data types.
    :param location: where the item is in the file, e.g. ``events[1].properties[0]``.
    :param name: display name.
    :param remark: remark (``""`` declares an empty remark).
    """

    id: str
    data_type: str
    location: str
    name: str | None = None
    remark: str | None = None

    def declared(self) -> dict[str, str]:
        """The declared fields under the names the platform's records use."""
        fields = {"name": self.name, "remark": self.remark, "dataType": self.data_type}
        return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True)
class PlannedEvent:
    """An event as the file declares it, with its event properties.

    :param id: event id.
    :param location: where the event is in the file, e.g. ``events[1]``.
    :param name: display name (``None``: keep the platform's).
    :param remark: remark (``None``: keep the platform's).
    :param properties: the event's properties in file order.
    """

    id: str
    location: str
    name: str | None = None
    remark: str | None = None
    properties: tuple[PlannedProperty, ...] = ()

    def declared(self) -> dict[str, str]:
        """The declared fields under the names the platform's records use."""
        fields = {"name": self.name, "remark": self.remark}
        return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True)
class DesiredPlan:
    """The whole plan of the file, checked.

    :param user_properties: in file order.
    :param events: in file order.
    """

    user_properties: tuple[PlannedProperty, ...] = ()
    events: tuple[PlannedEvent, ...] = ()


class _Problems:
    """Collects rule violations instead of stopping at the first."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, field: str, rule: str) -> None:
        self.found.append(f"{field}: {rule}")

    def check(self, rule: Callable[[Any, str], _T], value: Any, field: str) -> _T | None:
        """``rule(value, field)``, or ``None`` after recording why it failed."""
        try:
            return rule(value, field)
        except AnalyticsValidationError as exc:
            self.found.append(str(exc))
            return None

    def mapping(self, value: Any, field: str, allowed: Collection[str]) -> Mapping[str, Any] | None:
        """``value`` if it is a mapping; unknown keys are recorded with a likely intended key."""
        if not isinstance(value, Mapping):
            self.add(field, f"must be a mapping with keys {', '.join(allowed)}")
            return None
        for key in value:
            if key not in allowed:
                shown = key if isinstance(key, str) and len(key) <= 80 else bounded_repr(key)
                close = difflib.get_close_matches(shown, allowed, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                self.add(f"{field}.{shown}", f"is not a known key{hint}")
        return value

    def items(self, value: Any, field: str) -> list[Any]:
        """The entries of an optional list (``None`` and a missing key mean none)."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.add(field, "must be a list")
            return []
        return value

    def unique_ids(self, items: Sequence[PlannedProperty | PlannedEvent]) -> None:
        first_at: dict[str, str] = {}
        for item in items:
            if item.id in first_at:
                self.add(
                    f"{item.location}.id", f"{item.id!r} is already declared at {first_at[item.id]}"
                )
            else:
                first_at[item.id] = item.location


def _optional(rule: Callable[[Any, str], str]) -> Callable[[Any, str], str | None]:
    def check(value: Any, field: str) -> str | None:
        return None if value is None else rule(value, field)

    return check


_optional_name = _optional(rules.name)
_optional_remark = _optional(rules.remark)


def _required(value: Any, field: str) -> Any:
    if value is None:
        rules.fail(field, "is required")
    return value


def _id(value: Any, field: str) -> str:
    return rules.id_ref(_required(value, field), field)


def _data_type(value: Any, field: str) -> str:
    return rules.data_type(_required(value, field), field)


def _property(raw: Any, location: str, problems: _Problems) -> PlannedProperty | None:
    spec = problems.mapping(raw, location, PROPERTY_KEYS)
    if spec is None:
        return None
    before = len(problems.found)
    if "data_type" in spec and "dataType" in spec:
        problems.add(f"{location}.data_type", "give data_type or dataType, not both")
    prop_id = problems.check(_id, spec.get("id"), f"{location}.id")
    data_type = problems.check(
        _data_type, spec.get("data_type", spec.get("dataType")), f"{location}.data_type"
    )
    name = problems.check(_optional_name, spec.get("name"), f"{location}.name")
    remark = problems.check(_optional_remark, spec.get("remark"), f"{location}.remark")
    if len(problems.found) > before or prop_id is None or data_type is None:
        return None
    return PlannedProperty(prop_id, data_type, location, name=name, remark=remark)


def _event(raw: Any, location: str, problems: _Problems) -> PlannedEvent | None:
    spec = problems.mapping(raw, location, EVENT_KEYS)
    if spec is None:
        return None
    before = len(problems.found)
    event_id = problems.check(_id, spec.get("id"), f"{location}.id")
    name = problems.check(_optional_name, spec.get("name"), f"{location}.name")
    remark = problems.check(_optional_remark, spec.get("remark"), f"{location}.remark")
    raw_properties = problems.items(spec.get("properties"), f"{location}.properties")
    properties = [
        _property(item, f"{location}.properties[{i}]", problems)
        for i, item in enumerate(raw_properties)
    ]
    checked = [p for p in properties if p is not None]
    problems.unique_ids(checked)
    if len(problems.found) > before or event_id is None:
        return None
    return PlannedEvent(event_id, location, name=name, remark=remark, properties=tuple(checked))


def parse_tracking_plan(data: Any, *, origin: str = "plan") -> DesiredPlan:
    """Check a plan already decoded from YAML or JSON (or built in Python).

    :param data: ``{"user_properties": [...], "events": [...]}``; either list may be absent.
    :param origin: names the source in the error message.
    :raises TrackingPlanFileError: listing every problem found.
    """
    problems = _Problems()
    if data is None:
        raise TrackingPlanFileError(
            ["the plan is empty: declare user_properties and/or events"], origin=origin
        )
    spec = problems.mapping(data, "plan", TOP_LEVEL_KEYS)
    if spec is None:
        raise TrackingPlanFileError(problems.found, origin=origin)
    raw_user = problems.items(spec.get("user_properties"), "user_properties")
    raw_events = problems.items(spec.get("events"), "events")
    user = [_property(item, f"user_properties[{i}]", problems) for i, item in enumerate(raw_user)]
    events = [_event(item, f"events[{i}]", problems) for i, item in enumerate(raw_events)]
    checked_user = [p for p in user if p is not None]
    checked_events = [e for e in events if e is not None]
    problems.unique_ids(checked_user)
    problems.unique_ids(checked_events)
    if problems.found:
        raise TrackingPlanFileError(problems.found, origin=origin)
    return DesiredPlan(tuple(checked_user), tuple(checked_events))


def resolve_plan_path(
    path: str | os.PathLike[str], base_dir: str | os.PathLike[str] | None
) -> Path:
    """``path`` itself when absolute, else relative to ``base_dir`` (the DAG's folder).

    :param path: the plan file.
    :param base_dir: folder that relative paths start from; ``None`` for the working directory.
    """
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and base_dir is not None:
        resolved = Path(base_dir) / resolved
    return resolved


def _decode(text: str, path: Path) -> Any:
    """JSON for ``.json`` files, YAML otherwise (YAML also reads JSON); bounded either way."""
    if len(text) > MAX_CHARACTERS:
        problem = (
            f"is {len(text):,} characters long; a plan file may have at most {MAX_CHARACTERS:,}"
        )
    elif path.suffix.lower() != ".json":
        try:
            return decode_yaml(text)
        except DecodeError as exc:
            problem = str(exc)
    else:
        try:
            return strict_json.loads(text)
        except strict_json.StrictJsonError as exc:
            problem = f"cannot be read as JSON: it {exc}"
        except RecursionError:
            problem = "is nested too deeply to be a plan file"
    raise TrackingPlanFileError([f"file: {problem}"], origin=str(path))


def load_tracking_plan(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    base_dir: str | os.PathLike[str] | None = None,
) -> DesiredPlan:
    """Read and check a tracking plan from a YAML/JSON file, or check one given as a dict.

    :param source: path of the file, or the plan itself.
    :param base_dir: folder a relative path is resolved against.
    :raises TrackingPlanFileError: the file is missing, unreadable, or breaks the rules.
    """
    if isinstance(source, Mapping):
        return parse_tracking_plan(source)
    path = resolve_plan_path(source, base_dir)
    try:
        with path.open(encoding="utf-8") as stream:
            text = stream.read(MAX_CHARACTERS + 1)  # one more than allowed: enough to refuse
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TrackingPlanFileError([f"file: cannot be read: {reason}"], origin=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise TrackingPlanFileError(
            [f"file: is not UTF-8 text (byte {exc.start} cannot be decoded)"], origin=str(path)
        ) from None
    return parse_tracking_plan(_decode(text, path), origin=str(path))
