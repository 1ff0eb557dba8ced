"""The benchmark dataset builder's columnar rewrites: id masks and latency scaling."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.dataset import _scale_duration_ms, _xor_hex


def test_xor_hex_is_a_consistent_bijection_that_keeps_nulls() -> None:
    ids = pa.array(["00112233445566778899aabbccddeeff", None, "ffffffffffffffffffffffffffffffff"])
    mask = np.arange(32, dtype=np.uint8) % 16
    out = _xor_hex(ids, mask)
    assert out[1].as_py() is None
    expected = "".join(
        f"{int(c, 16) ^ int(m):x}" for c, m in zip(ids[0].as_py(), mask, strict=True)
    )
    assert out[0].as_py() == expected
    # The same mask twice gives the ids back; equal ids map to equal ids.
    assert _xor_hex(out, mask).to_pylist() == ids.to_pylist()
    again = _xor_hex(pa.array([ids[0].as_py()]), mask)
    assert again[0].as_py() == out[0].as_py()


def test_scale_duration_ms_multiplies_only_that_attribute() -> None:
    attrs = pa.chunked_array(
        [['{"http.route":"/a","duration_ms":10.5}', '{"user.id":"u-1"}', None]]
    )
    out = _scale_duration_ms(attrs, np.array([2.0, 3.0, 1.5])).to_pylist()
    assert out == ['{"http.route":"/a","duration_ms":21}', '{"user.id":"u-1"}', None]
