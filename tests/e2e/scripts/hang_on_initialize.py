"""A stdio "server" that reads requests and never answers, and starts a grandchild that would
outlive it if the host only killed the leader (R-2.6 orphan check)."""

import subprocess
import sys

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
for _line in sys.stdin:
    pass
