"""The synthetic user population behind cohorts, exports and ``user.<property>`` lookups.

User ``i``'s value of a property is a deterministic function of ``(seed, i)``: users are
grouped in blocks of :data:`BLOCK_ROWS`, and each property of a block draws from its own
generator ``np.random.default_rng((seed, block, crc32(property)))``. Any block and any
property can therefore be produced alone, in any order, and a cohort of size N is simply
users ``0..N-1``.

Each property of a block is a :class:`Column` that yields both the values as Python
objects (for the paged endpoint and the analytics engine) and their JSON text as a
fixed-width byte matrix (for the streamed export, see :mod:`.fixedwidth`). Both come from
the same arrays, so the two endpoints always agree.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from analytics_emulator import catalog
from analytics_emulator import fixedwidth as fw

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Sequence

BLOCK_ROWS: Final = 8192
NULL_SHARE: Final = 0.05
"""Share of users without a value in each non-id, unmasked property."""

TAG_PREFIX: Final = "tag."
_EPOCH = date(1970, 1, 1)
_MASK_61 = (1 << 61) - 1


def record_key(property_id: str) -> str:
    """The key a requested property or tag code has in a cohort user record."""
    return TAG_PREFIX + property_id if property_id in catalog.TAG_CODES else property_id


def default_masked_ids() -> frozenset[str]:
    """Properties the catalog's plan masks globally (``masking == 1``)."""
    return frozenset(p.id for p in catalog.USER_PROPERTIES if p.masking == 1)


def _millis(day: str) -> int:
    return (date.fromisoformat(day) - _EPOCH).days * fw.MS_PER_DAY


class Choices:
    """A fixed list of values with their JSON texts; code ``len(values)`` means null."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = tuple(values)
        self.null_code = len(self.values)
        self.text = fw.text_table([*map(fw.json_text, self.values), fw.NULL_TEXT])

    def python(self, code: int) -> Any:
        value = None if code == self.null_code else self.values[code]
        return list(value) if isinstance(value, tuple) else value


def _subsets(items: Sequence[str]) -> Choices:
    """Every subset of ``items`` as a list, indexed by its bit mask (mask 0 is ``[]``)."""
    return Choices(
        [
            tuple(item for bit, item in enumerate(items) if mask >> bit & 1)
            for mask in range(1 << len(items))
        ]
    )


class Column(ABC):
    """One property's values for the rows of a block."""

    @abstractmethod
    def text(self) -> np.ndarray:
        """The JSON text of every row as an ``(n, width)`` padded byte matrix."""

    @abstractmethod
    def python(self, rows: slice) -> list[Any]:
        """The values of ``rows`` as JSON-ready Python objects (None for null)."""


class CodedColumn(Column):
    """Values picked from a :class:`Choices` by code."""

    def __init__(self, choices: Choices, codes: np.ndarray) -> None:
        self.choices = choices
        self.codes = codes

    def text(self) -> np.ndarray:
        return self.choices.text[self.codes]

    def python(self, rows: slice) -> list[Any]:
        return [self.choices.python(code) for code in self.codes[rows].tolist()]


class IntegerColumn(Column):
    def __init__(self, values: np.ndarray, null: np.ndarray | None) -> None:
        self.values = values
        self.null = null

    def text(self) -> np.ndarray:
        return fw.with_nulls(fw.integers(self.values), self.null)

    def python(self, rows: slice) -> list[Any]:
        return _nulled(self.values[rows].tolist(), self.null, rows)


class DecimalColumn(Column):
    """Two-digit decimals kept as integer hundredths, so the text is exact."""

    def __init__(self, hundredths: np.ndarray, null: np.ndarray | None) -> None:
        self.hundredths = hundredths
        self.null = null

    def text(self) -> np.ndarray:
        return fw.with_nulls(fw.decimals(self.hundredths), self.null)

    def python(self, rows: slice) -> list[Any]:
        return _nulled((self.hundredths[rows] / 100).tolist(), self.null, rows)


class DateTimeColumn(Column):
    def __init__(self, millis: np.ndarray, null: np.ndarray | None, style: str) -> None:
        self.millis = millis
        self.null = null
        self.style = style

    def text(self) -> np.ndarray:
        return fw.with_nulls(fw.datetimes(self.millis, self.style), self.null)

    def python(self, rows: slice) -> list[Any]:
        quoted = fw.datetimes(self.millis[rows], self.style)
        texts = [row.tobytes().decode()[1:-1] for row in quoted]
        return _nulled(texts, self.null, rows)


