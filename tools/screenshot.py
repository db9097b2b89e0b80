"""Save an SVG screenshot of the app on a trace: ``.venv/bin/python tools/screenshot.py OUT.svg [PATH] [--keys K ...]``
(perftriage installed, as ``make run`` or ``make test`` leave it)."""

from __future__ import annotations

import argparse
import asyncio

from perftriage.tui.app import PerftriageApp


async def shoot(out: str, paths: list[str], keys: list[str], size: tuple[int, int]) -> None:
    app = PerftriageApp(paths)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for k in keys:
            await pilot.press(k)
            await pilot.pause()
        await pilot.pause(0.3)
        app.save_screenshot(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("paths", nargs="*", default=["sample_traces/webserver"])
    p.add_argument("--keys", nargs="*", default=[])
    p.add_argument("--size", default="120x34")
    a = p.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    asyncio.run(shoot(a.out, a.paths, a.keys, (w, h)))


if __name__ == "__main__":
    main()
