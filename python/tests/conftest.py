"""Shared fixtures: the repository root, the built `gpugraph` binary and a TPC-H lineitem
table at SF 0.01 written by `gpugraph generate-table` (tpchgen) once per test session."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def gpugraph_binary() -> pathlib.Path:
    """GPUGRAPH_BIN, else the workspace's release build."""
    env = os.environ.get("GPUGRAPH_BIN")
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = pathlib.Path(env) if env else target / "release" / "gpugraph"
    if not path.exists():
        pytest.fail(f"{path} does not exist: build the workspace first (make build)")
    return path


@pytest.fixture(scope="session")
def lineitem(tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("tpch") / "lineitem.parquet"
    subprocess.run(
        [gpugraph_binary(), "generate-table", "--tpch", "lineitem", "--scale", "0.01",
         "--out", path],
        check=True,
        capture_output=True,
    )
    return path
