"""Command line: ``python -m skuserdp demo``."""

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
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import main as demo_main

        return demo_main(args.seed)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
