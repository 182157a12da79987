"""Timing helpers shared by the benchmarks. The machines are noisy (2 shared
cores), so contenders are measured in alternation, many short rounds each,
and the best round of each is compared: a burst of load then hits both."""
import time


def best_times(contenders, rounds=15, number=1):
    """{name: smallest seconds per call over `rounds` rounds of `number`
    calls}, the contenders (a dict name -> callable) taking turns."""
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / number)
    return best
