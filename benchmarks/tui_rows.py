"""The Requests pane with 50,000 rows: our virtual RowTable beside Textual's DataTable (time
from mount to the first rendered screen, and one keypress at the end of the list)."""

from __future__ import annotations

import asyncio
import time

from .common import row


async def _rowtable(n: int) -> tuple[float, float]:
    from perftriage.tui.app import PerftriageApp
    from tests.app_fixtures import fake_analyse

    app = PerftriageApp(["synthetic"], analyse=fake_analyse(n))
    async with app.run_test() as pilot:
        await app.workers.wait_for_complete()
        t = time.perf_counter()
        await pilot.pause()
        first = time.perf_counter() - t
        t = time.perf_counter()
        await pilot.press("G")
        await pilot.pause()
        return first, time.perf_counter() - t


async def _datatable(n: int) -> tuple[float, float]:
    from textual.app import App
    from textual.widgets import DataTable

    from tests.app_fixtures import synthetic_requests

    t_req = synthetic_requests(n)

    class Plain(App):
        def compose(self):
            yield DataTable()

    app = Plain()
    async with app.run_test() as pilot:
        table = app.query_one(DataTable)
        t = time.perf_counter()
        table.add_columns("duration", "start", "tid", "id", "uri")
        table.add_rows([(str(int(t_req.duration[i])), str(int(t_req.start[i])), str(int(t_req.tid[i])),
                         str(int(t_req.id[i])), t_req.fields["uri"][i]) for i in range(n)])
        await pilot.pause()
        first = time.perf_counter() - t
        t = time.perf_counter()
        table.focus()
        await pilot.press("end")
        await pilot.pause()
        return first, time.perf_counter() - t


def run(quick: bool = False) -> None:
    n = 5_000 if quick else 50_000
    ours = asyncio.run(_rowtable(n))
    theirs = asyncio.run(_datatable(n))
    row(f"RowTable, {n:,} rows: load+first render", f"{ours[0] * 1000:,.0f} ms", f"G: {ours[1] * 1000:,.0f} ms")
    row(f"DataTable, {n:,} rows: load+first render", f"{theirs[0] * 1000:,.0f} ms", f"end: {theirs[1] * 1000:,.0f} ms")
    row("ratio DataTable / RowTable (first render)", f"{theirs[0] / max(ours[0], 1e-9):,.0f}x")