class NumberedTextColumn(Column):
    """Strings made of a fixed prefix, a number and a fixed suffix (unique e-mails)."""

    def __init__(self, prefix: str, numbers: np.ndarray, suffix: str, null: np.ndarray | None):
        self.prefix = prefix
        self.numbers = numbers
        self.suffix = suffix
        self.null = null

    def text(self) -> np.ndarray:
        n = self.numbers.shape[0]
        joined = np.concatenate(
            [
                fw.constant(b'"' + self.prefix.encode(), n),
                fw.integers(self.numbers),
                fw.constant(self.suffix.encode() + b'"', n),
            ],
            axis=1,
        )
        return fw.with_nulls(joined, self.null)

    def python(self, rows: slice) -> list[Any]:
        texts = [f"{self.prefix}{number}{self.suffix}" for number in self.numbers[rows].tolist()]
        return _nulled(texts, self.null, rows)


class ConstantColumn(Column):
    """The same value on every row: masked properties and properties without data."""

    def __init__(self, value: Any, n: int) -> None:
        self.value = value
        self.n = n
        self._text = fw.json_text(value)

    def text(self) -> np.ndarray:
        return fw.constant(self._text, self.n)

    def python(self, rows: slice) -> list[Any]:
        return [self.value] * len(range(*rows.indices(self.n)))


def _nulled(values: list[Any], null: np.ndarray | None, rows: slice) -> list[Any]:
    if null is not None:
        for row in np.flatnonzero(null[rows]).tolist():
            values[row] = None
    return values


@dataclass(frozen=True)
class _Block:
    """The rows of one block, and a generator per property for it."""

    seed: int
    index: int
    start: int
    n: int

    def rng(self, property_id: str) -> np.random.Generator:
        return np.random.default_rng((self.seed, self.index, zlib.crc32(property_id.encode())))

    def users(self) -> np.ndarray:
        return np.arange(self.start, self.start + self.n, dtype=np.int64)


