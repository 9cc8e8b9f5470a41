"""Caches that live for one command or API call, and the call that ends them.

Some stages remember results keyed by the program they came from (a method's lint, its
nodes by name), so that a fix trial does not compute them again. Those entries hold whole
programs: a view of 100,000 instructions is over a million objects. A command drops them
all when it ends (`clear`), so they are freed there, once, not at interpreter exit, where
freeing them costs several times more, nor never, in a process that goes on. The console
script, whose process ends right after the command, does not free them at all
(`cli.main(exiting=True)`).
"""

from __future__ import annotations

_CACHES: list[dict] = []


def run_cache() -> dict:
    """A new dict that `clear` empties at the end of every command."""
    cache: dict = {}
    _CACHES.append(cache)
    return cache


_KEPT = run_cache()


def keep(*objects: object) -> None:
    """Hold `objects` (a command's findings and report) until the run ends: freeing a
    check's tens of thousands of findings as the command returns costs as much as one
    more stage, and the console script ends right after it (see `clear`)."""
    _KEPT[len(_KEPT)] = objects


def clear() -> None:
    """End the run: empty every run cache."""
    for cache in _CACHES:
        cache.clear()
