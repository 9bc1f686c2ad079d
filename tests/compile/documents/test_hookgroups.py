"""Where projector's hook group stands once a hand edit took its dispatcher out (placed_by)."""

from __future__ import annotations

import json

from projector.compile.documents.hookgroups import placed_by


def _group(*commands: str) -> dict:
    return {"hooks": [{"type": "command", "command": command} for command in commands]}


def _ours(group: dict) -> bool:
    return all("dispatch" in h["command"] for h in group["hooks"])


def _partly(group: dict) -> bool:
    return any("dispatch" in h["command"] for h in group["hooks"])


def _at(groups: list[dict], lineup: list[dict | None]) -> int | None:
    digest = lambda group: json.dumps(group, sort_keys=True)  # noqa: E731
    return placed_by(groups, [None if g is None else digest(g) for g in lineup], _ours, digest, _partly)


MINE, OTHER = _group("my-guard"), _group("notify")


def test_the_group_in_projectors_place_that_none_of_the_users_is():
    assert _at([MINE, _group("edited")], [MINE, None]) == 1
    assert _at([_group("edited"), MINE], [None, MINE]) == 0


def test_one_that_still_runs_the_dispatcher_beside_a_handler_of_the_users_wherever_it_went():
    assert _at([OTHER, _group("projector dispatch X", "my-logger")], [None]) == 1


def test_not_to_be_told_is_not_projectors():
    assert _at([MINE, _group("projector dispatch X")], [MINE, None]) is None, "one runs the dispatcher: the view finds it"
    assert _at([MINE], [MINE, None]) is None, "projector's was taken out"
    assert _at([_group("my-guard --edited")], [MINE, None]) is None, "the user's own, edited, with projector's taken out"
    assert _at([OTHER, _group("edited")], [None]) is None, "two groups new to the list, neither told apart"
    assert _at([MINE, _group("edited")], [MINE]) is None, "a lineup without projector's place"
