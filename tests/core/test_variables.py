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


def test_a_package_index_or_git_setting_changes_what_runs():
    """Most servers run as `npx -y PKG` or `uvx PKG`: a variable that moves the registry or the
    index they install from chooses the code that runs (npm reads its settings in any case)."""
    from projector.core.variables import changes_what_runs

    for name in ("NPM_CONFIG_REGISTRY", "npm_config_registry", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL",
                 "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0"):
        assert changes_what_runs(name), name
    assert not changes_what_runs("MODE") and not changes_what_runs("UV_CACHE_DIR")
