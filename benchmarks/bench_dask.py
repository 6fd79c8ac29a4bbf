"""Fit user-level mean estimators on a parquet panel larger than memory, with Dask.

Run from the repository root (needs ``pip install ".[dask]"``)::

    python benchmarks/bench_dask.py --data-dir /path/with/space     # ~2x RAM on disk
    python benchmarks/bench_dask.py --quick --data-dir /tmp/x        # smoke test

What it does:

1. **Writes** (unless already there with the same sizes) a panel to
   ``--data-dir`` as parquet files: ``--features`` float32 columns ``x0..`` and
   an int64 ``user`` column; users are contiguous, each user's rows in one
   file, 1-199 rows per user (uniform). Row ``i`` of user ``u`` is
   ``mu + a_u + e_i`` with ``mu_j = j / 4``, a user effect ``a_u ~ N(0, 1)``
   and noise ``e_i ~ N(0, 1)``; the users' means therefore have population
   mean ``mu``. The files are written by the cluster's workers (one seeded
   task per file). The default size is twice the machine's memory.
2. **Fits** on a ``dask.distributed.LocalCluster`` with ``--workers`` worker
   processes (one thread each) whose memory limits add up to half of the
   machine's memory: ``skuserdp.users.user_means`` (the aggregation pass),
   then ``UserMeanEstimator()`` and ``CoinPressMeanEstimator()`` with their
   defaults (the box learned privately, ``bounds="auto"``), each reading the
   files from disk (the data cannot be held in memory).
3. **Measures** the wall time of each and the peak resident memory (RSS) of
   the whole process tree -- client, scheduler, nannies and workers, sampled
   every 0.2 s -- and its largest single process. The estimates' ℓ2 error
   against ``mu`` is reported (the non-private mean of the users' means is
   within ~1/sqrt(n_users) of ``mu``).

Results are printed and saved as CSV and JSON in ``benchmarks/results/``.
"""

import argparse
import json
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from _results import write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MEAN_ROWS_PER_USER = 100  # rows per user uniform on 1..199


