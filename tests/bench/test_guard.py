"""The speed guard's verdicts (bench/guard.py): a path more than 10% over its budget fails CI, and
so does a path measured without a budget, or a budget whose path is no longer measured."""

from __future__ import annotations

import json
import sys

import paths

sys.path.insert(0, str(paths.TESTS.parent / "bench"))
import guard  # noqa: E402

BUDGETS = {"status": {"instructions": 100_000_000, "reason": "r"}, guard.PER_CALL: {"instructions": 300_000, "reason": "r"}}


def test_up_to_ten_percent_over_passes_and_more_fails():
    rows, within = guard.verdicts({"status": 110_000_000, guard.PER_CALL: 250_000}, BUDGETS)
    assert within and [said.split(",")[0] for *_, said in rows] == ["ok", "ok"]
    rows, within = guard.verdicts({"status": 110_000_001, guard.PER_CALL: 300_000}, BUDGETS)
    assert not within and rows[0][3].startswith("OVER by 10.0%")


def test_a_path_without_a_budget_or_a_budget_without_its_path_fails():
    assert not guard.verdicts({"status": 1, guard.PER_CALL: 1, "new path": 1}, BUDGETS)[1]
    rows, within = guard.verdicts({"status": 100_000_000}, BUDGETS)
    assert not within and rows[-1][3].startswith("NOT MEASURED")


def test_every_budget_has_a_figure_and_a_reason_and_every_path_a_budget():
    spec = json.loads(guard.BUDGETS.read_text(encoding="utf-8"))
    assert all(isinstance(b["instructions"], int) and b["reason"].strip() for b in spec["budgets"].values())
    assert set(spec["budgets"]) == {"sync, nothing to change", "sync after a model edit", "status", "--help",
                                    "bridge: spawn → initialize, no KB", "bridge: spawn → initialize, proxied",
                                    guard.PER_CALL, "hook dispatch, no hook for the folder"}
