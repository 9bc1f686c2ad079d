from projector.core.variables import (
    expand_folder,
    expand_value,
    folder_or_none,
    references,
    unset_references,
)


def test_references_and_unset_references_name_variables_only():
    assert references(["${A}:${B:-x}", "plain $C", "${A}"]) == ("A", "B")
    assert unset_references(["${SET}${UNSET}${DEFAULTED:-d}"], {"SET": "1"}) == ("UNSET",)


def test_values_expand_with_defaults_against_the_environment_given():
    assert expand_value("${PATH}:/x", {"PATH": "/bin"}) == "/bin:/x"
    assert expand_value("${MISSING:-d}", {}) == "d"
    assert expand_value("no variables", {}) == "no variables"


def test_a_folder_with_an_unset_variable_is_unknown():
    assert expand_folder("~/a/../b/", {"HOME": "/home/me"}) == "/home/me/b"
    assert folder_or_none("$NOPE/x", {"NOPE": ""}) is None
    assert folder_or_none("${W}/x", {"W": "/srv"}) == "/srv/x"
