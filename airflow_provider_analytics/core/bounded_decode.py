"""Decode YAML or JSON from a file a person edits, with bounds that hostile input cannot pass.

A plan file is small; its decoded form must be small too. A YAML alias bomb (a few hundred
bytes whose aliases refer to lists of aliases) expands to billions of nodes once anything
walks it, so the YAML loader counts the nodes every alias stands for while it composes the
document and stops past :data:`MAX_NODES`. Nesting deeper than :data:`MAX_DEPTH`, a file
over :data:`MAX_CHARACTERS` and a key given twice in one mapping are refused as well, the
last naming the line of both occurrences (YAML and JSON would otherwise keep the later value
silently, dropping a whole block of the plan).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import AnalyticsError, bounded_repr

MAX_CHARACTERS = 5_000_000
MAX_NODES = 200_000
MAX_DEPTH = 64


class DecodeError(AnalyticsError, ValueError):
    """The text is not a document of the accepted size and shape; the message says where."""


def _where(node: Node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and documents too large once expanded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._expanded: dict[int, int] = {}
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            where = _where_event(self)
            alias = super().compose_node(parent, index)
            if alias is None or id(alias) not in self._expanded:
                raise DecodeError(f"{where}: an alias refers to a node that contains it")
            return alias
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise DecodeError(
                f"{_where_event(self)}: nested deeper than {MAX_DEPTH} levels; a plan needs four"
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
        if isinstance(node, ScalarNode):
            size = 1
        elif isinstance(node, SequenceNode):
            size = 1 + sum(self._size_of(child) for child in node.value)
        elif isinstance(node, MappingNode):
            size = 1 + sum(self._size_of(k) + self._size_of(v) for k, v in node.value)
        else:  # pragma: no cover - the composer builds only the three kinds
            size = 1
        if size > MAX_NODES:
            raise DecodeError(
                f"{_where(node)}: expands to more than {MAX_NODES:,} values through aliases "
                "(*name); a plan file needs far fewer, so this looks like an alias bomb"
            )
        self._expanded[id(node)] = size

    def _size_of(self, node: Node) -> int:
        return self._expanded[id(node)]

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
                    f"{_where(key_node)}: key {bounded_repr(key)} is given twice in one mapping "
                    f"(first at {_where(earlier)}); YAML would keep only the last"
                )
            first_at[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _where_event(loader: yaml.SafeLoader) -> str:
    event = loader.peek_event()
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _check_size(text: str) -> None:
    if len(text) > MAX_CHARACTERS:
        raise DecodeError(
            f"is {len(text):,} characters long; a plan file may have at most {MAX_CHARACTERS:,}"
        )


def decode_yaml(text: str) -> Any:
    """The one YAML document in ``text``, within the bounds above.

    :raises DecodeError: too large, too deep, a key given twice, or not YAML.
    """
    _check_size(text)
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise DecodeError(f"cannot be read as YAML: {bounded_repr(str(exc), 400)}") from None
    finally:
        loader.dispose()


def decode_json(text: str) -> Any:
    """The JSON value in ``text``, within the bounds above.

    :raises DecodeError: too large, too deep, a key given twice, or not JSON.
    """
    _check_size(text)
    try:
        return strict_json.loads(text)
    except strict_json.StrictJsonError as exc:
        raise DecodeError(f"cannot be read as JSON: it {exc}") from None
    except RecursionError:
        raise DecodeError("is nested too deeply to be a plan file") from None
