"""The declared bodies of the ad tracking, tracking plan, cohort and account operations (as
:class:`~airflow_provider_analytics.core.rules.Declared`, like the analysis requests), checked
before anything is sent. Their fields are the client methods' arguments: a fault names the
argument (``page_url``), the body sends the spec's key (``pageUrl``)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Annotated, Any, Self

from pydantic import (
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from airflow_provider_analytics.client.analysis_requests import (
    EVENT,
    ConversionMeasure,
    EventRequest,
    FunnelRequest,
)
from airflow_provider_analytics.client.analysis_requests import expression as _expression
from airflow_provider_analytics.core import identity, rules
from airflow_provider_analytics.core.rules import Declared, check, fail, listed

_TAG_CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")


def _property(value: Any, field: str) -> str:
    """A user property id (``$`` presets allowed) or a ``tag.<tag code>`` key."""
    text = rules.string(value, field)
    tag = text.removeprefix("tag.")
    if tag == text:
        return rules.id_ref(text, field)
    if not _TAG_CODE.fullmatch(tag):
        fail(field, "tag.<code> needs a code of letters, digits, '_' or '-'", value)
    return text


def _sent_property(name: str) -> str:
    """How a cohort request names a property: a tag by its bare code (spec 2.6)."""
    return name.removeprefix("tag.")


def _properties(value: Any, field: str) -> tuple[str, ...]:
    what = "property ids or tag.<code> (or be omitted)"
    names = rules.items(value, what, item=_property, non_empty=True) or ()
    rules.distinct(names, field, sent=_sent_property, position=lambda i: f"properties[{i}]")
    return names


class Arguments(Declared):
    """A body declared by a client method's arguments (snake_case, sent camelCase)."""

    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel))
    _part = False

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> Self:
        """The body of a method's ``locals()``: its fields taken, the rest (``self``, the
        query parameters) left out."""
        return cls(**cls.fields_in(arguments))


Text = Annotated[str | None, check(rules.string, optional=True)]
Given = Annotated[str | None, check(rules.non_empty_string, optional=True)]
Required = Annotated[str, check(rules.non_empty_string)]
Name = Annotated[str | None, check(rules.name, optional=True)]
Remark = Annotated[str | None, check(rules.remark, optional=True)]
NewId = Annotated[str, check(rules.new_id)]


class CohortQuery(Arguments):
    """A cohort users request (spec 4.12/4.13), checked when it is made (a job checks its
    arguments before its first request); faults name the arguments (``page_size``), the body
    the spec's keys (``pageSize``).

    :param cohort_code: the cohort.
    :param limit: most users; ``None`` for the server's default (all, for an export).
    :param properties: property ids and ``tag.<code>`` keys (or bare tag codes); ``None`` for
        the plan's visible properties. A tag is sent by its bare code (spec 2.6).
    :param page: the 1-based page, together with ``page_size``.
    :param page_size: users per page, at most ``limit``.
    """

    cohort_code: Annotated[str, check(identity.cohort_code)]
    limit: Annotated[int | None, check(rules.count, optional=True)] = None
    properties: Annotated[tuple[str, ...] | None, check(_properties, optional=True)] = None
    page: Annotated[int | None, check(rules.count, optional=True)] = None
    page_size: Annotated[int | None, check(rules.count, optional=True)] = None

    def __init__(
        self,
        cohort_code: str,
        limit: int | None = None,
        properties: Sequence[str] | None = None,
        *,
        page: int | None = None,
        page_size: int | None = None,
    ) -> None:
        Declared.__init__(self, **self.fields_in(locals()))

    @model_validator(mode="after")
    def _paging(self) -> Self:
        if (self.page is None) != (self.page_size is None):
            fail(
                "page_size" if self.page_size is None else "page", "page and page_size go together"
            )
        if None not in (self.limit, self.page_size) and self.page_size > self.limit:  # type: ignore[operator]
            fail("page_size", f"must not exceed limit ({self.limit})", self.page_size)
        return self

    @field_serializer("properties")
    def _tags_by_code(self, properties: tuple[str, ...] | None) -> list[str] | None:
        return None if properties is None else [_sent_property(p) for p in properties]

    def with_properties(self, properties: Any) -> CohortQuery:
        """This request for ``properties`` (checked now, e.g. ids read from the plan)."""
        return self.model_copy(update={"properties": properties})

    def sizing(self) -> CohortQuery:
        """The smallest request whose answer still holds the cohort's ``count``: one user,
        the first property."""
        first = self.properties[:1] if self.properties else None
        update = {"limit": 1, "properties": first, "page": None, "page_size": None}
        return BaseModel.model_copy(self, update=update)  # a part of this one: valid as it is


def cohort_query(
    cohort_code: Any, *, limit: Any = None, properties: Any = None, paged: bool = False
) -> CohortQuery:
    """The :class:`CohortQuery` of these arguments; one given as ``cohort_code`` is returned
    as it is (then ``limit`` and ``properties`` belong inside it, not beside it, and a page in
    it only where one page is read: ``paged``; a reader of the whole cohort would drop it)."""
    if isinstance(cohort_code, CohortQuery):
        for field, value in (("limit", limit), ("properties", properties)):
            if value is not None:
                fail(field, "give it inside the CohortQuery, not beside it", value)
        if cohort_code.page is not None and not paged:
            fail("page", "is for get_cohort_users: this reads the whole cohort, up to limit")
        return cohort_code
    return CohortQuery(cohort_code, limit, properties)


