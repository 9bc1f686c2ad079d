#!/usr/bin/env python3
"""A browser for tests ($BROWSER): it follows the authorization URL's redirects with urllib, as
a person who approves at once would, until the redirect to the sign-in's loopback listener."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=20) as answer:
    answer.read()
