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


# ------------------------------------------------------------------------------------------------
# CPU per module, for the run's report (.ci/test-times adds it to the wall times, as for tests/'s
# classes): this process's CPU and that of the child processes it has waited for (spark-submit, the
# launcher, Airflow's processes stopped by the tests), summed over each module's tests, setup and
# teardown included, in <repo>/target/pytest-cpu.tsv. A measurement only: nothing is asserted.
# ------------------------------------------------------------------------------------------------

_CPU_REPORT = Path(__file__).resolve().parents[2] / "target" / "pytest-cpu.tsv"
_cpu_by_module: dict[str, list[float]] = {}


def _cpu_seconds() -> tuple[float, float]:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = _cpu_seconds()
    yield
    after = _cpu_seconds()
    module = "/".join(item.nodeid.split("::")[0].split("/")[-2:])  # tests/test_x.py, as .ci/test-times names it
    spent = _cpu_by_module.setdefault(module, [0.0, 0.0])
    spent[0] += after[0] - before[0]
    spent[1] += after[1] - before[1]


def pytest_sessionfinish(session, exitstatus):
    if _cpu_by_module:
        _CPU_REPORT.parent.mkdir(parents=True, exist_ok=True)
        _CPU_REPORT.write_text("".join(f"{m}\t{own:.1f}\t{children:.1f}\n" for m, (own, children) in sorted(_cpu_by_module.items())))
