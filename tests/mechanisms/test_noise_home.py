"""One home for noise: mechanisms/ draws it, calibrate_noise chooses it.

* No module of skuserdp outside :mod:`skuserdp.mechanisms` calls a random
  draw (an AST walk of the source, not a grep), except the generators of
  synthetic data and audits (``datasets/``, ``testing/``, ``_demo.py``) and
  the data-independent randomness listed, each with its reason, in
  ``ALLOWED``. A planted draw is caught (positive control).
* No module outside it builds a noise object or calls a calibration of one
  noise type by hand: releases get their noise from ``calibrate_noise``.
* :func:`skuserdp.mechanisms.calibrate_noise` maps each budget type to its
  noise class with the parameters of the type's own calibration, and the
  noise's privacy map meets the budget within the stated tolerance.
* :func:`skuserdp.mechanisms.lattice_sensitivity` is the widened radius of
  the lattice encoding, doubled for replace-one.
"""

import ast
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import skuserdp
import skuserdp.mechanisms._samplers as samplers
from skuserdp.mechanisms import (
    DiscreteGaussianNoise,
    DiscreteLaplaceNoise,
    calibrate_discrete_gaussian,
    calibrate_noise,
    choose_grid,
    encode_contributions,
    lattice_sensitivity,
)
from skuserdp.privacy import (
    ZCDP,
    ApproxDP,
    PureDP,
    classical_gaussian_sigma,
    zcdp_rho_for,
    zcdp_to_approx_dp,
)

PACKAGE = Path(skuserdp.__file__).resolve().parent

#: the package's raw samplers (called by name or as attributes)
SAMPLERS = {name for name in samplers.__all__ if name != "round_up_fraction"}

#: methods of numpy's Generator and RandomState and functions of the
#: standard library's random module that draw, the raw samplers, and the
#: ``sample`` method of the noise objects
DRAWS = (
    {name for cls in (np.random.Generator, np.random.RandomState)
     for name in dir(cls) if not name.startswith("_")}
    | {name for name in dir(random) if not name.startswith("_")
       and callable(getattr(random, name))
       and not isinstance(getattr(random, name), type)}
    | SAMPLERS | {"sample"}
) - {"bit_generator", "spawn", "get_state", "set_state", "seed", "getstate",
     "setstate"}

#: modules whose functions, imported by name, draw
RANDOM_MODULES = {"random", "numpy.random", "skuserdp.mechanisms._samplers",
                  "mechanisms._samplers", "_samplers"}

#: receivers whose attributes of those names are not draws (``np.power``,
#: ``special.gamma``, ``math.gamma``, ``stats.f``); ``np.random.<draw>`` is
#: still caught, its receiver being ``np.random``
NOT_RANDOM = {"np", "numpy", "math", "special", "stats", "scipy"}

#: generators of synthetic data and audits, not of releases
SYNTHETIC = ("datasets/", "testing/", "_demo.py")

#: every draw left outside mechanisms/ -- module, enclosing function, draw:
#: why it is not noise. Each is independent of the data and drawn from a
#: stream of its own.
ALLOWED_TABLE = """
mean/_concentration.py private_tau permutation: random pairing of the users
    for the pairwise distances (a random partition of the users)
mean/_person_level.py _run_1d permutation: random split of the
    users between the coarse, recentring and fine stages
mean/_person_level.py _run_threaded permutation: random split of the
    users between the stages of the multivariate estimator
mean/_person_level.py _run_pure permutation: random split of
    the users between the stages of the pure estimator
linear_model/_sgd.py phased_erm permutation: random partition of the users
    into the phases
model_selection/_search.py PrivateGridSearch.fit permutation: random split
    of the users into training and validation users
utils/_random.py _draw_words integers: seeding -- advances a caller's
    Generator by 256 bits to seed the fit's SeedSequence (never released)
utils/_random.py _draw_words randint: seeding -- the same for a caller's
    RandomState
utils/_random.py random_subset choice: random subset of the users
linear_model/_regression_intervals.py _noise_draws normal: parametric
    bootstrap of conf_int -- simulated noise of the released statistics' law
    (post-processing of released values, its own child SeedSequence; never
    added to a release)
linear_model/_regression_intervals.py _noise_draws laplace: the same under
    pure DP
linear_model/_regression_intervals.py bootstrap_interval standard_normal:
    the same bootstrap's simulated sampling error of the users
linear_model/_dpsgd_groups.py group_assignment permutation: random partition
    of the users into the K disjoint groups of interval="groups"
    (data-independent, its own child SeedSequence)
"""
ALLOWED = {
    tuple(entry.split(":")[0].split()): " ".join(entry.split(":", 1)[1].split())
    for entry in ALLOWED_TABLE.replace("\n    ", " ").strip().splitlines()
}


