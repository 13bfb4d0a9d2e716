"""Run one subject against one fault and judge the outcome.

The outcome of a case is *recovered* (the same result, platform state and output as a run
without the fault) or *failed* (an exception). Each case is compared with what the rules
promise (:func:`expect`): which faults a caller must get past and which error type, with which
words, it must fail with otherwise. Whatever the outcome, the integrity checks must hold: no
temporary or partial object at the destination, no object at all after a failure, no duplicate
rows or records, and for a safe subject a rerun after the failure that gives the fault-free
result, so nothing is lost.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout
from analytics_emulator.campaigns import CampaignSpec

from airflow_provider_analytics.client import (
    AnalyticsProtocolError,
    AnalyticsQuotaExceededError,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsStreamError,
    AnalyticsTransportError,
)
from airflow_provider_analytics.export.stream import ExportIncompleteError
from airflow_provider_analytics.operators.campaigns import UtmReadBackError
from tests.emulator_helpers import EmulatorAdmin
from tests.reliability.fault_catalog import (
    ALL_FAULTS,
    STALL_SECONDS,
    Family,
    MatrixFault,
)
from tests.reliability.subjects import (
    EXPORT_COHORT,
    OPERATIONS,
    Layer,
    Outputs,
    Subject,
    TriggerErrorEvent,
    Workspace,
    normalise,
    outputs,
)

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

EXPORT_OPERATOR: Final = "CohortExportToParquetOperator"
IDLE_WITHIN: Final = STALL_SECONDS / 2
"""How long the emulator may take, once a run has returned, to finish the requests of the case
(a stalled create goes on after its client gave up). Shorter than a stall, so a client that
keeps a stalled connection open is reported instead of waited out."""
_PROBE_CAMPAIGN: Final = CampaignSpec("https://probe.example.com/", "probe", "probe", "probe")
"""Created once (then reset away) to learn the id a reset emulator gives its first link."""


class Outcome(StrEnum):
    RECOVERED = "recovered"
    FAILED = "failed"
    NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class Expectation:
    """What a case must end in.

    :param outcome: recovered, failed, or n/a (the cell is not run).
    :param error: the exception type a failure must be an instance of.
    :param says: fragments the failure's message must contain.
    :param reason: why the cell is not applicable.
    """

    outcome: Outcome
    error: type[BaseException] | None = None
    says: tuple[str, ...] = ()
    reason: str = ""
    fallback: bool = False
    """Recovered by reading the cohort in pages instead (``mode="auto"``): the output equals a
    clean run's and the result names the fallback; the rest of the result says pages."""

    def label(self) -> str:
        if self.outcome is Outcome.FAILED and self.error is not None:
            return f"failed: {self.error.__name__}"
        return str(self.outcome)


RECOVERS: Final = Expectation(Outcome.RECOVERED)
RECOVERS_BY_PAGES: Final = Expectation(Outcome.RECOVERED, fallback=True)


def failure(error: type[BaseException], *says: str) -> Expectation:
    return Expectation(Outcome.FAILED, error, says)


def not_applicable(reason: str) -> Expectation:
    return Expectation(Outcome.NOT_APPLICABLE, reason=reason)


def _client_expectation(target: str, fault: MatrixFault) -> Expectation:
    """How the client itself must handle ``fault`` on operation ``target``."""
    operation = OPERATIONS[target]
    once_and_safe = operation.idempotent and not fault.persistent
    unknown = () if operation.idempotent else ("outcome is unknown",)
    named = f"{target}:"
    family = fault.family
    if family is Family.SERVER_ERROR:
        if once_and_safe:
            return RECOVERS
        return failure(AnalyticsServerError, named, "server error after", *unknown)
    if family is Family.RATE_LIMITED:
        if not fault.persistent:
            return RECOVERS
        return failure(AnalyticsRateLimitError, named, "still rate limited")
    if family is Family.NOT_COMPLETED:
        return failure(AnalyticsQuotaExceededError, named, "quota")
    if family in (Family.RESET, Family.STALL):
        if once_and_safe:
            return RECOVERS
        return failure(AnalyticsTransportError, named, "no complete answer", *unknown)
    if family in (Family.STREAM_CUT, Family.STREAM_MALFORMED, Family.STREAM_STALL):
        return failure(AnalyticsStreamError, named, "run the export again")
    if family is Family.STREAM_SLOW:
        return RECOVERS
    return not_applicable(
        "a stream that ends cleanly but early cannot be told from a complete one by the "
        "stream alone (it carries no row count); the export job compares with the cohort's "
        "size, see the CohortExportToParquetOperator row"
    )


