"""The fault matrix: every operation, operator, the sensor and the trigger against every
applicable fault, each case judged by :mod:`tests.reliability.matrix` and recorded for
``docs/reliability.md`` (``make reliability``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.reliability.connections import quick_retries, use_connection
from tests.reliability.fault_catalog import ALL_FAULTS, MatrixFault
from tests.reliability.matrix import MatrixRunner, Outcome, expect
from tests.reliability.results import record
from tests.reliability.subjects import OPERATIONS, SUBJECTS, Layer, Subject

if TYPE_CHECKING:
    from collections.abc import Iterator

    from analytics_emulator.server import EmulatorServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GRID = [
    (order, subject, fault)
    for order, subject in enumerate(SUBJECTS)
    for fault in ALL_FAULTS
    if subject.streams or not fault.stream_only
]
CASES = [case for case in GRID if expect(case[1], case[2]).outcome is not Outcome.NOT_APPLICABLE]
NOT_APPLICABLE = [case for case in GRID if case not in CASES]


def case_id(order: int, subject: Subject, fault: MatrixFault) -> str:
    return f"{subject.row.replace(' ', '')}-{fault.key}"


@pytest.fixture(scope="module")
def runner(
    emulator: EmulatorServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MatrixRunner]:
    matrix = MatrixRunner(emulator, tmp_path_factory.mktemp("matrix"))
    for order, subject, fault in NOT_APPLICABLE:
        record("matrix", matrix.run(order, subject, fault, "unused").as_dict())
    try:
        yield matrix
    finally:
        matrix.admin.reset()
        matrix.close()


def test_the_grid_covers_every_operation_and_operator() -> None:
    targets = {subject.target for subject in SUBJECTS}
    names = {subject.name for subject in SUBJECTS}
    assert set(OPERATIONS) <= targets
    assert {
        "CreateUtmOperator",
        "DeleteUtmOperator",
        "UtmConversionOperator",
        "RegisterAccountOperator",
        "AccountActivationOperator",
        "CohortExportToParquetOperator",
        "FunnelReportOperator",
        "EventReportOperator",
        "TrackingPlanSyncOperator",
        "AnalyticsDataSensor",
        "AnalyticsDataReadyTrigger",
    } <= names
    assert len(CASES) > 300


OPERATION_CASES = [case for case in CASES if case[1].layer is Layer.OPERATION]
OPERATOR_CASES = [case for case in CASES if case[1].layer is not Layer.OPERATION]


@pytest.fixture
def connection(
    monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer, fault: MatrixFault
) -> None:
    """The case's connection, with read timeouts that suit its fault (short for a stall)."""
    use_connection(monkeypatch, emulator, **quick_retries(fault.read_timeout))


def run_case(runner: MatrixRunner, order: int, subject: Subject, fault: MatrixFault) -> None:
    report = runner.run(order, subject, fault, f"case-{order}-{ALL_FAULTS.index(fault)}")
    record("matrix", report.as_dict())
    assert not report.problems, "\n".join(report.problems)


@pytest.mark.usefixtures("connection")
class TestHookOperations:
    """Every operation of the interface through the hook (one pytest-xdist scope)."""

    @pytest.mark.parametrize(
        ("order", "subject", "fault"),
        OPERATION_CASES,
        ids=[case_id(*case) for case in OPERATION_CASES],
    )
    def test_fault(
        self, runner: MatrixRunner, order: int, subject: Subject, fault: MatrixFault
    ) -> None:
        run_case(runner, order, subject, fault)


@pytest.mark.usefixtures("connection")
class TestOperatorsSensorAndTrigger:
    """Every operator, the sensor and the trigger (another pytest-xdist scope)."""

    @pytest.mark.parametrize(
        ("order", "subject", "fault"),
        OPERATOR_CASES,
        ids=[case_id(*case) for case in OPERATOR_CASES],
    )
    def test_fault(
        self, runner: MatrixRunner, order: int, subject: Subject, fault: MatrixFault
    ) -> None:
        run_case(runner, order, subject, fault)
