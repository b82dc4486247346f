#!/usr/bin/env bash
# A Docker daemon and the base image for the Docker sandbox's tests (tests/sandbox/test_docker*.py).
#   docker.sh start  installs Debian's docker.io and debootstrap when missing, starts dockerd when no daemon answers
#                    (writing its pid to $PIDFILE, so `stop` ends only a daemon this script started), and builds
#                    the base image niceeval-base:bookworm once per content (suite, variant, packages).
#   docker.sh stop   stops the daemon `start` started, if it did.
# No image registry is reachable from CI, so the base image comes from Debian's packages: debootstrap writes a
# root file system, kept as a tarball under $CACHE, and `docker import` turns it into the image. A later run finds
# the image by its content label and does nothing, or imports the cached tarball (seconds, not minutes).
set -euo pipefail
PIDFILE=/run/niceeval-dockerd.pid
CACHE=/var/cache/niceeval
IMAGE=niceeval-base:bookworm
SUITE=bookworm
VARIANT=minbase
PACKAGES=python3

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else return 1
    fi
}

install_missing() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ ${#missing[@]} -eq 0 ] && return 0
    as_root sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${missing[*]} >/dev/null" || {
        echo "niceeval tests: ${missing[*]} missing and not installable without root; the Docker sandbox tests" \
             "are skipped, or fail under CI=true" >&2
        return 1
    }
}

start_daemon() {
    docker info >/dev/null 2>&1 && return 0
    # No bridge, no iptables: every sandbox container runs with --network none, services share its namespace.
    as_root sh -c "dockerd --storage-driver overlay2 --iptables=false --ip-masq=false --bridge=none \
        >/var/log/niceeval-dockerd.log 2>&1 & echo \$! > $PIDFILE" || {
        echo "niceeval tests: no Docker daemon answers and this user cannot start one" >&2
        return 1
    }
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "niceeval tests: dockerd did not answer within 30 s; its log: /var/log/niceeval-dockerd.log" >&2
    tail -20 /var/log/niceeval-dockerd.log >&2 || true
    return 1
}

build_base_image() {
    local key tarball root
    key=$(printf '%s\n' "$SUITE" "$VARIANT" "$PACKAGES" | sha256sum | cut -c1-16)
    if [ "$(docker image inspect "$IMAGE" --format '{{index .Config.Labels "niceeval.content"}}' 2>/dev/null)" = "$key" ]
    then
        return 0
    fi
    tarball="$CACHE/base-$SUITE-$key.tar"
    if [ ! -f "$tarball" ]; then
        root=$(mktemp -d /var/tmp/niceeval-rootfs.XXXXXX)
        if ! as_root debootstrap --variant="$VARIANT" --include="$PACKAGES" "$SUITE" "$root" >/dev/null; then
            as_root rm -rf "$root"
            echo "niceeval tests: debootstrap of $SUITE failed, so there is no $IMAGE image" >&2
            return 1
        fi
        as_root mkdir -p "$CACHE" &&
            as_root sh -c "tar -C '$root' -c . > '$tarball.part' && mv '$tarball.part' '$tarball'"
        as_root rm -rf "$root"
    fi
    docker import --change "LABEL niceeval.content=$key" "$tarball" "$IMAGE" >/dev/null
}

stop_daemon() {
    [ -f "$PIDFILE" ] || return 0
    local pid
    pid=$(cat "$PIDFILE")
    as_root kill "$pid" 2>/dev/null || true
    for _ in $(seq 40); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    as_root rm -f "$PIDFILE"
}

case "${1:-start}" in
    # A failure here is reported, not fatal: the Docker tests then say why they cannot run (failing under CI=true).
    start) install_missing && start_daemon && build_base_image || true ;;
    stop) stop_daemon ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