def _export_job_expectation(fault: MatrixFault, base: Expectation) -> Expectation:
    """The export job retries broken streams, transport failures, server errors, rate limits and
    short counts whole."""
    incomplete = failure(
        ExportIncompleteError,
        f"cohort '{EXPORT_COHORT}'",
        "export failed after 2 attempts",
        "nothing written",
    )
    if fault.family in (
        Family.STREAM_CUT,
        Family.STREAM_MALFORMED,
        Family.STREAM_STALL,
        Family.STREAM_SHORT,
    ):
        if not fault.persistent:
            return RECOVERS
        if fault.family in (Family.STREAM_CUT, Family.STREAM_SHORT):
            return RECOVERS_BY_PAGES  # a stream cut on every try: auto mode reads pages
        return incomplete
    if base.error is AnalyticsServerError and fault.persistent:
        return RECOVERS_BY_PAGES  # the stream's server errors on every try: pages instead
    if base.error in (
        AnalyticsServerError,
        AnalyticsTransportError,
        AnalyticsStreamError,
        AnalyticsRateLimitError,
    ):
        return incomplete
    return base


_SENSOR_WAITS_THROUGH = (
    AnalyticsServerError,
    AnalyticsRateLimitError,
    AnalyticsTransportError,
    AnalyticsProtocolError,
)
"""The failures the faults cause that say they are transient (5xx, 429, dropped connections,
garbled bodies): a sensor waits through them until its timeout. Written out here, apart from
the errors' own answer, so that the matrix checks it."""


def expect(subject: Subject, fault: MatrixFault) -> Expectation:
    """The outcome the provider promises for ``fault`` aimed at ``subject``."""
    if fault.stream_only and not subject.streams:
        return not_applicable("stream faults exist for the cohort export only")
    if subject.layer is Layer.TRIGGER and fault.persistent:
        return not_applicable(
            "the trigger polls on through transient failures by design; the task's deferral "
            "timeout ends the wait (the sensor row shows the timeout)"
        )
    base = _client_expectation(subject.target, fault)
    if subject.name == EXPORT_OPERATOR and subject.target == "export_cohort_users":
        return _export_job_expectation(fault, base)
    if base.outcome is not Outcome.FAILED:
        return base
    if subject.name == "CreateUtmOperator" and subject.target == "get_utm":
        return failure(UtmReadBackError, *base.says, "was created", "do not create it again")
    if subject.layer is Layer.SENSOR:
        if base.error is not None and issubclass(base.error, _SENSOR_WAITS_THROUGH):
            return failure(AirflowSensorTimeout, "timed out")
        return failure(AirflowFailException, "cannot succeed", *base.says)
    if subject.layer is Layer.TRIGGER:
        return failure(TriggerErrorEvent, *base.says)
    return base


@dataclass
class Observation:
    """What one run left: its (normalised) result, the platform's state and the outputs."""

    result: Any
    effects: Any
    outputs: Outputs


@dataclass
class CaseReport:
    """The judged case, as recorded for the report."""

    order: int
    row: str
    subject: str
    layer: str
    target: str
    fault: str
    fault_order: int
    fault_description: str
    stream_fault: bool
    expected: str
    outcome: str
    error_type: str | None = None
    message: str | None = None
    hits: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class MatrixAdmin(EmulatorAdmin):
    """The admin API plus the pending faults, to tell whether a fault was hit."""

    def pending_times(self) -> int:
        pending = self._call("GET", "faults")["pending"]
        return sum(int(fault["times"]) for fault in pending)


