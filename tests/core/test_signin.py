"""core.signin: whether a browser can open where a sign-in runs."""

from __future__ import annotations

from projector.core.signin import headless


def test_a_browser_is_used_unless_none_can_open():
    assert not headless({"BROWSER": "firefox", "SSH_CONNECTION": "1 2 3 4"})  # $BROWSER is asked for: use it
    assert headless({"DISPLAY": ":0", "SSH_TTY": "/dev/pts/1"})  # over SSH the display is the remote machine's
    assert not headless({"DISPLAY": ":0"}) and not headless({"WAYLAND_DISPLAY": "wayland-0"})
