"""Bisection for the largest privacy parameter that meets a target."""


def _largest(predicate, hi, lo=0.0):
    """Largest x in ``[lo, hi]`` with ``predicate(x)`` (predicate monotone,
    true at ``lo``): ``hi`` when it holds there, else bisection to a relative
    1e-15, returning the feasible end."""
    if predicate(hi):
        return hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if predicate(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return lo
