#!/usr/bin/env python3
"""A person at a browser, for tests ($BROWSER, or imported): opens an address, follows its
redirects with cookies kept, and submits every form the pages show, as someone who signs in
and approves would: hidden fields as they are, a text field left empty gets a login name, a
password field a password, until a page comes with no form (the sign-in's loopback redirect
answered, or the authorization server's "you may close this window").

It works with oidc-provider's own pages (devInteractions: login, consent; the device flow's
code entry and confirmation) with urllib and html.parser only."""

from __future__ import annotations

import sys
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from http.cookiejar import CookieJar

PERSON = "ada"
PASSWORD = "any password"


class Form:
    def __init__(self, action: str, method: str) -> None:
        self.action = action
        self.method = method.lower()
        self.fields: dict[str, str] = {}


class Forms(HTMLParser):
    """The page's forms and what a person would put in their fields."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(Form(found.get("action", ""), found.get("method", "get")))
        elif tag == "input" and self.forms and found.get("name"):
            kind = found.get("type", "text")
            value = found.get("value", "")
            if not value and kind == "password":
                value = PASSWORD
            elif not value and kind in ("text", "email"):
                value = PERSON
            self.forms[-1].fields[found["name"]] = value


def visit(url: str, pages: int = 12) -> str:
    """Open ``url`` and go through its forms; the last page's text."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with opener.open(url, timeout=20) as answer:
        page, where = answer.read().decode(errors="replace"), answer.geturl()
    for _ in range(pages):
        parser = Forms()
        parser.feed(page)
        if not parser.forms:
            return page
        form = parser.forms[0]
        target = urllib.parse.urljoin(where, form.action)
        data = urllib.parse.urlencode(form.fields).encode()
        request = urllib.request.Request(target, data=data, method="POST") if form.method == "post" else \
            urllib.request.Request(f"{target}?{data.decode()}")
        with opener.open(request, timeout=20) as answer:
            page, where = answer.read().decode(errors="replace"), answer.geturl()
    raise RuntimeError(f"still a form after {pages} pages, at {where}")


if __name__ == "__main__":
    visit(sys.argv[1])
