"""What the SDK costs: a track on the running (reused) `jukebox serve`,
and a staged write against a plain one. Prints each in milliseconds and
the ratios the SDK is held to (a track under 20 ms, a staged write within
2x a plain write: rounds of staged writes sent in one batch against as
many plain writes, the rounds alternating).

    JUKEBOX_BIN=$(which jukebox) PYTHONPATH=python python3 python/bench/sdk_bench.py

Its folders are made under TMPDIR: on a disk, creating files weighs on
both sides (and much more on some file systems soon after many were
removed); with TMPDIR on a tmpfs (/dev/shm) what remains is the SDK's and
the booth's own cost.
"""

import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, List

from jukebox import Jukebox

ROUNDS = 20


def timed(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    """The median of rounds runs of fn, in milliseconds."""
    times: List[float] = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    os.chdir(tempfile.mkdtemp(prefix="jukebox-bench-"))
    os.environ.setdefault("JUKEBOX_SERVE_IDLE", "10s")  # this folder's server is of no use after
    jb = Jukebox(tape_dir="tapes")

    @jb.track
    def track() -> None:
        pass

    track()  # starts the server (or finds it running)
    per_track = timed(track)
    payload = "x" * 4096
    n = [0]

    def plain() -> None:
        n[0] += 1
        with open(f"plain-{n[0]}.txt", "w") as f:
            f.write(payload)

    with jb.track("writes"):
        def staged_write() -> None:
            tx = jb.begin()
            n[0] += 1
            tx.stage_file_write(f"staged-{n[0]}.txt", payload)
            tx.commit()

        def staged_only() -> None:
            n[0] += 1
            tx.stage_file_write(f"staged-{n[0]}.txt", payload)
        tx = jb.begin()
        stage = timed(staged_only)
        tx.commit()
        committed = timed(staged_write)
        # Staged writes go to the booth in one batch with the next
        # operation: what a write costs with its share of that batch,
        # against as many plain writes in a row, each round of them in a
        # new folder and removed after it as a rollback removes the
        # staged ones. The rounds alternate, so that both sides meet the
        # file system in the same state (creating many files soon after
        # removing many costs some file systems much more).
        batch_ms: List[float] = []
        plain_ms: List[float] = []
        for r in range(5):
            tx = jb.begin()
            t0 = time.perf_counter()
            for _ in range(ROUNDS * 10):
                staged_only()
            tx.flush()
            batch_ms.append((time.perf_counter() - t0) * 1000 / (ROUNDS * 10))
            tx.rollback()
            folder = f"plain-round-{r}"
            os.mkdir(folder)
            t0 = time.perf_counter()
            for i in range(ROUNDS * 10):
                with open(os.path.join(folder, f"f-{i}.txt"), "w") as f:
                    f.write(payload)
            plain_ms.append((time.perf_counter() - t0) * 1000 / (ROUNDS * 10))
            shutil.rmtree(folder)
        sent, in_rounds = statistics.median(batch_ms), statistics.median(plain_ms)
    direct = timed(plain)
    print(f"track on the running server: {per_track:.1f} ms ({per_track / 20:.2f}x the 20 ms budget)")
    print(f"plain write: {direct:.3f} ms; staged write: {stage:.3f} ms ({stage / direct:.1f}x, target <= 2x); "
          f"with its share of the batch that sends it: {sent:.3f} ms, against {in_rounds:.3f} ms a plain write "
          f"in rounds as many ({sent / in_rounds:.1f}x, target <= 2x); "
          f"begin + staged write + commit: {committed:.1f} ms ({committed / direct:.1f}x)")
    sys.exit(0)


if __name__ == "__main__":
    main()
