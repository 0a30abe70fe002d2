# Prints this rank's launch environment as one JSON line (keys of interest only).
import json
import os
import sys

keys = sys.argv[1:]
print(json.dumps({k: os.environ.get(k) for k in keys}, sort_keys=True), flush=True)
