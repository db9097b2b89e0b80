"""Reading LTTng CTF traces (through babeltrace2's bt2) into columnar chunks."""
