"""``python -m skuserdp report``: a private estimate of a table's means, with
error bars and an error-versus-ε plot from public plans (issues 16, 26, 28).

What is computed from the private data is one fit of
:class:`~skuserdp.mean.UserMeanEstimator` at the requested budget (charged
and printed). Everything else is a function of public values and of that
fit's private outputs: the error bars are the fit's 95 % confidence
intervals (:meth:`~skuserdp.mean.UserMeanEstimator.conf_int`: the sampling
of the users and the privacy noise, from statistics the fit released and
charged to its budget, ``ci_share`` of it) when the fit offers them, and
otherwise the privacy noise's 95 % range from the public plan
(``noise_std_``: the noise only, which the report says, with the reason
there is no interval), and the curves of expected error against ε come
from the plans of the estimator the fit used
(:class:`~skuserdp.mean.ColumnScaledMeanEstimator`), of the per-column
Laplace peer and of a joint Gaussian, for the same number of
users, features and box (declared, or the released ``bounds_``). The
private data are never used to draw the curves.

The steps before the fit, each a small pure function:

1. :func:`read_csv_cells` reads the cells as text (a row with too many or
   too few cells is refused with its line number);
2. :func:`check_ids` refuses rows without a user id (:data:`MISSING_SPELLINGS`);
3. :func:`select_columns` chooses the feature columns: the ones named by
   ``columns`` (a public schema), or, without it, the columns whose every
   non-missing cell is a number (schema inference: a curator step before the
   release, outside the DP guarantee);
4. :func:`user_table` makes one row per user: in each column, the mean of the
   user's non-missing cells; :func:`fill_missing` gives a user with none the
   column's public fill value;
5. the estimator is fitted on that table with one row per user, so its
   per-user means are exactly these values.

No message (error, warning or printed line) contains a cell of the table:
columns are named, rows only by line number.
"""

import csv
import math
import re
import sys
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .users import check_groups, user_means
from .users._groups import _is_missing
from .utils._validation import check_bounds

#: ε values of the expected-error curves
CURVE_EPSILONS = np.geomspace(0.05, 10.0, 25)

#: the spellings of a missing cell (compared ignoring case and surrounding
#: whitespace; an empty or whitespace-only cell is missing too)
MISSING_SPELLINGS = ("NA", "N/A", "NaN", "null", "None", ".")

_MISSING_FOLDED = frozenset(s.casefold() for s in MISSING_SPELLINGS) | {""}

#: the missing-value policy and the estimand, as printed by the report
MISSING_POLICY = (
    "Missing values: a cell is missing when it is empty, whitespace or one of "
    + ", ".join(MISSING_SPELLINGS) + " (any case); in a column named by "
    "--columns, a cell that is not a finite number is missing too. A user's "
    "value in a column is the mean of that user's non-missing cells there; a "
    "user with none gets the column's public fill value (--fill, the "
    "codebook's fill, or the midpoint of the column's declared bounds). Each "
    "user's value is a function of that user's rows only, and every user "
    "counts: the estimand of each column is the mean over users of each "
    "user's value.")

#: the schema policy, as printed by the report
SCHEMA_POLICY = {
    "inferred": (
        "Schema: the feature columns were inferred from the data (the "
        "columns whose every non-missing cell is a number). This is a curator "
        "step before the private release and is outside the DP guarantee; "
        "name the columns with --columns (and their bounds) to make the "
        "schema public."),
    "declared": (
        "Schema: the feature columns were named by --columns (public); a cell "
        "that is not a number is treated as missing, never used to change the "
        "columns."),
}


def _column_label(name, index):
    return repr(name) if name else f"(unnamed column {index + 1})"


