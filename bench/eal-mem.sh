#!/usr/bin/env bash
# Sourced by the bench scripts: the EAL memory options in MEM, unless the caller set
# them. Hugepages when at least 1,100 MiB of them are free on a mounted hugetlbfs (as
# `fastpath-bench compare` decides), else --no-huge.
huge_free_mb() {
    awk '/^HugePages_Free:/ { n = $2 } /^Hugepagesize:/ { kb = $2 } END { print int(n * kb / 1024) }' /proc/meminfo
}
if [ -z "${MEM:-}" ]; then
    MEM="--no-huge -m 1024"
    if grep -q ' hugetlbfs ' /proc/mounts && [ "$(huge_free_mb)" -ge 1100 ]; then
        MEM="-m 1024 --huge-unlink"
    fi
fi
