"""Kneedle (Satopää et al., 2011), offline: the knee or elbow of a curve.

Normalise x and y to [0, 1] and turn the curve into a concave increasing one (a decreasing
convex curve, such as k-means inertia against k, becomes ``1 - y``; an increasing convex one,
such as sorted k-distances, is mirrored on both axes). The knee is where the difference curve
``yd = yn - xn`` is largest: the point furthest above the diagonal. (The online variant confirms
the first local maximum followed by a drop of ``S * mean(diff(xn))``; on a noisy curve of
thousands of points such as a k-distance curve, that confirms the first wiggle, so the offline
maximum is used.)
"""

from __future__ import annotations

import numpy as np


def kneedle(x, y, curve: str = "convex", direction: str = "decreasing") -> int | None:
    """Index (into x/y, x increasing) of the knee, or None when the curve is flat or too short."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    xn = (x - x.min()) / np.ptp(x)
    yn = (y - y.min()) / np.ptp(y)
    if curve == "convex" and direction == "decreasing":
        yd = (1.0 - yn) - xn
    elif curve == "convex" and direction == "increasing":
        yd = xn - yn  # mirrored on both axes: (1 - y) - (1 - x)
    elif curve == "concave" and direction == "increasing":
        yd = yn - xn
    else:  # concave decreasing: mirrored on x
        yd = yn - (1.0 - xn)
    i = int(np.argmax(yd))
    if yd[i] <= 0:
        return None
    return i