def _drawn_name(call, imported):
    """The draw ``call`` makes, or None. An attribute call draws if its name
    does (``rng.normal``, ``np.random.laplace``, ``noise.sample``) unless its
    receiver is a module of non-random functions; a call by bare name draws
    if the name was imported from a random module or is a raw sampler."""
    func = call.func
    if isinstance(func, ast.Attribute):
        receiver = func.value
        if func.attr in DRAWS and not (isinstance(receiver, ast.Name)
                                       and receiver.id in NOT_RANDOM):
            return func.attr
    elif isinstance(func, ast.Name) and func.id in (imported | SAMPLERS):
        return func.id
    return None


def draws_in(source):
    """Every draw in ``source``: (enclosing function or method, draw, line)."""
    tree = ast.parse(source)
    imported = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom)
                and node.module in RANDOM_MODULES
                for alias in node.names if alias.name in DRAWS}
    found = []

    def walk(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef)):
                inner = child.name if scope == "<module>" else f"{scope}.{child.name}"
            if isinstance(child, ast.Call):
                drawn = _drawn_name(child, imported)
                if drawn is not None:
                    found.append((scope, drawn, child.lineno))
            walk(child, inner)

    walk(tree, "<module>")
    return found


def _scanned_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("mechanisms/") or rel.startswith(SYNTHETIC):
            continue
        yield rel, path


def _draws_outside_mechanisms():
    return {(rel, function, attr): line
            for rel, path in _scanned_modules()
            for function, attr, line in draws_in(path.read_text(encoding="utf-8"))}


def test_no_module_outside_mechanisms_draws_noise():
    assert len(ALLOWED) == 13 and all(len(key) == 3 and reason
                                      for key, reason in ALLOWED.items())
    found = _draws_outside_mechanisms()
    unexpected = {key: line for key, line in found.items() if key not in ALLOWED}
    assert not unexpected, (
        "random draws outside skuserdp/mechanisms/ (move them into mechanisms/, "
        f"or allow them with a reason if they are not noise): {unexpected}")
    stale = set(ALLOWED) - set(found)
    assert not stale, f"allowed draws no longer in the source: {stale}"


#: what chooses or builds a noise object by hand
NOISE_BUILDERS = {"DiscreteGaussianNoise", "DiscreteLaplaceNoise",
                  "calibrate_discrete_laplace", "calibrate_discrete_gaussian",
                  "calibrate_discrete_gaussian_rho", "round_up_fraction"}