def cohort_body(
    cohort_code: Any,
    *,
    limit: Any = None,
    properties: Any = None,
    page: Any = None,
    page_size: Any = None,
) -> dict[str, Any]:
    """Body of a cohort users request: :func:`cohort_query`, for ``page`` if given."""
    query = cohort_query(cohort_code, limit=limit, properties=properties, paged=True)
    if page is not None or page_size is not None:
        query = query.model_copy(update={"page": page, "page_size": page_size})
    return query.to_body()


class EventPropertyDefinition(Declared):
    """A property of an event to add (spec 4.9): ``{id, dataType, name?, remark?}``;
    ``data_type`` is accepted for ``dataType``.
    """

    _shape = "{id, dataType, name, remark}"

    id: NewId
    data_type: Annotated[str, check(rules.data_type)]
    name: Name = None
    remark: Remark = None

    @model_validator(mode="before")
    @classmethod
    def _either_spelling(cls, value: Any) -> Any:
        if isinstance(value, dict) and "data_type" in value:
            if "dataType" in value:
                fail("data_type", "give dataType or data_type, not both")
            value = {("dataType" if k == "data_type" else k): v for k, v in value.items()}
        return value


class UtmLink(Arguments):
    """An ad tracking link to create (spec 4.1)."""

    page_url: Annotated[str, check(rules.http_url)]
    utm_campaign: Required
    utm_medium: Required
    utm_source: Required
    utm_content: Text = None
    utm_term: Text = None
    remarks: Text = None
    utm_type: Text = None


class UtmConversionQuery(Arguments):
    """The conversion effect of an ad tracking link asked for (spec 4.3)."""

    from_date: Annotated[str, check(rules.date)]
    to_date: Annotated[str, check(rules.date)]
    use_cache: Annotated[bool | None, check(rules.boolean, optional=True)] = None
    expression: Annotated[str | None, check(_expression, EVENT, optional=True)] = None
    convert_measures: Annotated[
        tuple[ConversionMeasure, ...] | None, listed("{expression, aggregator}", non_empty=True)
    ] = None

    @model_validator(mode="after")
    def _in_order(self) -> Self:
        rules.date_range(self.from_date, self.to_date, from_field="from_date", to_field="to_date")
        return self


class UserPropertyBody(Arguments):
    """A user property to add (spec 4.8)."""

    id: NewId
    name: Name = None
    data_type: Annotated[str, check(rules.data_type)]
    remark: Remark = None


class EventBody(Arguments):
    """An event to add, with its properties, each id once (spec 4.9)."""

    id: NewId
    name: Name = None
    remark: Remark = None
    properties: Annotated[
        tuple[EventPropertyDefinition, ...] | None, listed("{id, dataType, name, remark}")
    ] = None

    @field_validator("properties")
    @classmethod
    def _each_once(cls, properties: tuple[EventPropertyDefinition, ...] | None) -> Any:
        ids = [definition.id for definition in properties or ()]
        rules.distinct(ids, "", position=lambda i: f"properties[{i}].id")
        return properties


class Changes(Arguments):
    """A tracking plan update (spec 4.10, 4.11): only what changes, at least one thing."""

    name: Name = None
    data_type: Annotated[str | None, check(rules.data_type, optional=True)] = Field(
        None,
        validation_alias="dataType",  # named as the body names it
    )
    remark: Remark = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if self.name is None and self.data_type is None and self.remark is None:
            fail("name", "give at least one of name, data_type or remark to change")
        return self


def _password(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        fail(field, "must be a non-empty string")  # never shown
    return rules.sendable(value, field)


class Account(Arguments):
    """An enterprise user to register (spec 4.14)."""

    email: Annotated[str, check(rules.email)]
    user_name: Given = None
    name: Given = None
    password: Annotated[str | None, check(_password, optional=True)] = Field(None, repr=False)
    phone: Given = None
    department: Given = None


class Activation(Arguments):
    """An enterprise user enabled or disabled (spec 4.15)."""

    activation: Annotated[bool, check(rules.boolean)]


def validate_funnel_request(request: Any) -> dict[str, Any]:
    """Deprecated: ``FunnelRequest.of(request).sent()``
    (:class:`~airflow_provider_analytics.client.analysis_requests.FunnelRequest`)."""
    return _deprecated("validate_funnel_request", FunnelRequest, request)


def validate_event_request(request: Any) -> dict[str, Any]:
    """Deprecated: ``EventRequest.of(request).sent()``
    (:class:`~airflow_provider_analytics.client.analysis_requests.EventRequest`)."""
    return _deprecated("validate_event_request", EventRequest, request)


def _deprecated(name: str, typed: type[FunnelRequest | EventRequest], request: Any) -> Any:
    warnings.warn(
        f"{name} is deprecated; use {typed.__name__}.model_validate(body) from "
        "airflow_provider_analytics.client.analysis_requests, which declares the request",
        DeprecationWarning,
        stacklevel=3,
    )
    return typed.of(request).sent()
