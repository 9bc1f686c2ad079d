"""core.checking's name rules and its one notion of a token written out (the model's pasted
token_env, and what import keeps out of the model)."""

from __future__ import annotations

import pytest

from projector.core.checking import PROVIDER_NAME, VARIABLE_NAME, looks_like_token, pasted_token
from projector.core.resources import schema


def test_the_name_patterns_are_the_models_own():
    """One rule: what the schema says a provider's and a variable's name are (``^...$`` there, fullmatch here)."""
    defs = schema("model")["$defs"]
    assert f"^{PROVIDER_NAME.pattern}$" == defs["name"]["pattern"]
    assert f"^{VARIABLE_NAME.pattern}$" == defs["varName"]["pattern"]
    assert PROVIDER_NAME.fullmatch("docs\n") is None and VARIABLE_NAME.fullmatch("DOCS\n") is None, "a newline ends no name"


TOKENS = ["ghp_" + "aB3dE5fG7h" * 4, "sk-proj-" + "aB3dE5fG7h" * 4, "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z", "xoxa-2-1234567890-abcdefghij",
          "ya29.a0AfH6SMBx0123456789", "Bearer aB3dE5fG7hJ9kL1m", "AKIAIOSFODNN7EXAMPLE"]
NOT_TOKENS = ["--max-old-space-size=4096", "123e4567-e89b-12d3-a456-426614174000", "c7c2448b8153e7375980ce439d50d7228552e1ac",
              "qwen-3-235b-a22b-instruct-2507", "GITHUB_PERSONAL_ACCESS_TOKEN_FOR_THE_CI_MACHINE_V2", "Bearer ${GITHUB_TOKEN}",
              "Run In Production Mode On Port 8080", "sk-SK", "DOCS_TOKEN"]


@pytest.mark.parametrize("value", TOKENS)
def test_a_token_written_out_looks_like_one_and_is_refused_as_a_token_env(value):
    assert looks_like_token(value)
    assert pasted_token(value, "my-docs").startswith("this looks like a token itself, not the NAME of a variable")


@pytest.mark.parametrize("value", NOT_TOKENS)
def test_options_ids_hashes_names_and_references_are_no_tokens(value):
    """Real values from the corpus's configs (a Node option, a model id, a plugin's commit), a
    UUID, variable names: import keeps them as they are, and the model takes a name."""
    assert not looks_like_token(value)
    assert pasted_token(value, "my-docs") is None


def _messages(oauth: dict) -> list[str]:
    from projector.core.checking import schema_problems

    return [p.message for p in schema_problems({"version": 1, "providers": {"docs": {"url": "https://d.dev/mcp", "oauth": oauth}}}, "f")]


def test_a_value_its_pattern_refuses_is_told_what_it_should_be_not_called_a_kb_name():
    """Every pattern but the KB name's was said to be "not a usable KB name" (an OAuth scope, a
    client metadata URL); a token pasted where a variable's name belongs is never said back."""
    assert sorted(_messages({"client_metadata_url": "http://o.dev/c.json", "scopes": ["a b"], "client_id": "a b"})) == [
        'providers.docs.oauth.client_id: "a b" has white space in it, which it cannot have',
        'providers.docs.oauth.client_metadata_url: "http://o.dev/c.json" is not an https:// URL with a path (https://host/path)',
        'providers.docs.oauth.scopes[0]: "a b" is not an OAuth scope: printable characters without spaces, quotes or backslashes']
    pasted = _messages({"client_id": "app", "client_secret_env": "sk-proj-" + "aB3dE5fG7h" * 3})
    assert pasted == ["providers.docs.oauth.client_secret_env: this looks like a token itself, not the NAME of a variable: keep the "
                      "token out of this file (export DOCS_CLIENT_SECRET=... in your shell's profile, or your secret manager) and write "
                      "client_secret_env: DOCS_CLIENT_SECRET; if it is a real token, treat it as exposed and replace it"]
    assert _messages({"client_id": "app", "client_secret_env": "my-secret"}) == [
        'providers.docs.oauth.client_secret_env: "my-secret" is not a variable name: use letters, digits and "_", not starting with a digit']
