"""``make bench``: speed and memory figures, each printed beside its reference measured in the
same run (babeltrace2's C reader, Textual's DataTable, the papers' timings)."""