def read_csv_cells(path):
    """The header and the rows of a CSV file, every cell as text.

    The file is read as UTF-8 (a byte-order mark is dropped). Blank lines
    are skipped; every other row must have one cell per header column.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    header : list of str
        The column names, stripped of surrounding whitespace.
    rows : list of list of str

    Raises
    ------
    ValueError
        If the file is not UTF-8, is empty or not valid CSV, or a row has
        more or fewer cells than the header (with its line number; never a
        cell's value).
    """
    rows = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            try:
                header = next(reader, None)
                if header is None:
                    raise ValueError(f"{path} is empty: a header row is needed.")
                for row in reader:
                    if not row:
                        continue
                    if len(row) != len(header):
                        raise ValueError(
                            f"{path}, line {reader.line_num}: {len(row)} cells "
                            f"but the header has {len(header)} columns. Every "
                            "row needs one cell per column (is a comma not "
                            "quoted, or is a cell missing?).")
                    rows.append(row)
            except csv.Error as exc:
                raise ValueError(f"{path}, line {reader.line_num}: not valid "
                                 f"CSV ({exc}).") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; save it as UTF-8 CSV.") from None
    return [c.strip() for c in header], rows


def load_cells(path):
    """The header and the columns of a CSV file (or, with pandas, parquet).

    Returns
    -------
    header : list of str
    columns : list of list
        One list of cells per header column (text for a CSV, the stored
        values for parquet).
    """
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("reading parquet needs pandas (and pyarrow).") from exc
        frame = pd.read_parquet(path)
        header = [str(c).strip() for c in frame.columns]
        columns = [frame.iloc[:, j].tolist() for j in range(frame.shape[1])]
    else:
        header, rows = read_csv_cells(path)
        columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in header]
    if not columns or not columns[0]:
        raise ValueError(f"{path} has no data rows.")
    named = [h for h in header if h]
    dups = sorted({h for h in named if named.count(h) > 1})
    if dups:
        raise ValueError(f"{path}: the header repeats column name(s) {dups}.")
    return header, columns


def is_missing_cell(cell):
    """Whether one cell is missing: an empty or whitespace-only string, one of
    :data:`MISSING_SPELLINGS` (any case, surrounding whitespace ignored), or
    a missing non-text value (None, NaN, NaT, ``pd.NA``)."""
    if isinstance(cell, str):
        return cell.strip().casefold() in _MISSING_FOLDED
    return _is_missing(cell)


def parse_numbers(cells):
    """The cells as float64, NaN where a cell is missing or not a finite number.

    Returns
    -------
    values : ndarray of shape (n_cells,)
    n_missing : int
        Number of missing cells (:func:`is_missing_cell`); the other NaN
        entries are cells that are not finite numbers (text, ``inf``).
    """
    values = np.empty(len(cells), dtype=np.float64)
    n_missing = 0
    for i, cell in enumerate(cells):
        if is_missing_cell(cell):
            n_missing += 1
            values[i] = math.nan
            continue
        try:
            values[i] = float(cell)
        except (TypeError, ValueError, OverflowError):
            values[i] = math.nan
    values[~np.isfinite(values)] = np.nan
    return values, n_missing


def check_ids(cells, name):
    """The user ids of the rows, refusing a row without one.

    Parameters
    ----------
    cells : list
        The id column's cells.
    name : str
        The id column's name (for messages).

    Returns
    -------
    ids : ndarray of shape (n_rows,)

    Raises
    ------
    ValueError
        If a cell is missing (:func:`is_missing_cell`): rows without an id
        would be pooled into one pseudo-user. The message names the column
        and the number of such rows, never a value.
    """
    n_missing = sum(1 for c in cells if is_missing_cell(c))
    if n_missing:
        raise ValueError(
            f"the id column {name!r} is missing in {n_missing} row(s) (empty, or "
            f"one of {', '.join(MISSING_SPELLINGS)}): every row needs a user id, "
            "and rows without one cannot be assigned to a user. Fill in or drop "
            "those rows before the report.")
    ids = np.empty(len(cells), dtype=object)
    ids[:] = cells
    return ids


