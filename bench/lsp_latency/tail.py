"""The growing-tail check both latency benches apply to their interleaved codeLens/hover rounds."""


def growing_tail(samples_s, slack_ms=5.0, factor=2.0):
    """True when the slowest sample of the last quarter exceeds `factor` times the slowest of the
    first quarter plus `slack_ms`: latency that grows with the requests served (something
    accumulates), as opposed to one noisy sample anywhere. Fewer than 8 samples: False."""
    if len(samples_s) < 8:
        return False
    q = len(samples_s) // 4
    first, last = max(samples_s[:q]) * 1000.0, max(samples_s[-q:]) * 1000.0
    return last > factor * first + slack_ms
