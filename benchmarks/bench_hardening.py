"""Issue 26: the attacks of the report, re-run against today's package.

Each attack is run against the current design and against an emulation of
the design it replaced (the package itself, with the one thing the issue
changed switched back by a monkeypatch), on the same data and seeds:

* ``accounted_fits``: two fits charged to one ``BudgetAccountant`` through
  ``BudgetedEstimator`` (``ClipNoiseMeanEstimator``, ε = 1 each, pure, box
  (-1, 1), 200 users) on datasets that differ in user 0, with a
  ``RandomState(0)`` seed. The attacker knows every other user and recovers
  user 0's mean as ``x0' + n (m1 − m2)``. Old design: copies of the
  instance repeat one stream (no fresh entropy) and the accountant hands
  out no stream. Reported: the attacker's error, and ``n·σ`` (σ the noise
  SD of one release), the error independent noise gives.
* ``leave_one_out``: ``cross_validate`` with ``LeaveOneGroupOut`` (40 users,
  4 features, ``RandomState(0)``): each fit's noise (its mean minus the
  training users' exact mean) and the closest pair of the 40 noises, in
  units of σ (0 when fits share noise: then every pair of fits gives the
  difference of two users exactly).
* ``search_winner``: ``PrivateGridSearch`` (seeded with ``RandomState(0)``)
  over two radii of ``ClipNoiseMeanEstimator``; the attacker refits a copy
  of the published winner on fake data of the same shape and subtracts its
  output. Old design: the winner kept the seed of its fit.
* ``auto_box``: the rate of garbage estimates (some ``|mean_j| > 1`` on
  standard-normal users' means) of ``ClipNoiseMeanEstimator()`` with a
  learned box over many seeds, and how many of them came with an
  ``AccuracyWarning`` that says the learned box may fail or that the noise
  swamps a feature. Old design: the 0.75-quantile spread up to a failure
  bound of 0.05 per column and a warning threshold of 0.05.

Run ``python benchmarks/bench_hardening.py`` (``--quick`` for a smoke
run); results go to ``benchmarks/results/hardening[_quick].{csv,json}``.
"""

import argparse
import contextlib
import itertools
import os
import sys
import warnings

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.model_selection import LeaveOneGroupOut, cross_validate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import write_results  # noqa: E402

import skuserdp.mechanisms._private_bounds as private_bounds  # noqa: E402
import skuserdp.model_selection._budgeted as budgeted  # noqa: E402
import skuserdp.model_selection._search as search_module  # noqa: E402
import skuserdp.utils._random as random_module  # noqa: E402
from skuserdp.exceptions import AccuracyWarning  # noqa: E402
from skuserdp.mean import ClipNoiseMeanEstimator  # noqa: E402
from skuserdp.model_selection import BudgetedEstimator, PrivateGridSearch  # noqa: E402
from skuserdp.privacy import BudgetAccountant  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--box-fits", type=int, default=2000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results"))
    return parser.parse_args(argv)


@contextlib.contextmanager
def patched(pairs):
    """Set ``(module, name, value)`` for the duration, then restore."""
    saved = [(m, n, getattr(m, n)) for m, n, _ in pairs]
    try:
        for m, n, v in pairs:
            setattr(m, n, v)
        yield
    finally:
        for m, n, v in saved:
            setattr(m, n, v)


def old_seeding():
    """Copies of a RandomState repeat one stream; no per-charge stream."""
    return patched([(random_module, "_os_entropy", lambda: 7),
                    (budgeted, "charged_fit_seed", lambda value, stream: value)])


def old_search():
    """The winner of a search keeps the seed of its fit."""
    return patched([(search_module, "forget_fit_seeds", lambda est, names: est)])


def old_box():
    return patched([(private_bounds, "SPREAD_FAILURE_MAX", 0.05),
                    (private_bounds, "BOUNDS_FAILURE_WARN", 0.05)])


def _neighbours(seed, n=200, d=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.8, 0.8, size=(3 * n, d))
    g = np.repeat(np.arange(n), 3)
    X_prime = X.copy()
    X_prime[g == 0] = rng.uniform(-0.8, 0.8, size=d)
    return X, X_prime, g


def accounted_fits(seed):
    X, X_prime, g = _neighbours(seed)
    est = BudgetedEstimator(ClipNoiseMeanEstimator(
        epsilon=1.0, delta=0.0, bounds=(-1, 1),
        random_state=np.random.RandomState(0)), BudgetAccountant(2.0))
    m1 = est.fit(X, groups=g).estimator_.mean_.copy()
    sigma = est.estimator_.noise_std_
    m2 = est.fit(X_prime, groups=g).estimator_.mean_
    x0, x0_prime = X[g == 0].mean(axis=0), X_prime[g == 0].mean(axis=0)
    error = float(np.linalg.norm(x0_prime + 200 * (m1 - m2) - x0))
    return error, 200 * sigma