class Columns(NamedTuple):
    """Result of :func:`select_columns`.

    Attributes
    ----------
    names : list of str
        The feature columns.
    values : ndarray of shape (n_rows, n_features)
        Their cells as float64, NaN where missing (or not a finite number).
    skipped : list of (str, str)
        ``(column, reason)`` of every column left out by schema inference.
    incomplete : list of str
        The feature columns with a missing cell (the policy applies).
    inferred : bool
        Whether the columns were inferred from the data (no ``columns``).
    """

    names: list
    values: np.ndarray
    skipped: list
    incomplete: list
    inferred: bool


def select_columns(header, columns, groups, requested=None):
    """The feature columns and their numbers.

    Parameters
    ----------
    header : list of str
    columns : list of list
        One list of cells per header column.
    groups : str
        The id column (never a feature).
    requested : list of str, default=None
        The feature columns (a public schema): each must have at least one
        cell that is a number; its other cells are treated as missing.
        ``None``: every other column whose non-missing cells are all numbers
        (schema inference, a data-dependent curator step outside the DP
        guarantee); the others are skipped, each with its reason.

    Returns
    -------
    result : Columns
    """
    if requested is None:
        candidates = [j for j, h in enumerate(header) if h != groups]
    else:
        unknown = [c for c in requested if c not in header]
        if unknown:
            raise ValueError(f"no column(s) {unknown} (--columns); the columns "
                             f"are {header}.")
        if groups in requested:
            raise ValueError(f"the id column {groups!r} cannot be a feature "
                             "column (--columns).")
        dups = sorted({c for c in requested if requested.count(c) > 1})
        if dups:
            raise ValueError(f"--columns repeats column(s) {dups}.")
        candidates = [header.index(c) for c in requested]
    names, values, skipped, incomplete = [], [], [], []
    for j in candidates:
        label = _column_label(header[j], j)
        v, n_missing = parse_numbers(columns[j])
        n_numbers = int(np.isfinite(v).sum())
        if requested is not None and n_numbers == 0:
            raise ValueError(
                f"column {label} (--columns) has no cell that is a number; "
                "leave it out of --columns.")
        if requested is None:
            reason = None
            if not header[j]:
                reason = "no name in the header"
            elif n_numbers == 0:
                reason = "no cell is a number"
            elif n_numbers + n_missing < v.shape[0]:
                reason = ("some cells are not numbers; name it in --columns to "
                          "treat those cells as missing")
            if reason is not None:
                skipped.append((header[j] or label, reason))
                continue
        names.append(header[j])
        values.append(v)
        if n_numbers < v.shape[0]:
            incomplete.append(header[j])
    if not names:
        why = "; ".join(f"{n}: {r}" for n, r in skipped)
        raise ValueError("no feature column is numeric"
                         + (f" (skipped {why})." if why else "."))
    return Columns(names, np.column_stack(values), skipped, incomplete,
                   requested is None)


def user_table(values, ids):
    """One row per user: in each column, the mean of the user's non-missing cells.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_features)
        NaN where a cell is missing.
    ids : array-like of shape (n_rows,)
        The user id of every row (none missing).

    Returns
    -------
    table : ndarray of shape (n_users, n_features)
        NaN where the user has no non-missing cell in the column. Row ``k``
        depends on the rows of user ``labels[k]`` only.
    labels : ndarray of shape (n_users,)
        The user ids (:func:`~skuserdp.users.check_groups`).
    """
    codes, labels = check_groups(ids, values.shape[0])
    table = np.full((labels.shape[0], values.shape[1]), np.nan)
    for j in range(values.shape[1]):
        present = ~np.isnan(values[:, j])
        if present.any():
            means, _, users = user_means(values[present, j:j + 1],
                                         groups=codes[present])
            table[users, j] = means[:, 0]
    return table, labels


