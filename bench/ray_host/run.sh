#!/usr/bin/env bash
# The local host against a two-node Ray cluster on loopback (bench/RESULTS.md), in a network
# namespace with only loopback, as tests/ray runs. Needs build-check/ and Ray in .venv.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
as_root=()
[[ $(id -u) -ne 0 ]] && as_root=(--map-root-user)
exec unshare --net "${as_root[@]}" -- sh -c 'ip link set lo up && exec "$@"' sh \
  "$root/.venv/bin/python" "$root/bench/ray_host/bench.py"
