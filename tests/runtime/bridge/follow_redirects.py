#!/usr/bin/env python3
"""A browser for tests ($BROWSER): it follows the authorization URL's redirects with urllib, as
a person who approves at once would, until the redirect to the sign-in's loopback listener.
With $BROWSER_COUNT set, each time it is opened adds a line to that file."""

import os
import sys
import urllib.request

if os.environ.get("BROWSER_COUNT"):
    with open(os.environ["BROWSER_COUNT"], "a") as count:
        count.write("opened\n")
with urllib.request.urlopen(sys.argv[1], timeout=20) as answer:
    answer.read()
