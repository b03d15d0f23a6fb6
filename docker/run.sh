#!/usr/bin/env bash
# Run the fastpath image with what DPDK needs from the host (docs/docker.md).
#
#   docker/run.sh [OPTIONS] -- [EAL args] [-- fastpath args]
#
#   docker/run.sh -- -l 0-1 --vdev net_null0 --vdev net_null1 -- --stats-period 5
#   docker/run.sh --data ./pcaps -- -l 0-1 --no-pci \
#       --vdev net_pcap0,rx_pcap=/data/in.pcap --vdev net_pcap1,tx_pcap=/data/out.pcap \
#       -- --forward 0:1 --until-input-done
#
# Everything after the first `--` goes to the image's entry point unchanged
# (`fastpath doctor` then `fastpath`), except that `--file-prefix fastpath`
# is put first when the EAL args name no file prefix: the prefix names the
# runtime folder /var/run/dpdk/PREFIX, shared with the host so that
# `fastpath health --file-prefix PREFIX` (or dpdk-telemetry.py) works there.
#
# Options:
#   --image IMAGE    image to run (default: $FASTPATH_IMAGE or fastpath:latest)
#   --name NAME      container name (default: fastpath, or fastpath-PREFIX)
#   --data DIR       mount host DIR at /data (pcaps, configs, statistics)
#   --config FILE    mount FILE read-only at /etc/fastpath/router.toml
#   -d, --detach     run in the background (docker stop NAME stops it cleanly)
#   --privileged     a privileged container instead of the capabilities below
#   --non-root       run as the image's user (uid 10001): only for --no-huge
#                    runs on virtual devices that need no capability
#   --check          only check the host's hugepages, then exit
#   --dry-run        print the engine command instead of running it
#   -h, --help       this text
#
# Capabilities (without --privileged):
#   IPC_LOCK               always: locking memory (vfio pins DMA memory; run.sh
#                          also gives --ulimit memlock=-1:-1 when /dev/vfio exists)
#   NET_RAW, NET_ADMIN     when an EAL arg names net_af_packet: an AF_PACKET
#                          socket, and promiscuous mode / MTU on the interface
#   NET_ADMIN, /dev/net/tun  when --config has `interfaces = true` ([kernel]):
#                          the ports' kernel interfaces (TAPs in the host's
#                          network namespace, for bgpd, sshd, ...)
#   SYS_ADMIN, SYS_RAWIO   never by default: only for physical-address (IOVA PA)
#                          drivers such as igb_uio/uio_pci_generic; add them
#                          with DOCKER_OPTS="--cap-add SYS_ADMIN --cap-add SYS_RAWIO"
#
# Environment:
#   DOCKER        container engine (default: docker; podman works too)
#   DOCKER_OPTS   extra engine options before `run`, split on spaces, e.g.
#                 "--storage-driver vfs --runtime runc --cgroup-manager=cgroupfs"
#   RUN_OPTS      extra `run` options, split on spaces, e.g. "-e FASTPATH_SKIP_DOCTOR=1"
set -euo pipefail

die() { printf 'docker/run.sh: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

DOCKER=${DOCKER:-docker}
IMAGE=${FASTPATH_IMAGE:-fastpath:latest}
name="" data="" config="" detach=0 privileged=0 non_root=0 check_only=0 dry_run=0

while [ $# -gt 0 ]; do
    case "$1" in
        --image) IMAGE=${2:?--image needs a value}; shift 2 ;;
        --name) name=${2:?--name needs a value}; shift 2 ;;
        --data) data=${2:?--data needs a directory}; shift 2 ;;
        --config) config=${2:?--config needs a file}; shift 2 ;;
        -d | --detach) detach=1; shift ;;
        --privileged) privileged=1; shift ;;
        --non-root) non_root=1; shift ;;
        --check) check_only=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option '$1' (EAL and fastpath arguments go after '--'; see --help)" ;;
    esac
done
args=("$@")

# The EAL part: up to the next `--`.
eal=()
for a in "${args[@]}"; do
    [ "$a" = -- ] && break
    eal+=("$a")
done

no_huge=0 af_packet=0 prefix=""
for i in "${!eal[@]}"; do
    a=${eal[$i]}
    case "$a" in
        --no-huge) no_huge=1 ;;
        --file-prefix) prefix=${eal[$((i + 1))]:-} ;;
        --file-prefix=*) prefix=${a#--file-prefix=} ;;
    esac
    case "$a" in *net_af_packet*) af_packet=1 ;; esac
done
case "${args[0]:-}" in
    health | doctor | --help | -h | --version | -V) die "run the image's '${args[0]}' with $DOCKER run or exec, not through run.sh" ;;
esac
if [ -z "$prefix" ]; then
    prefix=fastpath
    args=(--file-prefix "$prefix" "${args[@]}")
