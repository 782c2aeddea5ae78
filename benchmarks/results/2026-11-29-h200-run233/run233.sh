#!/bin/bash
# thirty-ninth session, run 233 (issue 50): is a stepping float's guess slower on this host
# after the long run (runs 230-231: lane_next 9.1-10.8 against 5.8-8.0 µs)? The guess and its
# history timed alone, for the tree before (0329560) and after (98229c9), alternating.
#   run(command="bash .gpu/run233.sh", carry=[".whl", ".gpu"])
set -u
nproc; python3 --version
python3 .gpu/guess_cost.py
