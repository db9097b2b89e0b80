"""What a user chooses for the deviating threads of thread pools. No numpy here (see
requests/params.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ThreadParams:
    replicates: int = 1000  # bootstrap replicates per scale
    blocks: int = 100  # time blocks resampled by the bootstrap
    au: float = 0.80  # the paper's p < 80 test
    ridge: float = 1e-6
    window: int = 10  # samples per moving window (70 s at 7 s)
    window_z: float = 2.5  # a short excursion this many times the abstractions' spread flags it...
    window_share: float = 10.0  # ...and, for a share of the thread's time (%), moves it this many points
    separation: float = 2.6  # an abstraction's median distance to the others, over the typical one
    windows: bool = True
    departure: float = 6.0  # a level held apart from the others this many times their usual spread...
    sustain: float = 0.05  # ...over at least this share of the run's windows...
    run_share: float = 1.0  # ...by at least this many points for a share of the thread's time (%)...
    # ...and this many times the departure the median abstraction holds: where every one departs
    # now and then (prefork workers each serving requests in turn) departing is the habit
    habit: float = 3.0
    seed: int = 0
    workers: int | None = None  # bootstrap processes (None: one per scale, at most the cores)

    def validate(self) -> None:
        if self.replicates < 10:
            raise ValueError("replicates must be at least 10")
        if self.blocks < 4:
            raise ValueError("blocks must be at least 4")
        if not 0 < self.au < 1:
            raise ValueError("au must be in (0, 1)")
