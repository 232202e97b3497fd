"""The real-Flink tier: the probe built once per session (hack/build-flink-probe.sh; a skip locally without Java or
Maven, a failure on CI)."""

from pathlib import Path

import pytest

from tests.flink_job import FlinkUnavailable, ProbeFailed, build_probes
from tests.support import on_ci


@pytest.fixture(scope="session")
def flink_probes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        return build_probes(tmp_path_factory.getbasetemp() / "build-flink-probe.log")
    except FlinkUnavailable as error:
        if on_ci():
            pytest.fail(f"CI must run the real-Flink tier: {error}", pytrace=False)
        pytest.skip(str(error))
    except ProbeFailed as error:
        pytest.fail(str(error), pytrace=False)
