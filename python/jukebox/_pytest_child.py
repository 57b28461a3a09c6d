"""The stand-in agent of the pytest plugin's runs (jukebox.pytest_plugin).

`jukebox record` (or its replay) starts it as the run's agent: it hands the
variables jukebox set for it (the provider base URLs, the proxy and its CA,
the control API) to the test process, which makes the model calls, and
ends when the test process closes its stdin. It prints nothing, so that a
replay's stdout is the recording's.
"""

import json
import os
import sys

DIR_ENV = "_JBX_PYTEST_DIR"


def main() -> int:
    out = os.environ.get(DIR_ENV)
    if not out:
        print(f"jukebox._pytest_child: {DIR_ENV} is not set: run by the pytest plugin only", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if k != DIR_ENV}
    tmp = os.path.join(out, "env.json.tmp")
    with open(tmp, "w") as f:
        json.dump(env, f)
    os.replace(tmp, os.path.join(out, "env.json"))
    sys.stdin.read()  # until the test process is done
    return 0


if __name__ == "__main__":
    sys.exit(main())