def parse_args(argv=None):
    total = psutil.virtual_memory().total
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True,
                        help="where the parquet files are written (and reused)")
    parser.add_argument("--disk-bytes", type=float, default=2.0 * total,
                        help="size of the panel on disk (default: 2x RAM)")
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--users-per-file", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-fraction", type=float, default=0.5,
                        help="share of the machine's RAM for all workers together")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 200 MB on disk")
    parser.add_argument("--output-dir", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    if args.quick:
        args.disk_bytes = 2e8
        args.users_per_file = 20_000
    return args


def _bytes_per_row(d):
    # float32 features, uncompressed; the sorted int64 user ids take about one
    # byte a row (parquet dictionary-encodes them)
    return 4 * d + 1


def write_file(path, first_user, n_users, d, seed):
    """One parquet file of ``n_users`` contiguous users (run on a worker)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng([seed, first_user])
    counts = rng.integers(1, 2 * MEAN_ROWS_PER_USER, n_users)
    users = np.repeat(np.arange(first_user, first_user + n_users, dtype=np.int64),
                      counts)
    effect = rng.standard_normal((n_users, d), dtype=np.float32)
    mu = (np.arange(d) / 4).astype(np.float32)
    cols = {}
    for j in range(d):
        col = rng.standard_normal(users.size, dtype=np.float32)
        col += np.repeat(effect[:, j], counts)
        col += mu[j]
        cols[f"x{j}"] = col
    cols["user"] = users
    pq.write_table(pa.table(cols), path, compression="none",
                   row_group_size=1 << 20)
    return int(users.size)


def ensure_data(client, args):
    """Write the panel unless ``manifest.json`` says it is already there."""
    data = Path(args.data_dir)
    d = args.features
    rows = args.disk_bytes / _bytes_per_row(d)
    n_files = max(2, int(round(rows / (args.users_per_file * MEAN_ROWS_PER_USER))))
    spec = dict(n_files=n_files, users_per_file=args.users_per_file, features=d,
                seed=args.seed, mean_rows_per_user=MEAN_ROWS_PER_USER)
    manifest = data / "manifest.json"
    if manifest.exists():
        found = json.loads(manifest.read_text())
        if {k: found.get(k) for k in spec} == spec:
            print(f"reusing {data}: {found['rows']:,} rows, "
                  f"{found['bytes'] / 1e9:.1f} GB")
            return found
    data.mkdir(parents=True, exist_ok=True)
    for old in data.glob("part-*.parquet"):
        old.unlink()
    t0 = time.perf_counter()
    futures = [client.submit(write_file, str(data / f"part-{i:05d}.parquet"),
                             i * args.users_per_file, args.users_per_file, d,
                             args.seed, pure=False)
               for i in range(n_files)]
    n_rows = sum(client.gather(futures))
    size = sum(f.stat().st_size for f in data.glob("part-*.parquet"))
    found = dict(spec, rows=n_rows, users=n_files * args.users_per_file,
                 bytes=size, write_seconds=time.perf_counter() - t0)
    manifest.write_text(json.dumps(found, indent=2))
    print(f"wrote {data}: {n_rows:,} rows, {size / 1e9:.1f} GB in "
          f"{found['write_seconds']:.0f} s")
    return found


class PeakRSS:
    """Peak RSS of this process and all its descendants, sampled in a thread."""

    def __init__(self, interval=0.2):
        self.interval = interval
        self.peak_total = self.peak_single = 0
        self._stop = threading.Event()

    def _sample(self):
        me = psutil.Process()
        while not self._stop.is_set():
            total = single = 0
            for p in [me] + me.children(recursive=True):
                try:
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                total += rss
                single = max(single, rss)
            self.peak_total = max(self.peak_total, total)
            self.peak_single = max(self.peak_single, single)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main(argv=None):
    args = parse_args(argv)
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    from skuserdp.mean import CoinPressMeanEstimator, UserMeanEstimator
    from skuserdp.users import user_means

    total = psutil.virtual_memory().total
    limit = int(args.memory_fraction * total / args.workers)
    rows = []
    with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                      memory_limit=limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        info = ensure_data(client, args)
        mu = np.arange(args.features) / 4
        print(f"cluster: {args.workers} workers x {limit / 2**30:.1f} GiB "
              f"(machine {total / 2**30:.1f} GiB); data {info['bytes'] / 2**30:.1f} "
              f"GiB on disk = {info['bytes'] / total:.2f}x RAM")
        panel = dd.read_parquet(args.data_dir)
        jobs = [
            ("user_means", lambda: user_means(panel, "user").means.mean(axis=0)),
            ("UserMeanEstimator()",
             lambda: UserMeanEstimator(random_state=args.seed).fit(
                 panel, groups="user").mean_),
            ("CoinPressMeanEstimator()",
             lambda: CoinPressMeanEstimator(random_state=args.seed).fit(
                 panel, groups="user").mean_),
        ]
        for name, job in jobs:
            with PeakRSS() as peak:
                t0 = time.perf_counter()
                estimate = job()
                seconds = time.perf_counter() - t0
            row = dict(task=name, seconds=round(seconds, 1),
                       rows_per_second=round(info["rows"] / seconds),
                       peak_rss_gib=round(peak.peak_total / 2**30, 2),
                       peak_process_gib=round(peak.peak_single / 2**30, 2),
                       l2_error_vs_mu=float(np.linalg.norm(estimate - mu)))
            rows.append(row)
            print(f"{name:26s} {seconds:8.1f} s  {row['rows_per_second']:>12,} rows/s"
                  f"  peak RSS {row['peak_rss_gib']:.2f} GiB (largest process "
                  f"{row['peak_process_gib']:.2f})  "
                  f"l2 error {row['l2_error_vs_mu']:.2e}")
    payload = dict(data=info, workers=args.workers, worker_memory_limit=limit,
                   machine_memory=total, results=rows)
    stem = "bench_dask_quick" if args.quick else "bench_dask"
    for path in write_results(args.output_dir, stem, rows, payload):
        print(f"saved {path}")


if __name__ == "__main__":
    main()
