"""The byte scans of a block: counts equal to a plain Python count, whatever the block sizes
before (the masks are reused) and whichever thread scans."""

from __future__ import annotations

import random
import re
import threading

import numpy as np
import pytest

from airflow_provider_analytics.core import byte_scans

_KEY_END = re.compile(rb'(?<!\\)":')


def _blocks(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabet = b'ab":\\{}\n, '
    piece = byte_scans.PIECE
    sizes = [0, 1, 2, 3, 5000, 17, piece - 1, piece, piece + 1, piece + 2, 2 * piece + 3, 9, 300]
    return [bytes(rng.choice(alphabet) for _ in range(size)) for size in sizes]


def test_counts_match_python_across_growing_and_shrinking_blocks() -> None:
    for block in _blocks(7):
        assert byte_scans.key_ends(block) == len(_KEY_END.findall(block)), block[:40]
        assert byte_scans.byte_count(block, ord("\n")) == block.count(b"\n")
        data = np.frombuffer(block, dtype=np.uint8)
        expected = [i for i, byte in enumerate(block) if byte == ord(":")]
        assert byte_scans.positions(data, ord(":")).tolist() == expected


def test_an_escaped_quote_before_a_colon_is_not_a_key_end() -> None:
    assert byte_scans.key_ends(b'{"a":1,"b\\":c":2}\n') == 2
    assert byte_scans.key_ends(b'{"a":1}\n') == 1


def test_threads_scan_with_masks_of_their_own() -> None:
    blocks = _blocks(11)
    expected = [len(_KEY_END.findall(block)) for block in blocks]
    results: list[list[int]] = []

    def scan() -> None:
        results.append([byte_scans.key_ends(block) for block in blocks * 20])

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected * 20] * 4


@pytest.mark.parametrize(
    ("block", "framed"),
    [
        (b'{"a":1}\n{"b":2}\n', True),
        (b'{"a":1}\r\n{"b":2}\r\n', True),
        (b"", True),
        (b'{"a":1}{"b":2}\n\n', False),  # two on a line, and a blank one
        (b'{"a":1} {"b":2}\n{"c":3}\n', True),  # two on a line: the rows outnumber the lines
        (b'{"a":\n1}\n', False),  # spread over two lines
        (b'{"a":{"b":1}\n}\n', False),  # a line ending in a nested object's brace
        (b' {"a":1}\n', False),  # padded: the line rule reads it
        (b'{"a":1} \n', False),
        (b'\n{"a":1}\n', False),
    ],
)
def test_lines_framed_by_braces_are_told_from_the_lines_ends(block: bytes, framed: bool) -> None:
    assert byte_scans.lines_framed_by_braces(block) is framed
