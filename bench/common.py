"""Timing helpers shared by the benchmarks: best-of-repeats wall time, so a
noisy shared machine disturbs the ratio as little as possible."""
import time


def best_time(fn, repeats=7, number=1):
    """Smallest wall time of `number` calls of fn, over `repeats` tries (s/call)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best