class MatrixRunner:
    """Runs cases on one emulator, keeping each subject's fault-free run for comparison.

    :param server: the emulator (with its admin API).
    :param root: a folder for the cases' destinations.
    """

    def __init__(self, server: EmulatorServer, root: Path) -> None:
        self.server = server
        self.admin = MatrixAdmin(server)
        self.root = root
        self.baselines: dict[str, Observation] = {}
        self.admin.reset()
        self.first_campaign_id = server.state.campaigns.create(_PROBE_CAMPAIGN, None)
        self.admin.reset()

    def close(self) -> None:
        self.admin.close()

    def workspace(self, name: str) -> Workspace:
        directory = self.root / name
        directory.mkdir(parents=True)
        return Workspace(self.server, directory, self.first_campaign_id)

    def observe(self, subject: Subject, ws: Workspace, result: Any) -> Observation:
        return Observation(
            normalise(result, ws), normalise(subject.effects(ws), ws), outputs(ws.directory)
        )

    def baseline(self, subject: Subject, slug: str) -> Observation:
        """The subject's result without any fault (computed once per subject)."""
        if slug not in self.baselines:
            ws = self.workspace(f"baseline-{slug}")
            self.admin.reset()
            subject.prepare(ws)
            self.baselines[slug] = self.observe(subject, ws, subject.run(ws))
        return self.baselines[slug]

    def run(self, order: int, subject: Subject, fault: MatrixFault, slug: str) -> CaseReport:
        """Run ``subject`` with ``fault`` armed and judge it; ``slug`` names the case."""
        expected = expect(subject, fault)
        report = CaseReport(
            order=order,
            row=subject.row,
            subject=subject.name,
            layer=str(subject.layer),
            target=subject.target,
            fault=fault.key,
            fault_order=ALL_FAULTS.index(fault),
            fault_description=fault.description,
            stream_fault=fault.stream_only,
            expected=expected.label(),
            outcome=str(Outcome.NOT_APPLICABLE),
        )
        if expected.outcome is Outcome.NOT_APPLICABLE:
            report.message = expected.reason
            return report
        baseline = self.baseline(subject, subject.row)
        ws = self.workspace(slug)
        self.admin.reset()
        subject.prepare(ws)
        self.admin.fault(subject.target, fault.kind, times=fault.times, **fault.args)
        result: Any = None
        error: BaseException | None = None
        try:
            result = subject.run(ws)
        except Exception as exc:
            error = exc
        still_served = self.admin.wait_until_idle(IDLE_WITHIN)
        report.hits = fault.times - self.admin.pending_times()
        self.admin.clear_faults()
        observed = self.observe(subject, ws, result)
        problems = report.problems
        if still_served:
            problems.append(
                f"{still_served} request(s) still served {IDLE_WITHIN:g} s after the run: a "
                "connection the client gave up on was left open"
            )
        if report.hits < 1:
            problems.append(f"the fault was never hit: {subject.target} was not called")
        problems += _integrity(
            subject, observed, baseline, failed=error is not None, fallback=expected.fallback
        )
        if error is None:
            report.outcome = str(Outcome.RECOVERED)
        else:
            report.outcome = str(Outcome.FAILED)
            report.error_type = type(error).__name__
            report.message = normalise(str(error), ws)
            if not subject.creates:
                problems += self._rerun(subject, ws, baseline)
        problems += _against_expectation(expected, error)
        return report

    def _rerun(self, subject: Subject, ws: Workspace, baseline: Observation) -> list[str]:
        """After a failure the same run without the fault must give the fault-free outcome."""
        try:
            again = self.observe(subject, ws, subject.run(ws))
        except Exception as exc:
            return [f"the rerun after the failure failed too: {type(exc).__name__}: {exc}"]
        problems = []
        if again.effects != baseline.effects:
            problems.append(
                "the rerun after the failure left another platform state than a clean run: "
                + _difference(again.effects, baseline.effects)
            )
        if again.outputs != baseline.outputs:
            problems.append(
                "the rerun after the failure wrote other output than a clean run: "
                + _difference(again.outputs, baseline.outputs)
            )
        return problems


def _integrity(
    subject: Subject,
    observed: Observation,
    baseline: Observation,
    *,
    failed: bool,
    fallback: bool = False,
) -> list[str]:
    """No partial or temporary object, no duplicates, and a recovery equal to the clean run."""
    problems = []
    if observed.outputs.hidden:
        problems.append(f"temporary objects left behind: {observed.outputs.hidden}")
    for name, summary in observed.outputs.objects.items():
        if summary.get("repeated_ids"):
            problems.append(f"{name} repeats {summary['repeated_ids']} user ids")
    if isinstance(observed.result, dict) and observed.result.get("repeated_ids"):
        problems.append(f"the result repeats {observed.result['repeated_ids']} user ids")
    if failed:
        if observed.outputs.objects:
            problems.append(f"a failed run left objects: {sorted(observed.outputs.objects)}")
        if isinstance(baseline.effects, list) and len(observed.effects) > len(baseline.effects):
            problems.append(
                f"duplicates: {len(observed.effects)} records where a clean run makes "
                f"{len(baseline.effects)}"
            )
        return problems
    checked = [("result", observed.result, baseline.result)]
    if fallback:  # read in pages: another result, the same output
        checked = []
        if not (isinstance(observed.result, dict) and observed.result.get("fallback")):
            problems.append(f"recovered without naming the fallback to pages: {observed.result}")
    for what, seen, clean in (
        *checked,
        ("platform state", observed.effects, baseline.effects),
        ("output", observed.outputs, baseline.outputs),
    ):
        if seen != clean:
            problems.append(
                f"recovered with another {what} than a clean run: {_difference(seen, clean)}"
            )
    return problems


def _difference(seen: Any, clean: Any) -> str:
    return f"{_shorten(seen)} instead of {_shorten(clean)}"


def _shorten(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _against_expectation(expected: Expectation, error: BaseException | None) -> list[str]:
    if expected.outcome is Outcome.RECOVERED:
        if error is None:
            return []
        return [f"expected to recover, failed: {type(error).__name__}: {error}"]
    if error is None:
        return [f"expected to fail ({expected.label()}), but it succeeded"]
    problems = []
    if expected.error is not None and not isinstance(error, expected.error):
        problems.append(f"expected {expected.label()}, got {type(error).__name__}: {error}")
    missing = [fragment for fragment in expected.says if fragment not in str(error)]
    if missing:
        problems.append(f"the message lacks {missing}: {error}")
    return problems
