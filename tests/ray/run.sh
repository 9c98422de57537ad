#!/usr/bin/env bash
# Runs tests/ray inside a network namespace of its own with only loopback in it: Ray binds and
# connects wherever it likes, and there the only place is 127.0.0.0/8 (docs/hosts.md).
#   tests/ray/run.sh [pytest args...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="$root/.venv/bin/python"
as_root=()
[[ $(id -u) -ne 0 ]] && as_root=(--map-root-user)
exec unshare --net "${as_root[@]}" -- sh -c 'ip link set lo up && exec "$@"' sh \
  "$py" -m pytest -q "$root/tests/ray" "$@"
