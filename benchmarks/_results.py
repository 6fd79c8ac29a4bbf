"""Writing a benchmark's results: one CSV and one JSON file per run."""

import csv
import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path

import numpy as np
import scipy
import sklearn

import skuserdp


def machine_info():
    """Platform, CPU count and package versions."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "skuserdp": getattr(skuserdp, "__version__", "unknown"),
    }


def write_results(output_dir, stem, rows, payload, fields=None):
    """Write ``rows`` to ``<stem>.csv`` and ``payload`` to ``<stem>.json``.

    The CSV columns are ``fields``, or every key with a scalar value in order
    of appearance. The JSON gets ``benchmark``, ``date``, ``command`` and
    ``machine`` first, then ``payload``. Returns both paths.
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if fields is None:
        fields = []
        for row in rows:
            for key, value in row.items():
                if key not in fields and not isinstance(value, list):
                    fields.append(key)
    csv_path = output_dir / f"{stem}.csv"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore",
                                restval="")
        writer.writeheader()
        writer.writerows(rows)
    header = {
        "benchmark": stem.removesuffix("_quick"),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": shlex.join([Path(sys.executable).name] + sys.argv),
        "machine": machine_info(),
    }
    json_path = output_dir / f"{stem}.json"
    with open(json_path, "w") as f:
        json.dump({**header, **payload}, f, indent=2)
        f.write("\n")
    return csv_path, json_path