def fill_missing(table, names, fill):
    """The per-user table with each user's missing value set to the public fill.

    Parameters
    ----------
    table : ndarray of shape (n_users, n_features)
        From :func:`user_table` (NaN: the user has no value in the column).
    names : list of str
    fill : ndarray of shape (n_features,)
        Public fill values; NaN where none is declared.

    Raises
    ------
    ValueError
        If a user has no value in a column without a fill value (named, with
        the fix).
    """
    empty = np.isnan(table)
    fill = np.asarray(fill, dtype=np.float64)
    unfilled = [n for n, need, f in zip(names, empty.any(axis=0), fill)
                if need and np.isnan(f)]
    if unfilled:
        raise ValueError(
            f"some users have no number in column(s) {unfilled}, and with bounds "
            "learned privately these columns have no public fill value. Declare "
            "their bounds (--bounds NAME=LOWER:UPPER or --codebook; the fill is "
            "then the midpoint) or a public fill value (--fill NAME=VALUE).")
    return np.where(empty, fill[None, :], table)


def _parse_float(text, what):
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a number.") from None


def parse_column_spec(text, names, option, parse_value):
    """``NAME=VALUE,NAME=VALUE`` into a dict, refusing names not in ``names``.

    A name may contain ``=`` only before the last one (the value never does).
    """
    spec = {}
    for item in text.split(","):
        name, sep, value = item.strip().rpartition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"{option}: {item.strip()!r} is not NAME=VALUE.")
        if name in spec:
            raise ValueError(f"{option} names column {name!r} twice.")
        spec[name] = parse_value(value.strip(), f"{option} {name}")
    unknown = [n for n in spec if n not in names]
    if unknown:
        raise ValueError(f"{option} names column(s) {unknown}, which are not "
                         f"feature columns (the feature columns are {names}).")
    return spec


def _parse_range(text, what):
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"{what}: {text!r} is not LOWER:UPPER.")
    return tuple(_parse_float(p.strip(), what) for p in parts)


def check_column_bounds(names, lower, upper):
    """Refuse, by column name, bounds that are not finite with lower < upper."""
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    bad = [n for n, lo, hi in zip(names, lower, upper)
           if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi)]
    if bad:
        raise ValueError(f"the bounds of column(s) {bad} must be finite with "
                         "lower < upper.")
    return check_bounds((lower, upper), len(names))


def _cover(spec, names, option):
    uncovered = [n for n in names if n not in spec]
    if uncovered:
        raise ValueError(f"{option} does not cover column(s) {uncovered}: give "
                         "bounds for every feature column.")


def parse_bounds(text, names):
    """The box from ``--bounds``: ``"auto"``, ``LO,HI`` or ``NAME=LO:HI,...``.

    Parameters
    ----------
    text : str or None
        ``None`` or ``"auto"``: learned privately. ``"LO,HI"``: the same
        bounds for every column. ``"age=14:46,temp=-40:50"``: per column;
        every feature column must be covered.
    names : list of str
        The feature columns.

    Returns
    -------
    bounds : "auto" or (lower, upper) of ndarrays of shape (n_features,)
    """
    if text is None or text.strip() == "auto":
        return "auto"
    if "=" not in text:
        parts = text.split(",")
        if len(parts) != 2:
            raise ValueError(f"--bounds: {text!r} is not 'auto', LOWER,UPPER or "
                             "NAME=LOWER:UPPER,...")
        lo, hi = (_parse_float(p.strip(), "--bounds") for p in parts)
        return check_column_bounds(names, np.full(len(names), lo),
                                   np.full(len(names), hi))
    spec = parse_column_spec(text, names, "--bounds", _parse_range)
    _cover(spec, names, "--bounds")
    return check_column_bounds(names, [spec[n][0] for n in names],
                               [spec[n][1] for n in names])


