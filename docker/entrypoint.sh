#!/bin/bash
# The image's entry point: `fastpath doctor ARGS` first (it exits 0 when
# nothing blocks a start), then `exec fastpath ARGS`, so fastpath is the
# container's main process and `docker stop` (SIGTERM) stops it cleanly.
#
#   ARGS = [EAL args] -- [fastpath args]     (what `fastpath` takes)
#   FASTPATH_SKIP_DOCTOR=1                    start without asking doctor
#
# `health`, `doctor`, `--help` and `--version` as the first argument run that
# command alone.
set -euo pipefail

FASTPATH=${FASTPATH:-/usr/local/bin/fastpath}

case "${1:-}" in
    health | doctor | --help | -h | --version | -V | "")
        exec "$FASTPATH" "$@"
        ;;
esac

if [ "${FASTPATH_SKIP_DOCTOR:-0}" = 1 ]; then
    echo "fastpath-entrypoint: FASTPATH_SKIP_DOCTOR=1: starting without fastpath doctor" >&2
else
    rc=0
    "$FASTPATH" doctor "$@" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "fastpath-entrypoint: fastpath doctor found what blocks a start (exit $rc, see above);" \
            "fix it, or set FASTPATH_SKIP_DOCTOR=1 to start anyway" >&2
        exit "$rc"
    fi
fi

exec "$FASTPATH" "$@"
