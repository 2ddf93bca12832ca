"""Fixtures shared by the Python test modules."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import testing  # noqa: E402


@pytest.fixture(scope="session")
def speed_layer(tmp_path_factory) -> testing.LakehouseBuild:
    """One lakehouse built by the real speed layer (testing.build_lakehouse) for the whole session: the
    modules that need one copy it (testing.copy_lakehouse) and never write to this one."""
    build = testing.build_lakehouse(tmp_path_factory.mktemp("speed-layer") / "speed-layer")
    print(f"\nspeed layer: lakehouse built in {build.seconds:.0f} s\n{build.output}")
    return build