def read_codebook(path, names):
    """Bounds (and optional fill values) of the feature columns from a codebook.

    The codebook is a CSV with columns ``name,lower,upper`` and optionally
    ``fill`` (an empty fill cell: none). Rows of other columns are ignored;
    every feature column must have a row.

    Returns
    -------
    bounds : (lower, upper) of ndarrays of shape (n_features,)
    fill : dict of str to float
        The declared fill values.
    """
    header, rows = read_csv_cells(path)
    absent = [c for c in ("name", "lower", "upper") if c not in header]
    if absent:
        raise ValueError(f"codebook {path} needs the columns name, lower, upper "
                         f"(and optionally fill); it lacks {absent}.")
    col = {c: header.index(c) for c in header}
    entries = {}
    for row in rows:
        name = row[col["name"]].strip()
        if name not in names:
            continue
        if name in entries:
            raise ValueError(f"codebook {path} has column {name!r} twice.")
        what = f"codebook {path}, column {name!r}"
        fill = row[col["fill"]].strip() if "fill" in col else ""
        entries[name] = (_parse_float(row[col["lower"]].strip(), what),
                         _parse_float(row[col["upper"]].strip(), what),
                         _parse_float(fill, what) if fill else None)
    _cover(entries, names, f"codebook {path}")
    bounds = check_column_bounds(names, [entries[n][0] for n in names],
                                 [entries[n][1] for n in names])
    return bounds, {n: e[2] for n, e in entries.items() if e[2] is not None}


def parse_fill(text, names):
    """Fill values from ``--fill``: ``VALUE`` (every column) or ``NAME=VALUE,...``
    (some columns); a dict of column to float."""
    if text is None:
        return {}
    if "=" not in text:
        value = _parse_float(text.strip(), "--fill")
        return {n: value for n in names}
    return parse_column_spec(text, names, "--fill", _parse_float)


def resolve_fill(names, bounds, declared):
    """The public fill value of every column (NaN: none).

    ``declared`` (``--fill`` or the codebook's) wins; otherwise the midpoint
    of the column's declared bounds. A fill must be finite and, with declared
    bounds, inside them.
    """
    if isinstance(bounds, str):
        fill = np.full(len(names), np.nan)
        lower, upper = np.full(len(names), -np.inf), np.full(len(names), np.inf)
    else:
        lower, upper = bounds
        fill = lower / 2.0 + upper / 2.0
    for j, name in enumerate(names):
        if name in declared:
            fill[j] = declared[name]
    bad = [n for j, n in enumerate(names) if n in declared
           and not (math.isfinite(fill[j]) and lower[j] <= fill[j] <= upper[j])]
    if bad:
        raise ValueError(f"the fill value of column(s) {bad} must be finite and "
                         "inside the column's bounds.")
    return fill


_INDEX_LIST = re.compile(r"feature\(s\) \[(\d+(?:, \d+)*)\]")


def name_features(message, names):
    """Replace ``feature(s) [i, j]`` (column indices) in a warning by names.

    Only that exact form, and only when every index is a column; anything
    else is left as it is.
    """
    def repl(match):
        idx = [int(i) for i in match.group(1).split(", ")]
        if max(idx) >= len(names):
            return match.group(0)
        return f"feature(s) {[names[i] for i in idx]}"

    return _INDEX_LIST.sub(repl, message)


def _as_frame(table, names):
    """The table as a pandas DataFrame with the column names (so that the
    estimator's warnings can name them), or the array without pandas."""
    try:
        import pandas as pd
    except ImportError:
        return table
    return pd.DataFrame(table, columns=list(names))


