"""The benchmark harness behind ``fastdata bench`` (ships in the wheel).

Variants are compared in one process session, interleaved round by round, so
that a noisy, shared machine slows all of them alike and the ratios hold.
"""