def leave_one_out(seed, n=40, d=4):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.8, 0.8, size=(2 * n, d))
    g = np.repeat(np.arange(n), 2)
    est = ClipNoiseMeanEstimator(epsilon=1.0, delta=0.0, bounds=(-1, 1),
                                 random_state=np.random.RandomState(0))
    with sklearn.config_context(enable_metadata_routing=True), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = cross_validate(est, X, params={"groups": g}, cv=LeaveOneGroupOut(),
                             return_estimator=True)
    means = X.reshape(n, 2, d).mean(axis=1)
    noises = np.array([f.mean_ - np.delete(means, k, axis=0).mean(axis=0)
                       for k, f in enumerate(out["estimator"])])
    dist = np.linalg.norm(noises[:, None] - noises[None], axis=2)
    sigma = out["estimator"][0].noise_std_
    return float(dist[np.triu_indices(n, 1)].min()), sigma


def search_winner(seed, n=4000, d=2):
    g = np.repeat(np.arange(n), 2)
    X = np.full((2 * n, d), 0.25)  # every user's mean: 0.25 (on the lattice)
    X += np.random.default_rng(seed).integers(-2, 3, (1, d)) / 16.0
    truth = X[0]
    search = PrivateGridSearch(
        ClipNoiseMeanEstimator(bounds=(0, 1)), {"radius": [0.4, 0.8]},
        epsilon=1.0, delta=1e-6, loss_bound=2.0, tau=0.1, alpha=0.5,
        random_state=np.random.RandomState(seed)).fit(X, groups=g)
    best = search.best_estimator_
    m = search.n_users_train_
    copy_fit = clone(best).fit(np.full((m, d), 0.5), groups=np.arange(m))
    error = float(np.linalg.norm(best.mean_ - (copy_fit.mean_ - 0.5) - truth))
    return error, best.noise_std_


def auto_box(n, d, seeds):
    rng = np.random.default_rng(0)
    X, g = rng.normal(size=(2 * n, d)), np.repeat(np.arange(n), 2)
    garbage = warned_garbage = warned = 0
    worst = 0.0
    for s in seeds:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = ClipNoiseMeanEstimator(random_state=s).fit(X, groups=g)
        texts = [str(w.message) for w in caught if w.category is AccuracyWarning]
        says = any("learned box may miss" in t or "noise of this release" in t
                   for t in texts)
        warned += says
        top = float(np.abs(est.mean_).max())
        worst = max(worst, top)
        if top > 1.0:
            garbage += 1
            warned_garbage += says
    return dict(garbage=garbage, warned_garbage=warned_garbage, warned=warned,
                worst=worst)


def main(argv=None):
    args = parse_args(argv)
    reps = 3 if args.quick else args.reps
    fits = 100 if args.quick else args.box_fits
    rows = []
    designs = (("today", contextlib.nullcontext), ("old", old_seeding))
    for design, context in designs:
        for name, attack in (("accounted_fits", accounted_fits),
                             ("leave_one_out", leave_one_out)):
            for seed in range(reps):
                counter = itertools.count(1000 * seed)
                with patched([(random_module, "_os_entropy",
                               lambda c=counter: next(c))]), context():
                    error, scale = attack(seed)
                rows.append(dict(attack=name, design=design, seed=seed, error=error,
                                 scale=scale, ratio=error / scale))
    for design, context in (("today", contextlib.nullcontext), ("old", old_search)):
        for seed in range(reps):
            with context():
                error, scale = search_winner(seed)
            rows.append(dict(attack="search_winner", design=design, seed=seed,
                             error=error, scale=scale, ratio=error / scale))
    configs = [(1500, 3), (3000, 5), (2000, 10)] if not args.quick else [(3000, 5)]
    for design, context in (("today", contextlib.nullcontext), ("old", old_box)):
        for n, d in configs:
            with context():
                out = auto_box(n, d, range(fits))
            rows.append(dict(attack="auto_box", design=design, seed=f"{n}x{d}",
                             fits=fits, **out))
    summary = []
    for (attack, design), group in itertools.groupby(
            rows, key=lambda r: (r["attack"], r["design"])):
        group = list(group)
        if attack == "auto_box":
            for r in group:
                line = (f"{attack:15s} {design:6s} {r['seed']:8s} garbage "
                        f"{r['garbage']}/{r['fits']} (warned {r['warned_garbage']}), "
                        f"warned fits {r['warned']}, worst |mean| {r['worst']:.3g}")
                print(line)
                summary.append(line)
            continue
        ratio = np.array([r["ratio"] for r in group])
        line = (f"{attack:15s} {design:6s} error / (noise scale): median "
                f"{np.median(ratio):.3g}, min {ratio.min():.3g}, max {ratio.max():.3g} "
                f"over {len(group)} seeds")
        print(line)
        summary.append(line)
    stem = "hardening_quick" if args.quick else "hardening"
    write_results(args.output_dir, stem, rows, {"rows": rows, "summary": summary})


if __name__ == "__main__":
    main()