def expected_error_curves(n_users, lower, upper, delta, epsilons=CURVE_EPSILONS):
    """Expected ℓ2 error of the noise of public plans on one box, against ε.

    Parameters
    ----------
    n_users : int
        Public number of users.
    lower, upper : ndarray of shape (n_features,)
        The box (declared, or a released ``bounds_``).
    delta : float
        δ of the releases.
    epsilons : array-like, default=CURVE_EPSILONS
        The ε values.

    Returns
    -------
    curves : dict of str to ndarray
        Root mean squared ℓ2 error of the noise at each ε, in the units of the
        data, from the plans alone (no data):

        * ``"ColumnScaledMeanEstimator"``: the per-column release the report's
          ``UserMeanEstimator`` uses with a box (Laplace or Gaussian, the one
          its plan picks at each ε; without the clipped-users check);
        * ``"per-column Laplace (peer)"``: Laplace noise with ε/d per column
          of the box (the simplest honest estimator);
        * ``"joint Gaussian"``: one Gaussian release of all columns, each
          scaled to its box (``delta > 0`` only).
    """
    from .mean._column_scaled import choose_column_noise

    half = (np.asarray(upper, float) - np.asarray(lower, float)) / 2.0
    d = half.shape[0]
    scale = float(np.sqrt(np.sum(half ** 2)))  # the scaled noise -> units of X
    names = ["ColumnScaledMeanEstimator", "per-column Laplace (peer)"]
    if delta > 0:
        names.append("joint Gaussian")
    curves = {k: [] for k in names}
    for eps in epsilons:
        eps = float(eps)
        picks = {
            "ColumnScaledMeanEstimator": "auto",
            "per-column Laplace (peer)": "laplace",
            "joint Gaussian": "gaussian",
        }
        for name in names:
            _, plan = choose_column_noise(n_users, d, eps, delta, noise=picks[name])
            curves[name].append(scale * math.sqrt(plan.noise_variance))
    return {k: np.asarray(v) for k, v in curves.items()}


def plot_curves(curves, epsilons, epsilon, path, *, title="", point=None,
                bars=None):
    """Write the expected-error curves to a PNG (matplotlib, Agg backend).

    ``point``: ``(label, error)`` of the fit itself at ``epsilon``, or None.
    ``bars``: the fit's per-feature error bars, drawn in a second panel, or
    None (one panel); a :class:`ErrorBars`.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("the plot needs matplotlib: pip install matplotlib") from exc
    if bars is None:
        fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    else:
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), dpi=100,
                                     gridspec_kw={"width_ratios": [7, 5]})
        _plot_bars(bx, bars)
    # the first curve (the estimator the fit used) is drawn last, on top;
    # the others dashed, so that a curve it coincides with stays visible
    items = list(curves.items())
    for k, (name, values) in reversed(list(enumerate(items))):
        ax.loglog(epsilons, values, marker="o", ms=3, label=name, color=f"C{k}",
                  ls="-" if k == 0 else "--", lw=2.0 if k == 0 else 1.5,
                  zorder=3 if k == 0 else 2)
    ax.axvline(epsilon, color="grey", ls="--", lw=1, label=f"ε = {epsilon:g}")
    if point is not None:
        ax.plot([epsilon], [point[1]], marker="*", ms=14, ls="none", color="k",
                label=point[0])
    ax.set_xlabel("ε (user level)")
    ax.set_ylabel("expected ℓ2 error of the noise")
    ax.set_title(title or "Expected error against ε (public plans)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


class ErrorBars(NamedTuple):
    """The fit's error bars, one per feature, in the units of the data."""

    names: list
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    box_lower: np.ndarray
    box_upper: np.ndarray
    #: "95 % CI (users + noise)" or "± 95 % noise (noise only)"
    label: str


#: the label of the fit's confidence intervals (users' sampling and noise)
CI_LABEL = "95 % CI (users + noise)"

#: the label of the noise-only bars (no interval for this fit)
NOISE_LABEL = "± 95 % noise (noise only)"


