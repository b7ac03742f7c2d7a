"""The .ts (UEA archive) reader on small handwritten files."""

import numpy as np
import pytest

from rankmetric.datasets import read_ts
from rankmetric.datasets._loaders import resample_trials
from rankmetric.datasets._ts import parse_ts

TINY = """\
# a comment, then headers in mixed case
@problemName Tiny
@timeStamps false
@missing true
@univariate false
@dimensions	2
@equalLength false
@classLabel true up down

@data
1.0,2.0,3.0:4.0,?,6.0:up
7,8:9,10:down
0.5,0.25,NaN,1:1,2,3,4:up
"""


def test_reads_headers_values_missing_and_unequal_lengths(tmp_path):
    path = tmp_path / "tiny.ts"
    path.write_text(TINY)
    data = read_ts(path)
    assert data.header["problemname"] == "Tiny" and data.header["dimensions"] == "2"
    assert data.class_labels == ("up", "down")
    np.testing.assert_array_equal(data.labels, ["up", "down", "up"])
    np.testing.assert_array_equal(data.lengths, [3, 2, 4])
    assert data.n_channels == 2
    np.testing.assert_array_equal(data.series[0], [[1, 2, 3], [4, np.nan, 6]])
    np.testing.assert_array_equal(data.series[1], [[7, 8], [9, 10]])
    np.testing.assert_array_equal(data.series[2], [[0.5, 0.25, np.nan, 1], [1, 2, 3, 4]])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("@problemName x\n@classLabel true a\n1,2:a\n", "expected a '@' header"),
        ("@problemName x\n@classLabel true a\n", "no @data"),
        ("@classLabel true a\n@data\n", "empty"),
        ("@timeStamps true\n@classLabel true a\n@data\n(0,1):a\n", "time stamps"),
        ("@classLabel false\n@data\n1,2\n", "no class labels"),
        ("@classLabel true a\n@data\n1,2:3,4:a\n1,2:a\n", "has 1 channels"),
        ("@dimensions 3\n@classLabel true a\n@data\n1,2:3,4:a\n", "@dimensions says 3"),
        ("@classLabel true a\n@data\n1,2:3:a\n", "differ in length"),
        ("@classLabel true a\n@data\n1,x:a\n", "non-numeric"),
    ],
)
def test_malformed_files_raise(text, message):
    with pytest.raises(ValueError, match=message):
        parse_ts(text)


def test_resampling_is_linear_interpolation():
    ramp = np.vstack([np.arange(3.0), 10 * np.arange(3.0)])  # (2 channels, length 3)
    same = np.arange(10.0).reshape(2, 5)
    out = resample_trials([ramp, same], 5)
    np.testing.assert_allclose(out[0], [np.linspace(0, 2, 5), np.linspace(0, 20, 5)])
    np.testing.assert_array_equal(out[1], same)
    # brute force against np.interp on a random trial
    rng = np.random.default_rng(0)
    trial = rng.standard_normal((3, 7))
    grid = np.linspace(0, 6, 29)
    expected = np.stack([np.interp(grid, np.arange(7), channel) for channel in trial])
    np.testing.assert_allclose(resample_trials([trial], 29)[0], expected)
