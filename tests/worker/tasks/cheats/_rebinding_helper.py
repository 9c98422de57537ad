"""Helper of helper_rebinds.py: rebinds the clock when imported."""
import time

time.perf_counter = lambda: 0.0  # cheat