def builders_in(source):
    """Every call of a noise builder in ``source``: (name, line)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name in NOISE_BUILDERS:
                found.append((name, node.lineno))
    return found


def test_noise_is_chosen_only_by_calibrate_noise():
    # outside mechanisms/, a release gets its noise from calibrate_noise
    found = {rel: builders_in(path.read_text(encoding="utf-8"))
             for rel, path in _scanned_modules()}
    assert not {rel: calls for rel, calls in found.items() if calls}
    planted = "noise = DiscreteGaussianNoise(round_up_fraction(s * s))\n"
    assert [name for name, _ in builders_in(planted)] == [
        "DiscreteGaussianNoise", "round_up_fraction"]


def test_the_scan_reads_the_release_modules_and_skips_mechanisms():
    scanned = {rel for rel, _ in _scanned_modules()}
    assert {"mean/_clip_noise.py", "mean/_few_users.py", "mean/_winsorized.py",
            "linear_model/_linear_regression.py", "utils/_random.py"} <= scanned
    assert not any(rel.startswith("mechanisms/") for rel in scanned)


@pytest.mark.parametrize("planted", [
    "rng.normal(size=3)",
    "np.random.default_rng(0).standard_normal(3)",
    "np.random.laplace(0.0, 1.0)",
    "self._rng.random()",
    "generator_from(seed).gumbel(size=4)",
    "noise.sample(3, rng)",
    "sample_discrete_gaussian(sigma2, 3, rng)",
    "random.gauss(0.0, 1.0)",
    "gauss(0.0, 1.0)",
    "normal(size=3)",
    "rng.integers(10)",
    "rng.exponential()",
])
def test_the_scan_catches_a_planted_draw(planted):
    # positive control: the release site of ClipNoise with one draw planted
    # (and, for a call by bare name, its import)
    source = (PACKAGE / "mean" / "_clip_noise.py").read_text(encoding="utf-8")
    assert not draws_in(source)
    marker = "    seed_sequence = make_seed_sequence(random_state)\n"
    assert marker in source
    source = ("from random import gauss\nfrom numpy.random import normal\n"
              "from ..mechanisms._samplers import sample_discrete_gaussian\n"
              + source)
    planted_source = source.replace(marker, marker + f"    _ = {planted}\n")
    assert [(f, line) for f, _, line in draws_in(planted_source)] == [
        ("_release", source[:source.index(marker)].count("\n") + 2)]


@pytest.mark.parametrize("code", [
    "np.power(2.0, 3)", "special.gamma(2.5)", "math.gamma(3.0)",
    "stats.f(2, 3)", "np.random.default_rng(0)", "rng.spawn(2)",
    "round_up_fraction(0.5)", "calibrate_noise(budget, 1.0)",
    "f = abs\nf(2)", "from numpy.random import default_rng\ndefault_rng(0)",
])
def test_the_scan_ignores_what_does_not_draw(code):
    assert draws_in(code) == []


# ----------------------------------------------------------- calibrate_noise
SENSITIVITIES = [0.3, 1.0, 4.0, 2050.0, 3.7e6]


def _relative_shortfall_bound(noise):
    """The stated tolerance: the parameter is rounded up by < 2^-20 (and σ²
    gets a relative margin of 1e-12), up to float round-off (1e-15)."""
    if isinstance(noise, DiscreteLaplaceNoise):
        return 2.0 ** -20 / float(noise.scale) + 1e-15
    return 1e-12 + 2.0 ** -20 / float(noise.sigma2) + 1e-15


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 7.0])
def test_pure_budget_gives_discrete_laplace_at_epsilon(sensitivity, epsilon):
    noise = calibrate_noise(PureDP(epsilon), sensitivity)
    assert type(noise) is DiscreteLaplaceNoise
    assert noise.scale >= Fraction(sensitivity) / Fraction(epsilon)
    assert noise.scale - Fraction(sensitivity / epsilon) < Fraction(1, 2 ** 20)
    loss = noise.privacy(sensitivity)
    assert isinstance(loss, PureDP)
    assert loss.epsilon == pytest.approx(epsilon, rel=_relative_shortfall_bound(noise))
    assert loss.epsilon <= epsilon


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
@pytest.mark.parametrize("rho", [1e-4, 0.125, 1.0, 30.0])
def test_zcdp_budget_gives_discrete_gaussian_at_rho(sensitivity, rho):
    noise = calibrate_noise(ZCDP(rho), sensitivity)
    assert type(noise) is DiscreteGaussianNoise
    assert noise.sigma2 >= Fraction(sensitivity) ** 2 / (2 * Fraction(rho))
    loss = noise.privacy(sensitivity)
    assert isinstance(loss, ZCDP)
    assert loss.rho == pytest.approx(rho, rel=_relative_shortfall_bound(noise))
    assert loss.rho <= rho


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-6), (1.0, 1e-6), (4.0, 1e-9),
                                           (1.0, 0.3)])
def test_approx_budget_gives_the_discrete_gaussian_of_its_rho(sensitivity, epsilon,
                                                              delta):
    noise = calibrate_noise(ApproxDP(epsilon, delta), sensitivity)
    assert type(noise) is DiscreteGaussianNoise
    rho = zcdp_rho_for(epsilon, delta)
    loss = noise.privacy(sensitivity)
    assert loss.rho == pytest.approx(rho, rel=_relative_shortfall_bound(noise))
    assert loss.rho <= rho
    assert zcdp_to_approx_dp(loss, delta).epsilon <= epsilon * (1 + 1e-9)
    assert noise == calibrate_discrete_gaussian(sensitivity, epsilon, delta)


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
def test_approx_budget_paper_calibration_is_the_classical_sigma(sensitivity):
    noise = calibrate_noise(ApproxDP(0.5, 1e-5), sensitivity, calibration="paper")
    sigma = classical_gaussian_sigma(sensitivity, 0.5, 1e-5)
    assert float(noise.sigma2) == pytest.approx(
        sigma * sigma, rel=_relative_shortfall_bound(noise))
    assert noise.sigma2 >= Fraction(sigma) ** 2
    with pytest.raises(ValueError, match="epsilon < 1"):
        calibrate_noise(ApproxDP(1.5, 1e-5), sensitivity, calibration="paper")


def test_calibration_only_matters_for_an_approx_budget():
    for budget in (PureDP(0.7), ZCDP(0.2)):
        assert (calibrate_noise(budget, 3.0, calibration="paper")
                == calibrate_noise(budget, 3.0))


@pytest.mark.parametrize("budget,error,match", [
    (ApproxDP(1.0, 0.0), ValueError, "delta"),
    ((1.0, 1e-6), TypeError, "PureDP, ZCDP or ApproxDP"),
    (1.0, TypeError, "PureDP, ZCDP or ApproxDP"),
])
def test_calibrate_noise_refuses_what_it_cannot_calibrate(budget, error, match):
    with pytest.raises(error, match=match):
        calibrate_noise(budget, 1.0)
    with pytest.raises(ValueError, match="calibration"):
        calibrate_noise(ApproxDP(1.0, 1e-6), 1.0, calibration="analytic")


# ------------------------------------------------------- lattice_sensitivity
@pytest.mark.parametrize("norm,term", [("l2", lambda d: math.sqrt(d)),
                                       ("l1", lambda d: d), ("linf", lambda d: 1)])
@pytest.mark.parametrize("dim", [1, 4, 100])
def test_lattice_sensitivity_is_twice_the_widened_radius(norm, term, dim):
    grid = 2.0 ** -10
    assert lattice_sensitivity(1.5, grid, dim, norm) == 2 * (1.5 / grid
                                                             + term(dim) / 2)


@pytest.mark.parametrize("dim", [1, 5, 64])
def test_lattice_sensitivity_l2_of_linf_contributions(dim):
    grid = 2.0 ** -8
    r_units = 0.75 / grid + 0.5
    assert lattice_sensitivity(0.75, grid, dim, "linf", sensitivity_norm="l2") == (
        2 * r_units * math.sqrt(dim))
    assert (lattice_sensitivity(0.75, grid, dim, "linf", sensitivity_norm="linf")
            == lattice_sensitivity(0.75, grid, dim, "linf"))
    for norm, other in [("l2", "l1"), ("l1", "l2"), ("linf", "l1")]:
        with pytest.raises(ValueError, match="sensitivity_norm"):
            lattice_sensitivity(0.75, grid, dim, norm, sensitivity_norm=other)


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_lattice_sensitivity_bounds_the_encoded_sums_of_neighbours(norm):
    # replace-one: two neighbouring encoded sums differ by the two users'
    # encoded contributions, whose norms the encoder bounds by half of it
    rng = np.random.default_rng(0)
    d, n, radius = 7, 50, 1.3
    grid = choose_grid(radius, d, n, norm)
    bound = lattice_sensitivity(radius, grid, d, norm)
    order = {"l1": 1, "l2": 2, "linf": np.inf}[norm]
    for _ in range(20):
        pair = rng.normal(size=(2, d)) * rng.uniform(0.1, 10.0)
        K = encode_contributions(pair, center=0.0, radius=radius, grid=grid,
                                 norm=norm)
        assert np.linalg.norm(K[0] - K[1], ord=order) <= bound
