"""The spans-per-clearance tables of the OpenTelemetry page (docs/telemetry.md) are what the
volume command measures now, and the console cookbook prints the clearance span tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from meclear_integrations.cli.trace_volume import volume_table

ROOT = Path(__file__).resolve().parents[3]


def test_readme_table_is_the_measured_one() -> None:
    table = volume_table()
    assert table in (ROOT / "docs" / "telemetry.md").read_text(), table
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    engine = [int(c) for c in rows["engine"].split("|")[2:5]]
    assert engine[0] > engine[1] == engine[2] == 4  # the root and three stage spans


def test_readme_openinference_table_is_the_measured_one() -> None:
    pytest.importorskip("openinference.instrumentation.langchain")
    pytest.importorskip("openinference.instrumentation.llama_index")
    from meclear_integrations.cli.trace_volume import openinference_table

    table = openinference_table()
    assert table in (ROOT / "docs" / "telemetry.md").read_text(), table
    for line in table.splitlines()[2:]:
        evaluations, failures, stages = (int(c) for c in line.split("|")[2:5])
        assert evaluations > 52 and failures == stages == 4  # the clearance and its 3 stages


def test_public_surface() -> None:
    import meclear_integrations.telemetry as telemetry

    assert sorted(telemetry.__all__) == [
        "CAPTURE_CONTENT_ENV",
        "ClearanceScope",
        "TraceDetail",
        "TraceSettings",
        "clearance_scope",
    ]
