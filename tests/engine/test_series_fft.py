"""series_fft / series_ifft: the discrete Fourier transform, checked against numpy's FFT."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from bzrk.engine.oneshot import QueryError, execute_text

SINEWAVES = """
let sinewave=(x:double, period:double, gain:double=1.0, phase:double=0.0)
{
    gain*sin(2*pi()/period*(x+phase))
};
let n=128;
range x from 0 to n-1 step 1 | extend yr=sinewave(x, 8), yi=sinewave(x, 32)
| summarize x=make_list(x), y_real=make_list(yr), y_imag=make_list(yi)
"""


def table(backend: Any, kql: str) -> tuple[list[str], list[Any]]:
    result = execute_text(backend, kql).tables[0]
    assert len(result.rows) == 1
    return [c.name for c in result.columns], result.rows[0]


def test_the_reference_example_transforms_a_complex_sine_pair(chdb_backend: Any) -> None:
    names, row = table(
        chdb_backend,
        SINEWAVES + "| extend (fft_y_real, fft_y_imag) = series_fft(y_real, y_imag)",
    )
    values = dict(zip(names, row, strict=True))
    signal = np.array(values["y_real"]) + 1j * np.array(values["y_imag"])
    expected = np.fft.fft(signal)
    np.testing.assert_allclose(values["fft_y_real"], expected.real, atol=1e-9)
    np.testing.assert_allclose(values["fft_y_imag"], expected.imag, atol=1e-9)
    # a sine of period 8 in the real part and of period 32 in the imaginary part: the energy
    # sits in bins n/8 and n/32 and their mirrors
    magnitude = np.hypot(values["fft_y_real"], values["fft_y_imag"])
    assert sorted(np.argsort(magnitude)[-4:].tolist()) == [4, 16, 112, 124]


def test_the_inverse_gives_the_series_back(chdb_backend: Any) -> None:
    names, row = table(
        chdb_backend,
        SINEWAVES
        + "| extend (fft_y_real, fft_y_imag) = series_fft(y_real, y_imag)"
        + "| extend (y_real2, y_imag2) = series_ifft(fft_y_real, fft_y_imag)",
    )
    values = dict(zip(names, row, strict=True))
    np.testing.assert_allclose(values["y_real2"], values["y_real"], atol=1e-9)
    np.testing.assert_allclose(values["y_imag2"], values["y_imag"], atol=1e-9)


@pytest.mark.parametrize("n", [1, 5, 12, 37])
def test_any_length_matches_numpy(chdb_backend: Any, n: int) -> None:
    rng = np.random.default_rng(n)
    series = rng.normal(size=n).round(6).tolist()
    names, row = table(
        chdb_backend, f"print y = dynamic({json.dumps(series)}) | extend series_fft(y)"
    )
    assert names == ["y", "series_fft_y_real", "series_fft_y_imag"]
    expected = np.fft.fft(series)
    np.testing.assert_allclose(row[1], expected.real, atol=1e-9)
    np.testing.assert_allclose(row[2], expected.imag, atol=1e-9)
    _, inverse = table(
        chdb_backend, f"print y = dynamic({json.dumps(series)}) | project series_ifft(y)"
    )
    expected_inverse = np.fft.ifft(series)
    np.testing.assert_allclose(inverse[0], expected_inverse.real, atol=1e-9)
    np.testing.assert_allclose(inverse[1], expected_inverse.imag, atol=1e-9)


def test_nulls_count_as_zero_and_an_empty_series_stays_empty(chdb_backend: Any) -> None:
    _, row = table(chdb_backend, "print y = dynamic([1, null, 'a', 3]) | project series_fft(y)")
    expected = np.fft.fft([1, 0, 0, 3])
    np.testing.assert_allclose(row[0], expected.real, atol=1e-12)
    np.testing.assert_allclose(row[1], expected.imag, atol=1e-12)
    _, empty = table(chdb_backend, "print y = dynamic([]) | project (re, im) = series_fft(y)")
    assert empty == [[], []]


def test_a_series_fft_outside_extend_or_project_is_a_coded_error(chdb_backend: Any) -> None:
    with pytest.raises(QueryError) as caught:
        execute_text(
            chdb_backend, "print y = dynamic([1, 2]) | where array_length(series_fft(y)) > 0"
        )
    assert caught.value.code == "UnsupportedConstruct"
    assert "extend (a, b) = series_fft" in str(caught.value)


def test_a_literal_argument_leaves_the_name_part_empty(chdb_backend: Any) -> None:
    # Kusto.Language names these series_fft__real, series_stats__min (no "None" in between)
    names, _ = table(chdb_backend, "print series_fft(dynamic([1, 2]))")
    assert names == ["series_fft__real", "series_fft__imag"]
    names, _ = table(chdb_backend, "print x = 1 | extend series_stats(dynamic([1, 2]))")
    assert names[:3] == ["x", "series_stats__min", "series_stats__min_idx"]


def test_a_series_longer_than_the_cap_is_null(chdb_backend: Any) -> None:
    from bzrk.engine.compile.functions.series.fourier import MAX_POINTS

    kql = (
        f"range x from 1 to {MAX_POINTS + 1} step 1 | summarize y = make_list(x) "
        "| extend (re, im) = series_fft(y) | project isnull(re), isnull(im)"
    )
    _, row = table(chdb_backend, kql)
    assert row == [True, True]
