"""The checks both latency benches apply to their interleaved codeLens/hover rounds: latency that
grows with the requests served (something accumulates), as opposed to noise anywhere."""


def growing_tail(samples_s, slack_ms=5.0, factor=2.0):
    """True when the slowest sample of the last quarter exceeds `factor` times the slowest of the
    first quarter plus `slack_ms`: latency that grows with the requests served (something
    accumulates), as opposed to one noisy sample anywhere. Fewer than 8 samples: False."""
    if len(samples_s) < 8:
        return False
    q = len(samples_s) // 4
    first, last = max(samples_s[:q]) * 1000.0, max(samples_s[-q:]) * 1000.0
    return last > factor * first + slack_ms


def percentile(sorted_ms, p):
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_ms) - 1) * p / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def windows_ms(samples_s, size=100):
    """p50/p99/max (ms) of each run of `size` consecutive samples, in order: a latency that
    grows with the session shows as later windows getting slower. A shorter last run is left
    out, so every window has the same number of samples."""
    out = []
    for start in range(0, len(samples_s) - size + 1, size):
        xs = sorted(s * 1000.0 for s in samples_s[start:start + size])
        out.append({"first": start + 1, "last": start + size, "p50": percentile(xs, 50),
                    "p99": percentile(xs, 99), "max": xs[-1]})
    return out


def last_window_grew(samples_s, size=100, factor=1.5):
    """True when the last window's p99 is more than `factor` times the first's. Fewer than two
    windows: False."""
    w = windows_ms(samples_s, size)
    return len(w) >= 2 and w[-1]["p99"] > factor * w[0]["p99"]