fi
case "$prefix" in */* | "" | . | ..) die "--file-prefix '$prefix' must be a plain name" ;; esac

# Hugepages: reserved (HugePages_Total), some free, and hugetlbfs mounted.
hugepage_mounts=()
check_hugepages() {
    local total free
    total=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
    free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
    mapfile -t hugepage_mounts < <(awk '$3 == "hugetlbfs" {print $2}' /proc/mounts)
    local fix=()
    if [ "${total:-0}" -eq 0 ]; then
        fix+=("no hugepages are reserved (HugePages_Total 0); reserve 1024 pages of 2 MiB:"
              "    echo 1024 > /proc/sys/vm/nr_hugepages")
    elif [ "${free:-0}" -eq 0 ]; then
        fix+=("all $total hugepages are in use (HugePages_Free 0): stop what holds them, or reserve more:"
              "    echo $((total + 1024)) > /proc/sys/vm/nr_hugepages")
    fi
    if [ ${#hugepage_mounts[@]} -eq 0 ]; then
        fix+=("no hugetlbfs is mounted; mount one:"
              "    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages")
    fi
    if [ ${#fix[@]} -gt 0 ]; then
        printf 'docker/run.sh: hugepages are not ready on this host:\n' >&2
        printf '  %s\n' "${fix[@]}" >&2
        printf '  (as root; or give --no-huge among the EAL args to run without hugepages)\n' >&2
        exit 1
    fi
    echo "docker/run.sh: hugepages: $free of $total free, hugetlbfs at ${hugepage_mounts[*]}" >&2
}

if [ "$no_huge" -eq 0 ]; then
    check_hugepages
fi
[ "$check_only" -eq 1 ] && exit 0

# shellcheck disable=SC2206 # split on spaces on purpose
engine=("$DOCKER" ${DOCKER_OPTS:-})
[ -n "$name" ] || { name=fastpath; [ "$prefix" = fastpath ] || name=fastpath-$prefix; }
run=(run --rm --network host --name "$name" -e "FASTPATH_FILE_PREFIX=$prefix")
[ "$detach" -eq 1 ] && run+=(--detach)
[ -t 0 ] && [ -t 1 ] && [ "$detach" -eq 0 ] && run+=(-it)

# The ports' kernel interfaces ([kernel] interfaces = true in the config).
kernel_interfaces=0
if [ -n "$config" ] && [ -f "$config" ] && grep -Eq '^[[:space:]]*interfaces[[:space:]]*=[[:space:]]*true' "$config"; then
    kernel_interfaces=1
fi
if [ "$privileged" -eq 1 ]; then
    run+=(--privileged)
else
    run+=(--cap-add IPC_LOCK)
    [ "$af_packet" -eq 1 ] && run+=(--cap-add NET_RAW --cap-add NET_ADMIN)
    [ "$kernel_interfaces" -eq 1 ] && run+=(--cap-add NET_ADMIN)
fi
[ "$kernel_interfaces" -eq 1 ] && run+=(--device /dev/net/tun)
# vfio-pci devices: the container node and one node per IOMMU group; vfio
# pins every DMA-mapped page, so no limit on locked memory.
vfio=0
if [ -d /dev/vfio ]; then
    for dev in /dev/vfio/*; do
        [ -c "$dev" ] && { run+=(--device "$dev"); vfio=1; }
    done
fi
[ "$vfio" -eq 1 ] && run+=(--ulimit memlock=-1:-1)
if [ "$non_root" -eq 0 ]; then
    # Root inside: hugetlbfs and /var/run/dpdk belong to root on the host, and
    # capabilities reach only a root process (no ambient capabilities).
    run+=(--user 0)
fi

if [ "$no_huge" -eq 0 ]; then
    run+=(-v "${hugepage_mounts[0]}:/dev/hugepages")
fi

# The runtime folder, shared so the host sees the telemetry socket.
runtime=/var/run/dpdk/$prefix
if [ "$dry_run" -eq 0 ]; then
    mkdir -p "$runtime" || die "cannot create $runtime (run as root)"
    [ "$non_root" -eq 1 ] && { chown 10001:10001 "$runtime" || die "cannot chown $runtime to uid 10001"; }
fi
run+=(-v "$runtime:$runtime")

if [ -n "$data" ]; then
    [ -d "$data" ] || die "--data $data is not a directory"
    run+=(-v "$(cd "$data" && pwd):/data")
fi
if [ -n "$config" ]; then
    [ -f "$config" ] || die "--config $config is not a file"
    run+=(-v "$(cd "$(dirname "$config")" && pwd)/$(basename "$config"):/etc/fastpath/router.toml:ro")
fi
# shellcheck disable=SC2206 # split on spaces on purpose
run+=(${RUN_OPTS:-})

cmd=("${engine[@]}" "${run[@]}" "$IMAGE" "${args[@]}")
if [ "$dry_run" -eq 1 ]; then
    printf '%q ' "${cmd[@]}"
    echo
    exit 0
fi
exec "${cmd[@]}"