def _nulls(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.random(n) < NULL_SHARE


def _coded(choices: Choices, weights: Sequence[float] | None = None) -> Callable[..., Column]:
    def generate(block: _Block, property_id: str) -> Column:
        rng = block.rng(property_id)
        null = _nulls(rng, block.n)
        p = None if weights is None else np.asarray(weights) / np.sum(weights)
        codes = rng.choice(len(choices.values), size=block.n, p=p)
        return CodedColumn(choices, np.where(null, choices.null_code, codes))

    return generate


def _subset_column(choices: Choices, empty_share: float) -> Callable[..., Column]:
    def generate(block: _Block, property_id: str) -> Column:
        rng = block.rng(property_id)
        null = _nulls(rng, block.n)
        codes = rng.integers(1, len(choices.values), size=block.n)
        codes[rng.random(block.n) < empty_share] = 0
        return CodedColumn(choices, np.where(null, choices.null_code, codes))

    return generate


def _integers(low: int, high: int) -> Callable[..., Column]:
    def generate(block: _Block, property_id: str) -> Column:
        rng = block.rng(property_id)
        null = _nulls(rng, block.n)
        return IntegerColumn(rng.integers(low, high + 1, size=block.n), null)

    return generate


def _orders(block: _Block, property_id: str) -> Column:
    rng = block.rng(property_id)
    null = _nulls(rng, block.n)
    return IntegerColumn(rng.negative_binomial(2, 0.15, size=block.n).astype(np.int64), null)


def _decimals(low: float, high: float) -> Callable[..., Column]:
    def generate(block: _Block, property_id: str) -> Column:
        rng = block.rng(property_id)
        null = _nulls(rng, block.n)
        hundredths = rng.integers(round(low * 100), round(high * 100) + 1, size=block.n)
        return DecimalColumn(hundredths, null)

    return generate


def _datetimes(first: str, last: str, style: str) -> Callable[..., Column]:
    low, high = _millis(first), _millis(last) + fw.MS_PER_DAY
    unit = {fw.DATE: fw.MS_PER_DAY, fw.SECONDS: 1000, fw.MILLIS: 1}[style]

    def generate(block: _Block, property_id: str) -> Column:
        rng = block.rng(property_id)
        null = _nulls(rng, block.n)
        millis = rng.integers(low // unit, high // unit, size=block.n) * unit
        return DateTimeColumn(millis, null, style)

    return generate


def _distinct_ids(block: _Block, property_id: str) -> Column:
    """Unique, beyond 2**53 in magnitude, both signs.

    ``(i * A + B) mod 2**61`` is a bijection for odd ``A``; adding ``2**61`` puts every
    magnitude in ``[2**61, 2**62)``, so no two users share an id whatever their sign.
    """
    users = block.users().astype(np.uint64)
    offset = np.uint64((block.seed * 0x632BE59BD9B4E019) & _MASK_61)
    mixed = (users * np.uint64(0x9E3779B97F4A7C15) + offset) & np.uint64(_MASK_61)
    magnitude = (mixed | np.uint64(1 << 61)).astype(np.int64)
    negative = ((users * np.uint64(0xD1B54A32D192ED03)) >> np.uint64(62)) == 0
    return IntegerColumn(np.where(negative, -magnitude, magnitude), None)


def _emails(block: _Block, property_id: str) -> Column:
    rng = block.rng(property_id)
    return NumberedTextColumn("user", block.users(), "@example.com", _nulls(rng, block.n))


def _numbered(prefix: str, low: int, high: int, suffix: str) -> Callable[..., Column]:
    def generate(block: _Block, property_id: str) -> Column:
        rng = block.rng(property_id)
        null = _nulls(rng, block.n)
        return NumberedTextColumn(prefix, rng.integers(low, high + 1, size=block.n), suffix, null)

    return generate


_CITIES: Final = (
    ("北京", "北京"),
    ("上海", "上海"),
    ("广州", "广东"),
    ("深圳", "广东"),
    ("杭州", "浙江"),
    ("宁波", "浙江"),
    ("成都", "四川"),
    ("武汉", "湖北"),
    ("西安", "陕西"),
    ("南京", "江苏"),
    ("苏州", "江苏"),
    ("乌鲁木齐", "新疆"),
)
_CITY_CHOICES = Choices([city for city, _ in _CITIES])
_PROVINCE_CHOICES = Choices(sorted({province for _, province in _CITIES}))
_PROVINCE_OF_CITY = np.array(
    [*(_PROVINCE_CHOICES.values.index(p) for _, p in _CITIES), _PROVINCE_CHOICES.null_code]
)
_CITY_WEIGHTS = (12, 11, 9, 9, 7, 3, 6, 5, 4, 5, 4, 1)


def _city_codes(block: _Block) -> np.ndarray:
    p = np.asarray(_CITY_WEIGHTS) / sum(_CITY_WEIGHTS)
    return block.rng("$city").choice(len(_CITIES), size=block.n, p=p)


def _cities(block: _Block, property_id: str) -> Column:
    null = _nulls(block.rng("$city#null"), block.n)
    return CodedColumn(_CITY_CHOICES, np.where(null, _CITY_CHOICES.null_code, _city_codes(block)))


def _provinces(block: _Block, property_id: str) -> Column:
    """The province of the user's city, so the two properties never contradict."""
    null = _nulls(block.rng(property_id), block.n)
    codes = _PROVINCE_OF_CITY[_city_codes(block)]
    return CodedColumn(_PROVINCE_CHOICES, np.where(null, _PROVINCE_CHOICES.null_code, codes))


# Nicknames mix CJK, Latin, emoji and the characters JSON must escape.
_NICKNAMES = Choices(
    [
        first + second + third
        for first in ("快乐的", "安静的", "勇敢的", "Happy ", "Lazy ", "小")
        for second in ("熊猫", "狐狸", "月亮", "Tiger", "星星", "Ming")
        for third in ("", "🐼", "🌙✨", "🔥", ' "Q"', "\\后端", "\t制表")
    ]
)

_GENERATORS: Final[dict[str, Callable[[_Block, str], Column]]] = {
    "distinct_id": _distinct_ids,
    "$city": _cities,
    "$province": _provinces,
    "$os": _coded(Choices(["iOS", "Android", "HarmonyOS", "Windows", "macOS"]), (5, 6, 3, 1, 1)),
    "$first_visit_time": _datetimes("2019-01-01", "2023-12-31", fw.SECONDS),
    "$last_visit_time": _datetimes("2023-06-01", "2024-04-30", fw.MILLIS),
    "birthday": _datetimes("1950-01-01", "2008-12-31", fw.DATE),
    "register_time": _datetimes("2019-01-01", "2024-04-30", fw.SECONDS),
    "age": _integers(16, 80),
    "balance": _decimals(-2000.0, 99999.99),
    "score": _decimals(0.0, 100.0),
    "total_orders": _orders,
    "is_vip": _coded(Choices([True, False]), (1, 4)),
    "subscribed": _coded(Choices([True, False])),
    "interests": _subset_column(
        _subsets(["旅行", "美食", "运动", "音乐", "游戏", "读书", "摄影", "科技"]), 0.15
    ),
    "devices": _subset_column(
        _subsets(["iPhone", "iPad", "Android 手机", "Windows PC", "Mac"]), 0.1
    ),
    "nickname": _coded(_NICKNAMES),
    "email": _emails,
    "gender": _coded(Choices(["男", "女", "未知"]), (48, 48, 4)),
    "channel": _coded(
        Choices(["App Store", "华为应用市场", "小米商店", "微信", "百度推广", "organic"])
    ),
    # Masked by the plan: these values only show when a caller asks for them unmasked.
    "phone": _numbered("1", 30_000_000_000, 99_999_999_999, ""),
    "id_card": _numbered("", 110_101_195_001_010_000, 659_001_200_812_319_999, ""),
    "income": _decimals(0.0, 500_000.0),
    "$lib_version": _coded(Choices(["4.5.1", "4.6.0", "5.0.2", "5.1.0"])),
    "legacy_level": _integers(1, 10),
    "tag_rfm": _coded(
        Choices(
            [
                "重要价值客户",
                "重要发展客户",
                "重要保持客户",
                "重要挽留客户",
                "一般价值客户",
                "一般发展客户",
                "一般保持客户",
                "一般挽留客户",
            ]
        )
    ),
    "tag_lifecycle": _coded(Choices(["新用户", "成长期", "成熟期", "衰退期", "流失期"])),
}
"""Generators by property id or tag code. Ids not listed (``pending_flag``, properties
added through the API) have no reported data: always null."""


@dataclass(frozen=True)
class EncodedBlock:
    """The NDJSON text of a whole block, with where each line ends.

    :param text: the UTF-8 bytes as a ``uint8`` array (sliced without copying).
    :param line_ends: ``line_ends[k]`` is the offset just past the newline of row ``k``.
    """

    text: np.ndarray
    line_ends: np.ndarray

    @property
    def rows(self) -> int:
        return int(self.line_ends.shape[0])

    @property
    def data(self) -> bytes:
        """All lines as one bytes object (a copy)."""
        return self.text.tobytes()

    def offset(self, rows: int) -> int:
        """Bytes taken by the first ``rows`` lines."""
        return 0 if rows <= 0 else int(self.line_ends[rows - 1])

    def lines(self, first: int, stop: int) -> memoryview:
        """Lines ``first`` to ``stop - 1``, newlines included, without copying."""
        return self.text[self.offset(first) : self.offset(stop)].data

    @property
    def nbytes(self) -> int:
        return int(self.text.nbytes + self.line_ends.nbytes)


class Population:
    """All users of the synthetic project; user ``i`` depends on ``(seed, i)`` only.

    :param seed: the project's seed.
    :param block_rows: users per block; values depend on it, so keep the default.
    """

    def __init__(self, seed: int, *, block_rows: int = BLOCK_ROWS) -> None:
        self.seed = seed
        self.block_rows = block_rows

    def block_count(self, rows: int) -> int:
        """Blocks needed for users ``0..rows-1``."""
        return -(-rows // self.block_rows)

    def _block(self, index: int) -> _Block:
        return _Block(self.seed, index, index * self.block_rows, self.block_rows)

    def _columns(
        self, block: _Block, properties: Iterable[str], masked: Collection[str]
    ) -> list[tuple[str, Column]]:
        columns = []
        for prop in properties:
            generator = _GENERATORS.get(prop)
            if prop in masked and prop not in catalog.TAG_CODES:
                column: Column = ConstantColumn(catalog.MASKED_MARKER, block.n)
            elif generator is None:
                column = ConstantColumn(None, block.n)
            else:
                column = generator(block, prop)
            columns.append((record_key(prop), column))
        return columns

    def records(
        self,
        start: int,
        stop: int,
        properties: Sequence[str],
        *,
        masked: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Cohort user records (spec 2.6) of users ``start..stop-1``.

        :param properties: property ids and tag codes; a tag code ``c`` appears under the
            key ``tag.c``. Ids without generated data come back null.
        :param masked: properties that carry :data:`catalog.MASKED_MARKER`; defaults to the
            ones the catalog masks.
        """
        masked = default_masked_ids() if masked is None else masked
        out: list[dict[str, Any]] = []
        first_block = start // self.block_rows
        for index in range(first_block, self.block_count(stop)):
            block = self._block(index)
            rows = slice(max(start - block.start, 0), min(stop - block.start, block.n))
            columns = self._columns(block, _unique(properties), masked)
            values = [(key, column.python(rows)) for key, column in columns]
            for row in range(rows.stop - rows.start):
                out.append({key: column_values[row] for key, column_values in values})
        return out

    def encode_block(
        self, index: int, properties: Sequence[str], *, masked: Collection[str] | None = None
    ) -> EncodedBlock:
        """NDJSON text of every user of block ``index``, one record per line.

        Same records as :meth:`records`, keys in the order of ``properties``.
        """
        masked = default_masked_ids() if masked is None else masked
        block = self._block(index)
        parts: list[np.ndarray] = []
        columns = self._columns(block, _unique(properties), masked)
        for position, (key, column) in enumerate(columns):
            opener = "{" if position == 0 else ","
            parts.append(fw.constant(f"{opener}{fw.json_text(key).decode()}:".encode(), block.n))
            parts.append(column.text())
        parts.append(fw.constant(b"}\n" if columns else b"{}\n", block.n))
        text = fw.join_rows(parts)
        return EncodedBlock(text, np.flatnonzero(text == ord("\n")) + 1)


def _unique(properties: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(properties))
