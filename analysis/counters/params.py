"""What a user chooses for the counters across servers: PAD's thresholds, the correlations, the
points in time. No numpy here (see requests/params.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CorrelationParams:
    threshold: float = 0.9
    max_lag: int = 10
    lag_gain: float = 0.1
    max_cells: int = 20_000
    seed: int = 0


@dataclass
class TimeParams:
    z: float = 4.0  # robust z beyond which a counter is unusual at a point...
    min_counters: int = 0  # ...and this many unusual at once flag the server there (0: 2, or a tenth of the
    # counters where there are more than 20: chance coincidences grow with the number of counters)
    strong: float = 12.0  # one counter this far out flags it alone
    gap: int = 2  # flagged points at most this many points apart make one interval
    resolution_steps: float = 2.0  # spreads are never finer than this many steps of the series' resolution
    relative_floor: float = 0.005  # ... nor than this share of the series' usual level
    max_intervals: int = 12  # intervals reported as findings (all are in the result)
    tail: float = 0.1  # share of a series' points that may lie beyond z (more: its z is scaled down)
    edge_run: int = 3  # on a view of call edges (edges.py), one edge beyond z this many points in a row flags it
    window_run: int = 3  # in data of under four hours, a series without peers (judged against the stretch
    # before) counts where it stays beyond z this many points in a row: a count at 2 for one second is no incident
    sustained: bool = True  # a series beyond z over one long stretch (more than `tail` of its points, mostly
    # in one run) is a level change of its own: the tail's scaling would cut it into pieces or hide it
    short_stretch: int = 24  # ... and over one stretch of this many points or more, however short against the
    # data, where the series is quiet elsewhere (the stretch holds half its points beyond z): a level it held
    # for a while, one counter alone (0: only stretches of `tail` of the data)
    lone_point: bool = True  # an interval of one point needs 3 counters (or `need`, when more) beyond z at
    # once, or one half as far again as that counter went anywhere else, on any server (False: any flagged
    # point is an interval)


@dataclass
class CounterParams:
    server_x: float = 2.5  # X from which a (server, counter) pair is reported
    time_x: float = 2.5  # X from which a counter's fleet-wide median is reported (at >= 3 points)
    reference_x: float = 1.0  # X against the reference dataset
    min_gain: float = 0.8  # change-point fit (share of variance explained) needed to date a divergence
    paper_x: bool = False  # PAD's X (global std, the server included) instead of each server against the others
    all_peers: bool = False  # every server compared with all the others (PAD), not only with servers of its kind
    top: int = 8
    correlation: CorrelationParams = field(default_factory=CorrelationParams)
    correlate: tuple[str, ...] = ()  # counters of interest to correlate too: "NAME" (fleet) or "NAME@SERVER"
    over_time: TimeParams | None = field(default_factory=TimeParams)  # None: PAD's views only

    def validate(self) -> None:
        if min(self.server_x, self.time_x, self.reference_x) <= 0:
            raise ValueError("X thresholds must be positive")
