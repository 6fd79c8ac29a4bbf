"""Command line: ``python -m skuserdp demo`` and ``python -m skuserdp report``."""

import argparse
import sys


def main(argv=None):
    """Entry point of ``python -m skuserdp``."""
    parser = argparse.ArgumentParser(
        prog="python -m skuserdp",
        description="skuserdp: user-level differentially private estimators.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit every estimator on synthetic data")
    demo.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    report = sub.add_parser(
        "report", help="private means of a CSV/parquet table, with error bars and "
        "a plot of expected error against epsilon (public plans)")
    report.add_argument("path", help="a .csv file with a header (or .parquet)")
    report.add_argument("--groups", required=True,
                        help="the column of user ids (the unit of privacy)")
    report.add_argument("--epsilon", type=float, default=1.0)
    report.add_argument("--delta", type=float, default=1e-6)
    report.add_argument(
        "--bounds", default=None,
        help="the box, in the data's units: 'auto' (default; learned privately, "
        "charged), LOWER,UPPER for every feature column, or per column "
        "NAME=LOWER:UPPER,... covering every feature column (e.g. "
        "age=14:46,temp=-40:50); write --bounds=-40,50 when LOWER is negative")
    report.add_argument(
        "--codebook", default=None,
        help="a CSV with columns name,lower,upper (optionally fill) giving every "
        "feature column's bounds, instead of --bounds")
    report.add_argument(
        "--fill", default=None,
        help="public value of a user with no number in a column: VALUE for every "
        "column or NAME=VALUE,... (default: the midpoint of the column's declared "
        "bounds; needed with learned bounds when a user has no number there)")
    report.add_argument(
        "--columns", default=None,
        help="comma-separated feature columns, a public schema (default: every "
        "other column whose non-missing cells are all numbers, inferred from the "
        "data)")
    report.add_argument("--png", default="skuserdp_report.png",
                        help="where to write the plot (default skuserdp_report.png)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import main as demo_main

        return demo_main(args.seed)
    if args.command == "report":
        from ._report import run_report

        try:
            columns = ([c.strip() for c in args.columns.split(",")]
                       if args.columns else None)
            run_report(args.path, groups=args.groups, epsilon=args.epsilon,
                       delta=args.delta, bounds=args.bounds, columns=columns,
                       codebook=args.codebook, fill=args.fill, png=args.png)
        except (ValueError, ImportError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
