"""The numpy entry points against numpy itself: random inputs at boundary sizes (around the
GPU primitives' tile and workgroup sizes), empty inputs, wrapping, NaN handling, and the
TypeErrors/ValueErrors for dtypes and shapes the primitives do not take."""

import numpy as np
import pytest

import gpugraph

SIZES = [0, 1, 2, 255, 256, 257, 1023, 1024, 1025, 4097, 65_537]
DTYPES = [np.uint32, np.int32, np.float32]


def random(dtype, n, rng):
    if dtype == np.float32:
        return rng.standard_normal(n).astype(np.float32) * 1000
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)


def check_stable_order(keys, idx, descending):
    """idx is a permutation ordering keys (without NaNs) stably."""
    assert sorted(idx.tolist()) == list(range(len(keys)))
    k = keys[idx]
    for i in range(1, len(k)):
        a, b = k[i - 1], k[i]
        if a == b:
            assert idx[i - 1] < idx[i], f"unstable at {i}"
        else:
            assert (a > b) if descending else (a < b), f"out of order at {i}: {a}, {b}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_sort_and_argsort_match_numpy(dtype, n):
    rng = np.random.default_rng(n + 7)
    a = random(dtype, n, rng)
    if n > 4:
        a[: n // 4] = a[n // 2]  # many equal keys: stability matters
    got = gpugraph.sort(a)
    assert got.dtype == a.dtype and got.shape == a.shape
    np.testing.assert_array_equal(got, np.sort(a, kind="stable"))
    idx = gpugraph.argsort(a)
    assert idx.dtype == np.uint32
    np.testing.assert_array_equal(idx, np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(gpugraph.sort(a, descending=True), np.sort(a)[::-1])
    if n <= 5000:
        check_stable_order(a, gpugraph.argsort(a, descending=True).astype(np.int64), True)


def test_sort_of_a_large_float_array_matches_numpy():
    a = np.random.default_rng(5).standard_normal(1_000_003).astype(np.float32)
    np.testing.assert_array_equal(gpugraph.sort(a), np.sort(a))
    np.testing.assert_array_equal(gpugraph.argsort(a), np.argsort(a, kind="stable"))


def test_float_sort_puts_nans_last_and_keeps_infinities():
    a = np.array([3.0, np.nan, -np.inf, 1.0, np.nan, np.inf, -2.0], dtype=np.float32)
    got = gpugraph.sort(a)
    np.testing.assert_array_equal(got[:5], [-np.inf, -2.0, 1.0, 3.0, np.inf])
    assert np.isnan(got[5:]).all()
    np.testing.assert_array_equal(gpugraph.argsort(a), [2, 6, 3, 0, 5, 1, 4])
    desc = gpugraph.sort(a, descending=True)
    np.testing.assert_array_equal(desc[:5], [np.inf, 3.0, 1.0, -2.0, -np.inf])
    assert np.isnan(desc[5:]).all()


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
@pytest.mark.parametrize("n", SIZES)
def test_cumsum_matches_numpy_wrapping_in_its_dtype(dtype, n):
    rng = np.random.default_rng(n + 11)
    a = random(dtype, n, rng)
    got = gpugraph.cumsum(a)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, np.cumsum(a, dtype=dtype))


def test_cumsum_wraps_at_the_32_bit_boundary():
    a = np.array([0xFFFFFFFF, 1, 2], dtype=np.uint32)
    np.testing.assert_array_equal(gpugraph.cumsum(a), [0xFFFFFFFF, 0, 2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_compact_matches_boolean_indexing(dtype, n):
    rng = np.random.default_rng(n + 13)
    a = random(dtype, n, rng)
    mask = rng.random(n) < 0.3
    got = gpugraph.compact(a, mask)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got.view(np.uint32), a[mask].view(np.uint32))
    np.testing.assert_array_equal(gpugraph.compact(a, mask.astype(np.uint32) * 7), a[mask])
    assert len(gpugraph.compact(a, np.zeros(n, bool))) == 0
    np.testing.assert_array_equal(gpugraph.compact(a, np.ones(n, bool)), a)


@pytest.mark.parametrize("n", SIZES)
def test_histogram_matches_numpy(n):
    rng = np.random.default_rng(n + 17)
    # Half-integer values never sit on the integer edges, so float32 and numpy's float64
    # bin arithmetic agree exactly.
    a = (rng.integers(0, 100, size=n) + 0.5).astype(np.float32)
    edges = np.array([0, 1, 5, 10, 50, 99, 100], dtype=np.float32)
    counts, e = gpugraph.histogram(a, edges)
    np.testing.assert_array_equal(counts, np.histogram(a, edges)[0])
    np.testing.assert_array_equal(e, edges)
    counts, e = gpugraph.histogram(a, 10, range=(0.0, 100.0))
    want, want_edges = np.histogram(a, 10, range=(0.0, 100.0))
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_allclose(e, want_edges)
    assert counts.dtype == np.int64


def test_histogram_closes_the_last_bin_and_skips_outliers_and_nans():
    a = np.array([0.0, 1.0, 2.0, 3.0, 4.0, -1.0, 5.0, np.nan], dtype=np.float32)
    counts, _ = gpugraph.histogram(a, np.array([0, 2, 4], dtype=np.float32))
    np.testing.assert_array_equal(counts, [2, 3])
    counts, edges = gpugraph.histogram(a[:5], 2)
    np.testing.assert_array_equal(counts, np.histogram(a[:5], 2)[0])
    np.testing.assert_allclose(edges, [0, 2, 4])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("groups", [1, 7, 300])
def test_group_by_mean_matches_numpy(n, groups):
    rng = np.random.default_rng(n + groups)
    keys = rng.integers(0, groups, size=n).astype(np.uint32)
    values = rng.standard_normal(n).astype(np.float32)
    counts, means = gpugraph.group_by_mean(keys, values, groups)
    want_counts = np.bincount(keys, minlength=groups)
    sums = np.bincount(keys, weights=values.astype(np.float64), minlength=groups)
    np.testing.assert_array_equal(counts, want_counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = sums / want_counts
    np.testing.assert_allclose(means, want, rtol=1e-4, atol=1e-5, equal_nan=True)
    assert np.isnan(means[want_counts == 0]).all()


def test_group_by_mean_skips_non_finite_values_and_defaults_groups():
    keys = np.array([0, 1, 1, 2, 2], dtype=np.int32)
    values = np.array([1.0, 2.0, np.nan, np.inf, 4.0], dtype=np.float32)
    counts, means = gpugraph.group_by_mean(keys, values)
    np.testing.assert_array_equal(counts, [1, 1, 1])
    np.testing.assert_array_equal(means, [1.0, 2.0, 4.0])


@pytest.mark.parametrize("shape", [(1, 1), (1, 8), (4, 4), (8, 32), (64, 64), (256, 128)])
def test_fft2_matches_numpy(shape):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    got = gpugraph.fft2(a)
    assert got.dtype == np.complex64 and got.shape == a.shape
    want = np.fft.fft2(a.astype(np.complex128))
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-5 * scale * np.log2(a.size + 1) + 1e-6
    back = gpugraph.fft2(got, inverse=True)
    np.testing.assert_allclose(back, a, rtol=0, atol=1e-4 * np.log2(a.size + 2))


@pytest.mark.parametrize(
    "call, dtype",
    [
        (gpugraph.sort, "float64"),
        (gpugraph.argsort, "int64"),
        (gpugraph.cumsum, "float32"),
        (gpugraph.cumsum, "int64"),
        (lambda a: gpugraph.compact(a, np.ones(len(a), bool)), "float64"),
        (lambda a: gpugraph.histogram(a, 4), "float64"),
        (lambda a: gpugraph.group_by_mean(np.zeros(len(a), np.uint32), a), "float64"),
        (lambda a: gpugraph.group_by_mean(a, np.zeros(len(a), np.float32)), "int64"),
    ],
)
def test_unsupported_dtypes_raise_type_error_naming_the_dtype(call, dtype):
    a = np.arange(8).astype(dtype)
    with pytest.raises(TypeError, match=dtype):
        call(a)


def test_bad_shapes_and_values_raise_value_error():
    with pytest.raises(ValueError, match="1-D"):
        gpugraph.sort(np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="complex128"):
        gpugraph.fft2(np.zeros((4, 4), np.complex128))
    with pytest.raises(ValueError, match="power"):
        gpugraph.fft2(np.zeros((4, 6), np.complex64))
    with pytest.raises(ValueError, match="mask has 3 elements"):
        gpugraph.compact(np.zeros(4, np.uint32), np.ones(3, bool))
    with pytest.raises(ValueError, match="edge"):
        gpugraph.histogram(np.zeros(4, np.float32), np.array([1, 0], np.float32))
    with pytest.raises(ValueError, match="negative"):
        gpugraph.group_by_mean(np.array([-1], np.int32), np.zeros(1, np.float32))