def fit_interval(est, alpha=0.05):
    """The fitted estimator's ``conf_int(alpha)``, when the fit offers one.

    Pure post-processing of the fit's releases (no data, no budget).

    Returns
    -------
    ci : ndarray of shape (n_features, 2) or None
        Lower and upper bounds; None when the fit has no interval.
    reason : str
        Why there is none (the estimator's own explanation), else "".
    caught : list of warnings.WarningMessage
        The warnings ``conf_int`` raised (a learned box's caveat).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ci = est.conf_int(alpha)
        except AttributeError as exc:
            return None, str(exc), []
    return np.asarray(ci, dtype=np.float64), "", list(caught)


def _plot_bars(ax, bars):
    """The fit's estimate and error bar per feature, each drawn on its box
    mapped to [0, 1] (the features have different units)."""
    span = np.where(bars.box_upper > bars.box_lower, bars.box_upper - bars.box_lower,
                    1.0)
    y = np.arange(len(bars.names))[::-1]
    mean = (bars.mean - bars.box_lower) / span
    lo = (bars.lower - bars.box_lower) / span
    hi = (bars.upper - bars.box_lower) / span
    ax.errorbar(mean, y, xerr=[mean - lo, hi - mean], fmt="o", color="C3",
                ecolor="C3", elinewidth=3, capsize=6, ms=5, label=bars.label)
    ax.set_yticks(y, [str(n) for n in bars.names])
    ax.set_xlabel("position in the box (0 = lower bound, 1 = upper)")
    ax.set_title(f"this fit: private mean, {bars.label}")
    ax.set_ylim(-0.8, len(bars.names) - 0.2)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="best")


def _print_columns(columns, out):
    """The schema and missing-value policies, as they apply to this table."""
    print(f"feature columns: {', '.join(columns.names)}", file=out)
    if columns.skipped:
        print("skipped columns:", file=out)
        for name, reason in columns.skipped:
            print(f"  {name}: {reason}", file=out)
    print(SCHEMA_POLICY["inferred" if columns.inferred else "declared"], file=out)
    if columns.incomplete:
        print(f"Column(s) {', '.join(columns.incomplete)} have missing cells; "
              "the missing-value policy below applies.", file=out)
    print(MISSING_POLICY, file=out)


def prepare_table(path, groups, columns=None, bounds=None, codebook=None,
                  fill=None):
    """Read a table and build the per-user table the report fits.

    Returns
    -------
    table : ndarray of shape (n_users, n_features)
        One row per user, filled (:func:`user_table`, :func:`fill_missing`).
    columns : Columns
    bounds : "auto" or (lower, upper)
    """
    header, cells = load_cells(path)
    if groups not in header:
        raise ValueError(f"no column {groups!r} in {path} (columns: {header}).")
    ids = check_ids(cells[header.index(groups)], groups)
    cols = select_columns(header, cells, groups, columns)
    if codebook is not None:
        if not (bounds is None or (isinstance(bounds, str) and bounds == "auto")):
            raise ValueError("give either --bounds or --codebook, not both.")
        bounds, declared = read_codebook(codebook, cols.names)
    else:
        if isinstance(bounds, str) or bounds is None:
            bounds = parse_bounds(bounds, cols.names)
        else:
            bounds = check_bounds(bounds, len(cols.names))
        declared = {}
    declared.update(parse_fill(fill, cols.names))
    fills = resolve_fill(cols.names, bounds, declared)
    table, _ = user_table(cols.values, ids)
    return fill_missing(table, cols.names, fills), cols, bounds


def run_report(path, *, groups, epsilon=1.0, delta=1e-6, bounds=None,
               columns=None, codebook=None, fill=None, png=None,
               random_state=None, out=None):
    """Fit, print the report and write the plot; return a dict of results.

    ``bounds``: ``None`` or ``"auto"`` (learned privately), a string for
    :func:`parse_bounds`, or a pair ``(lower, upper)``; ``codebook``: a CSV
    for :func:`read_codebook` instead; ``fill``: a string for
    :func:`parse_fill`; ``out``: where to print (default ``sys.stdout``).
    """
    from .mean import UserMeanEstimator

    out = sys.stdout if out is None else out
    table, cols, bounds = prepare_table(path, groups, columns, bounds, codebook,
                                        fill)
    names = cols.names
    _print_columns(cols, out)
    est = UserMeanEstimator(epsilon=epsilon, delta=delta, bounds=bounds,
                            random_state=random_state)
    start = time.perf_counter()
    print(f"\nfitting {type(est).__name__} on one row per user "
          f"({table.shape[1]} features) ...", file=out, flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(_as_frame(table, names), groups=np.arange(table.shape[0]))
    seconds = time.perf_counter() - start
    sd = getattr(est, "noise_std_", None)
    print(f"\n{est.n_users_} users; method {est.method_!r} ({est.reason_})",
          file=out)
    print(f"privacy spent (user level): epsilon = {est.epsilon_:.4g}, "
          f"delta = {est.delta_:.3g}; fit {seconds:.2f} s\n", file=out)
    width = max(len(n) for n in names + ["feature"])
    used = getattr(est, "estimator_", est)
    clipped = getattr(used, "clipped_users_", None)
    ci, no_ci, ci_caught = fit_interval(est)
    label = CI_LABEL if ci is not None else NOISE_LABEL
    cells = []
    for j in range(len(names)):
        if ci is not None:
            cells.append(f"[{ci[j, 0]:.4g}, {ci[j, 1]:.4g}]")
        else:
            cells.append("-" if sd is None else f"± {1.96 * sd[j]:.4g}")
    bar_width = max(len(label), *(len(c) for c in cells))
    print(f"{'feature':<{width}}  {'private mean':>14}  {label:>{bar_width}}"
          + ("" if clipped is None else f"  {'users outside box':>19}"), file=out)
    for j, name in enumerate(names):
        extra = ("" if clipped is None else "  " + format(
            f"{clipped[j]:.0f} ± {1.96 * used.clipped_users_std_:.0f}", ">19"))
        print(f"{name:<{width}}  {est.mean_[j]:>14.6g}  {cells[j]:>{bar_width}}{extra}",
              file=out)
    print("\nEach private mean estimates the mean over users of each user's "
          "mean over its non-missing cells of the column.", file=out)
    if ci is not None:
        print(f"{CI_LABEL}: a confidence interval for the mean of the users' "
              "means clipped to the box (the population mean when the box is the "
              "column's true range), the users being a sample of a population of "
              "users: it covers their sampling and the privacy noise. Its "
              "statistics were released by the fit and are charged to the budget "
              f"above (ci_share = {est.ci_share_:g} of it); the interval itself is "
              "post-processing.", file=out)
    else:
        print(f"{NOISE_LABEL}: the privacy noise only (its 95 % range, from the "
              "public plan): not the clipping bias of users outside the box, nor "
              "the sampling of the users (they describe this table, not a "
              f"population). No confidence interval: {no_ci}", file=out)
    if clipped is not None:
        print("users outside box: a private count per column, ± its noise's 95 % "
              "range (charged to the budget above); those users are clipped to "
              "the box, biasing the column.", file=out)
    for w in caught + ci_caught:
        print(f"warning: {w.category.__name__}: "
              f"{name_features(str(w.message), names)}", file=out)
    result = {"estimator": est, "names": names, "noise_std": sd, "table": table,
              "columns": cols, "conf_int": ci, "no_interval_reason": no_ci}
    lower, upper = (est.bounds_ if getattr(est, "bounds_", None) is not None
                    else (None, None))
    if png is not None and lower is not None:
        curves = expected_error_curves(est.n_users_, lower, upper, delta)
        if est.method_ != "column_scaled":  # only its own curve is drawn
            curves.pop("ColumnScaledMeanEstimator")
        point = (None if sd is None else
                 (f"this fit ({est.method_})", float(np.sqrt(np.sum(sd ** 2)))))
        if ci is not None:
            lo, hi = ci[:, 0], ci[:, 1]
        elif sd is not None:
            lo, hi = est.mean_ - 1.96 * sd, est.mean_ + 1.96 * sd
        bars = (None if ci is None and sd is None else ErrorBars(
            list(names), np.asarray(est.mean_, float), lo, hi,
            np.asarray(lower, float), np.asarray(upper, float), label))
        result["bars"] = bars
        result["png"] = plot_curves(
            curves, CURVE_EPSILONS, epsilon, png, point=point, bars=bars,
            title=f"{est.n_users_} users, {table.shape[1]} features (public plans)")
        result["curves"] = curves
        print(f"\nwrote {png}: expected error against ε from the public plans "
              "(no private data used)", file=out)
    return result
