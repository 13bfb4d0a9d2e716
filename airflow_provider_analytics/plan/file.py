"""The tracking plan file (docs/tracking_plan_sync.md): load it (YAML or JSON) and check all of
it before any request.

Every item is checked by the client's rules and ids are unique in their list; all problems are
raised together, each with its place (``events[2].properties[0].id: ...``). The decoded form is
bounded whatever a hostile file asks: the YAML loader counts the nodes every alias stands for
as it composes (an alias bomb stops past :data:`MAX_NODES`), and refuses nesting past
:data:`MAX_DEPTH`, a file over :data:`MAX_CHARACTERS` and a key given twice in one mapping
(YAML would keep the later value silently), naming the lines.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

TOP_LEVEL_KEYS = ("user_properties", "events")
PROPERTY_KEYS = ("id", "name", "remark", "data_type", "dataType")
EVENT_KEYS = ("id", "name", "remark", "properties")
MAX_LISTED_PROBLEMS = 50
MAX_CHARACTERS = 5_000_000
MAX_NODES = 200_000
MAX_DEPTH = 64
PLAN_SUFFIXES = (".yaml", ".yml", ".json")


class TrackingPlanFileError(AnalyticsError, ValueError):
    """The plan file cannot be read or breaks the spec's rules; nothing was sent. ``problems``
    lists each with its place in the file, ``origin`` the file (``plan`` for a dict)."""

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


_CONSTRUCTOR_FAULTS = (ValueError, TypeError, LookupError, AttributeError)
"""What PyYAML's constructors raise, bare, for a node its tag cannot hold."""


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and documents too large once expanded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._expanded: dict[int, int] = {}
        self._depth = 0
        self._aliased = False  # whether an alias was met: what a refused size is put down to

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            where = _where(self.peek_event().start_mark)
            self._aliased = True
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
        if node is None:
            return None
        children: list[Node] = []  # how many nodes it stands for, its aliases expanded
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [child for pair in node.value for child in pair]
        size = 1 + sum(self._expanded[id(child)] for child in children)
        if size > MAX_NODES:
            cause = (
                " through aliases (*name); a plan file needs far fewer, so this looks like an "
                "alias bomb"
                if self._aliased
                else "; a plan file needs far fewer"
            )
            raise DecodeError(
                f"{_where(node.start_mark)}: expands to more than {MAX_NODES:,} values{cause}"
            )
        self._expanded[id(node)] = size
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_at: dict[Any, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # <<: *defaults, merged below
                continue
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

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except DecodeError:
            raise
        except _CONSTRUCTOR_FAULTS as exc:  # 2024-02-30, !!int 0xZZ, !!bool x, 5000 digits
            raise DecodeError(
                f"{_where(node.start_mark)}: {bounded_repr(node.value)} cannot be read as "
                f"{node.tag.rpartition(':')[2]}: {bounded_repr(str(exc), 200)}"
            ) from None


def decode_yaml(text: str) -> Any:
    """The one YAML document in ``text``, within the module's bounds (else :class:`DecodeError`)."""
    try:
        loader = _BoundedLoader(text)  # refuses control characters already
        return loader.get_single_data()
    except DecodeError:
        raise
    except (yaml.YAMLError, *_CONSTRUCTOR_FAULTS) as exc:  # !!map on a sequence, !!omap...
        raise DecodeError(f"cannot be read as YAML: {bounded_repr(str(exc), 400)}") from None


@dataclass(frozen=True)
class PlannedProperty:
    """A user or event property as the file declares it at ``location``
    (``events[1].properties[0]``); ``None``: not declared, the platform's value is kept."""

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
    """An event as the file declares it, with its properties in file order."""

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
    """The whole plan of the file, checked, in file order."""

    user_properties: tuple[PlannedProperty, ...] = ()
    events: tuple[PlannedEvent, ...] = ()


class _Problems:
    """Collects rule violations instead of stopping at the first."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, field: str, rule: str) -> None:
        self.found.append(f"{field}: {rule}")

    def check(self, rule: Callable[[Any, str], str], value: Any, field: str, need: bool) -> Any:
        """``rule(value, field)``, or ``None`` after recording why it failed (``None`` is taken
        unless ``need``)."""
        if value is None:
            if need:
                self.add(field, "is required")
            return None
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

    def listed(self, value: Any, field: str, *, events: bool = False) -> tuple[Any, ...]:
        """The checked items (:func:`_item`) of an optional list at ``field`` (``None`` and a
        missing key mean none), each id once."""
        if value is None:
            return ()
        if not isinstance(value, list):
            self.add(field, "must be a list")
            return ()
        items = [_item(raw, f"{field}[{i}]", self, events) for i, raw in enumerate(value)]
        checked = tuple(item for item in items if item is not None)
        first_at: dict[str, str] = {}
        for item in checked:
            if item.id in first_at:
                self.add(
                    f"{item.location}.id", f"{item.id!r} is already declared at {first_at[item.id]}"
                )
            first_at.setdefault(item.id, item.location)
        return checked


def _item(
    raw: Any, at: str, problems: _Problems, event: bool
) -> PlannedProperty | PlannedEvent | None:
    """The property (or the ``event``) declared at ``at``, or ``None``."""
    spec = problems.mapping(raw, at, EVENT_KEYS if event else PROPERTY_KEYS)
    if spec is None:
        return None
    before = len(problems.found)
    if not event and "data_type" in spec and "dataType" in spec:
        problems.add(f"{at}.data_type", "give data_type or dataType, not both")
    item_id = problems.check(rules.id_ref, spec.get("id"), f"{at}.id", True)
    data_type = spec.get("data_type", spec.get("dataType"))
    if not event:
        data_type = problems.check(rules.data_type, data_type, f"{at}.data_type", True)
    name = problems.check(rules.name, spec.get("name"), f"{at}.name", False)
    remark = problems.check(rules.remark, spec.get("remark"), f"{at}.remark", False)
    properties = problems.listed(spec.get("properties"), f"{at}.properties") if event else ()
    if len(problems.found) > before:  # a missing id or type is a problem too
        return None
    if event:
        return PlannedEvent(item_id, at, name, remark, properties)
    return PlannedProperty(item_id, data_type, at, name, remark)


def parse_tracking_plan(data: Any, *, origin: str = "plan") -> DesiredPlan:
    """Check a plan decoded from YAML or JSON (or built in Python): ``{"user_properties": [...],
    "events": [...]}``, either list optional; ``origin`` names the source in the error."""
    problems = _Problems()
    if data is None:
        raise TrackingPlanFileError(
            ["the plan is empty: declare user_properties and/or events"], origin=origin
        )
    spec = problems.mapping(data, "plan", TOP_LEVEL_KEYS)
    if spec is None:
        raise TrackingPlanFileError(problems.found, origin=origin)
    plan = DesiredPlan(
        problems.listed(spec.get("user_properties"), "user_properties"),
        problems.listed(spec.get("events"), "events", events=True),
    )
    if problems.found:
        raise TrackingPlanFileError(problems.found, origin=origin)
    return plan


def load_tracking_plan(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    base_dir: str | os.PathLike[str] | None = None,
) -> DesiredPlan:
    """Read and check a tracking plan from a YAML/JSON file (a relative path resolved against
    ``base_dir``), or check one given as a dict; :class:`TrackingPlanFileError` lists what is
    wrong."""
    if isinstance(source, Mapping):
        return parse_tracking_plan(source)
    path = Path(source)
    try:
        path = path.expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        if path.suffix.lower() not in PLAN_SUFFIXES:  # /etc/shadow, /dev/zero: not plans
            raise DecodeError(f"must be a {', '.join(PLAN_SUFFIXES)} file, not {path.name!r}")
        with path.open(encoding="utf-8-sig") as stream:  # a BOM (Windows editors) is no text
            text = stream.read(MAX_CHARACTERS + 1)  # one more than allowed: enough to refuse
        if len(text) > MAX_CHARACTERS:
            raise DecodeError(
                f"is {len(text):,} characters long; a plan file may have at most {MAX_CHARACTERS:,}"
            )
        # JSON for .json files, YAML otherwise (YAML also reads JSON); bounded either way
        data = strict_json.loads(text) if path.suffix.lower() == ".json" else decode_yaml(text)
    except OSError as exc:
        problem = f"cannot be read: {exc.strerror or type(exc).__name__}"
    except UnicodeDecodeError as exc:
        problem = f"is not UTF-8 text (byte {exc.start} cannot be decoded)"
    except strict_json.StrictJsonError as exc:
        problem = f"cannot be read as JSON: it {exc}"
    except DecodeError as exc:
        problem = str(exc)
    except (ValueError, RuntimeError) as exc:  # a NUL or lone surrogate in the path, ~nobody
        problem = f"cannot be read: {exc}"
    else:
        return parse_tracking_plan(data, origin=str(path))
    raise TrackingPlanFileError([f"file: {problem}"], origin=str(path)) from None
