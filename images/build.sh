#!/usr/bin/env bash
# Build the yao-sandbox container images without a Docker engine or an image registry, and
# push them to a registry when asked (`push`).
#
#   images/build.sh [base|controller|sandbox|all|claude|claude-full|agents|push|push-agents|prune]...
#                                                                  (default: all)
#
#   base        docker.io/library/debian:bookworm-slim, made locally with debootstrap
#               (minbase) and `podman import`; skipped when the image already exists,
#               imported from the rootfs tarball in the cache when that exists.
#   controller  yao-sandbox/controller:$TAG   (images/controller/Dockerfile)
#   sandbox     yao-sandbox/sandbox:$TAG      (images/sandbox/Dockerfile)
#   claude      yao-sandbox/sandbox-claude:$TAG  (images/sandbox-claude/Dockerfile): the
#               sandbox image + Claude Code's CLI (npm, pinned: CLAUDE_CODE_VERSION) with
#               yao-bridge as its MCP server, Node.js and Python 3 (Debian)
#   claude-full yao-sandbox/sandbox-claude:$TAG-full  (Dockerfile.full): + a Go toolchain
#               (golang.org/toolchain from the Go module proxy, GO_VERSION)
#   agents      claude and claude-full (`make images` builds all and agents)
#   push        push controller and sandbox (:$TAG and :latest) to $YAO_IMAGE_REGISTRY,
#               as $YAO_IMAGE_REGISTRY/yao-sandbox/{controller,sandbox} (buildah push;
#               only the blobs the registry lacks are sent)
#   push-agents push sandbox-claude (:$TAG, :latest, :$TAG-full, :full) the same way
#   prune       remove dangling images (old tags and the build-stage layer cache)
#
# Idempotent: run it as often as you like; a warm run reuses the base image and the
# buildah layer cache (--layers) and takes seconds. Everything is built with
# `buildah bud --isolation=chroot --pull=never` from the repository root as context
# (images/containerignore keeps build trees and .git out of it).
#
# Environment:
#   YAO_IMAGE_TAG       tag of both images (default: project VERSION in CMakeLists.txt);
#                       `latest` is tagged as well (the controller's default sandbox image
#                       is yao-sandbox/sandbox:latest)
#   YAO_IMAGE_CACHE     cache dir for the base rootfs tarball
#                       (default ~/.cache/yao-sandbox/images)
#   YAO_BASE_REFRESH=1  debootstrap a fresh base even when image / tarball exist
#   YAO_IMAGE_NO_CACHE=1  build the images without the buildah layer cache (cold build)
#   YAO_BUILD_JOBS      make -j inside the build stage (default 2)
#   YAO_DEBIAN_MIRROR   mirror for debootstrap and the images' apt sources
#                       (default: the one configured in /etc/apt/sources.list*)
#   YAO_IMAGE_REGISTRY  registry of `push`: host[:port][/path] (e.g. the local plane's,
#                       tests/cluster/registry)
#   YAO_IMAGE_REGISTRY_AUTHFILE  its credentials, a containers auth.json (buildah --authfile;
#                       default: buildah's own, e.g. after `buildah login`)
#   YAO_IMAGE_REGISTRY_CERT_DIR  a directory with the CA of its TLS certificate (*.crt,
#                       buildah --cert-dir; default: the system's CAs)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE_IMAGE=docker.io/library/debian:bookworm-slim
SUITE=bookworm
# Bump when the recipe of the base rootfs changes: it keys the cached tarball.
BASE_RECIPE=r1
CACHE=${YAO_IMAGE_CACHE:-${HOME:-/root}/.cache/yao-sandbox/images}
JOBS=${YAO_BUILD_JOBS:-2}
TAG=${YAO_IMAGE_TAG:-$(sed -n 's/^project(yao-sandbox VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")}
TAG=${TAG:-0.1.0}
CONTROLLER_IMAGE=yao-sandbox/controller
SANDBOX_IMAGE=yao-sandbox/sandbox
CLAUDE_IMAGE=yao-sandbox/sandbox-claude
# The agent images' pinned parts: Claude Code's npm version, the Go toolchain of :full.
CLAUDE_CODE_VERSION=${CLAUDE_CODE_VERSION:-2.1.332}
GO_VERSION=${YAO_IMAGE_GO_VERSION:-1.26.8}

log() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] error: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
SUMMARY=()

[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot isolation and the rootful image store need it)"

# --- tools -------------------------------------------------------------------------
ensure_tools() {
    local need=() cmd pkg
    for pair in buildah:buildah podman:podman debootstrap:debootstrap \
                fuse-overlayfs:fuse-overlayfs newuidmap:uidmap; do
        cmd=${pair%%:*} pkg=${pair#*:}
        command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
    done
    [ ${#need[@]} -eq 0 ] && return 0
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends)
    # apt-get update only when the package lists do not know the packages.
    if ! "${apt[@]}" install "${need[@]}" >/dev/null; then
        apt-get -o DPkg::Lock::Timeout=600 -q update >/dev/null
        "${apt[@]}" install "${need[@]}" >/dev/null
    fi
}

# --- Debian mirror actually configured on this machine --------------------------------
# Prints "URI" of the main archive (suite $SUITE) and of the security archive.
apt_uris() {
    local files=() f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && files+=("$f")
    done
    [ ${#files[@]} -gt 0 ] || return 0
    awk -v suite="$SUITE" '
        function emit(u, s) { sub(/\/+$/, "", u); print s, u }
        # one-line format: deb [opts] URI SUITE COMPONENTS
        /^[ \t]*deb[ \t]/ {
            i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
            emit($i, $(i + 1)); next
        }
        # deb822 format
        /^[ \t]*$/ { if (uris != "" && types ~ /(^| )deb( |$)/) { n = split(suites, s, " "); m = split(uris, u, " ");
                       for (a = 1; a <= m; a++) for (b = 1; b <= n; b++) emit(u[a], s[b]) }
                     uris = suites = types = ""; next }
        /^URIs:/   { sub(/^URIs:[ \t]*/, ""); uris = $0 }
        /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
        /^Types:/  { sub(/^Types:[ \t]*/, ""); types = $0 }
        END { if (uris != "" && types ~ /(^| )deb( |$)/) { n = split(suites, s, " "); m = split(uris, u, " ");
                for (a = 1; a <= m; a++) for (b = 1; b <= n; b++) emit(u[a], s[b]) } }
    ' "${files[@]}"
}

pick_mirrors() {
    local uris
    uris=$(apt_uris || true)
    MIRROR=${YAO_DEBIAN_MIRROR:-$(awk -v s="$SUITE" '$1 == s { print $2; exit }' <<<"$uris")}
    MIRROR=${MIRROR:-http://deb.debian.org/debian}
    SECURITY_MIRROR=$(awk -v s="$SUITE-security" '$1 == s { print $2; exit }' <<<"$uris")
    if [ -z "$SECURITY_MIRROR" ]; then
        case $MIRROR in
            */debian) SECURITY_MIRROR=${MIRROR}-security ;;
            *) SECURITY_MIRROR=http://deb.debian.org/debian-security ;;
        esac
    fi
}

# --- base image ----------------------------------------------------------------------
# The rootfs is shaped like Docker's official debian:bookworm-slim: minbase, no docs /
# man pages / locales (dpkg path-exclude, which also applies to every later apt-get
# install in the Dockerfiles), apt caches cleaned after each install, no apt lists.
slim_rootfs() {
    local dir=$1
    mkdir -p "$dir/etc/dpkg/dpkg.cfg.d" "$dir/etc/apt/apt.conf.d" "$dir/etc/apt/sources.list.d"
    cat >"$dir/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# as in the official slim images: keep copyright files, drop the rest of the docs
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    printf 'Acquire::Languages "none";\n' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
    printf 'Acquire::GzipIndexes "true";\n' >"$dir/etc/apt/apt.conf.d/docker-gzip-indexes"
    printf 'Apt::AutoRemove::SuggestsImportant "false";\n' >"$dir/etc/apt/apt.conf.d/docker-autoremove-suggests"
    # no services start inside image builds
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod 0755 "$dir/usr/sbin/policy-rc.d"
    rm -f "$dir/etc/apt/sources.list"
    cat >"$dir/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # what debootstrap left behind that an image must not carry
    find "$dir/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null || true
    find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
    rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/lintian/* \
           "$dir"/usr/share/groff/* "$dir"/usr/share/linda/*
    find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb \
           "$dir"/var/log/* "$dir"/tmp/* "$dir"/var/tmp/* "$dir"/run/* \
           "$dir"/dev/* "$dir"/proc/* "$dir"/sys/* "$dir"/debootstrap
    mkdir -p "$dir/var/lib/apt/lists/partial" "$dir/var/cache/apt/archives/partial"
    rm -f "$dir/etc/resolv.conf" "$dir/etc/hostname"
    : >"$dir/etc/machine-id"
    chmod 1777 "$dir/tmp" "$dir/var/tmp"
}

base_tarball() {
    local f
    for f in "$CACHE/debian-$SUITE-slim-$BASE_RECIPE.tar.zst" "$CACHE/debian-$SUITE-slim-$BASE_RECIPE.tar.gz"; do
        [ -s "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

import_tarball() {
    local tarball=$1 created
    created=$(cat "$tarball.created" 2>/dev/null || date -u -r "$tarball" +%Y-%m-%dT%H:%M:%SZ)
    local decomp=(gzip -dc)
    case $tarball in *.zst) decomp=(zstd -dcq) ;; esac
    "${decomp[@]}" "$tarball" | podman import -q \
        --change 'CMD ["bash"]' \
        --change "LABEL org.opencontainers.image.created=$created" \
        --change "LABEL org.opencontainers.image.description=Debian $SUITE minbase (debootstrap), slimmed like debian:$SUITE-slim" \
        --change "LABEL com.yaoapps.yao-sandbox.base-recipe=$BASE_RECIPE" \
        - "$BASE_IMAGE" >/dev/null
}

ensure_base() {
    local t0 tarball dir avail
    if [ "${YAO_BASE_REFRESH:-0}" != 1 ] && podman image exists "$BASE_IMAGE"; then
        log "base $BASE_IMAGE present"
        return 0
    fi
    mkdir -p "$CACHE"
    if [ "${YAO_BASE_REFRESH:-0}" != 1 ] && tarball=$(base_tarball); then
        t0=$(now)
        import_tarball "$tarball"
        SUMMARY+=("base import from cache $(elapsed "$t0")s ($tarball)")
        log "base $BASE_IMAGE imported from $tarball"
        return 0
    fi
    pick_mirrors
    avail=$(df -Pk "$CACHE" | awk 'NR == 2 { print $4 }')
    [ "${avail:-0}" -ge 1048576 ] || die "less than 1 GiB free under $CACHE; debootstrap needs about 1 GiB"
    dir=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$dir'" EXIT
    log "debootstrap --variant=minbase $SUITE from $MIRROR (a minute or two)"
    t0=$(now)
    if ! debootstrap --variant=minbase "$SUITE" "$dir" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
        tail -20 "$CACHE/debootstrap.log" >&2
        die "debootstrap failed (log: $CACHE/debootstrap.log)"
    fi
    SUMMARY+=("debootstrap $(elapsed "$t0")s")
    slim_rootfs "$dir"
    t0=$(now)
    local out ext comp
    if command -v zstd >/dev/null 2>&1; then ext=zst comp=(zstd -q -T2 -10); else ext=gz comp=(gzip -6); fi
    out="$CACHE/debian-$SUITE-slim-$BASE_RECIPE.tar.$ext"
    tar -C "$dir" --numeric-owner --xattrs --sort=name -cf - . | "${comp[@]}" >"$out.tmp"
    date -u +%Y-%m-%dT%H:%M:%SZ >"$out.created"
    mv -f "$out.tmp" "$out"
    rm -f "$CACHE/debian-$SUITE-slim-$BASE_RECIPE.tar."{zst,gz}.tmp
    [ "$ext" = zst ] && rm -f "$CACHE/debian-$SUITE-slim-$BASE_RECIPE.tar.gz" || true
    import_tarball "$out"
    rm -rf "$dir"
    trap - EXIT
    SUMMARY+=("base tar+import $(elapsed "$t0")s; tarball $(du -h "$out" | cut -f1) at $out")
    log "base $BASE_IMAGE created; rootfs cached at $out"
}

# --- application images ----------------------------------------------------------------
build_image() {
    # NAME DOCKERFILE [CONTEXT [BUILD-ARGS...]]: CONTEXT "" = the repository root;
    # Dockerfile.full builds the -full tag (and :full) of NAME.
    local name=$1 dockerfile=$2 ctx=${3:-} t0 args=() tags
    shift 2; [ $# -gt 0 ] && shift
    [ "${YAO_IMAGE_NO_CACHE:-0}" = 1 ] && args+=(--no-cache)
    tags=(-t "$name:$TAG" -t "$name:latest")
    case $dockerfile in *.full) tags=(-t "$name:$TAG-full" -t "$name:full") ;; esac
    local logf=$CACHE/build-${name##*/}${dockerfile##*Dockerfile}.log
    log "building ${tags[1]} from $dockerfile"
    t0=$(now)
    if [ -z "$ctx" ]; then
        (cd "$ROOT" && buildah bud --isolation=chroot --pull=never --layers --force-rm "${args[@]}" \
            --ignorefile images/containerignore \
            --build-arg "JOBS=$JOBS" --build-arg "VERSION=$TAG" "$@" \
            "${tags[@]}" -f "$dockerfile" .) >"$logf" 2>&1
    else
        buildah bud --isolation=chroot --pull=never --layers --force-rm "${args[@]}" \
            --build-arg "VERSION=$TAG" "$@" "${tags[@]}" -f "$ROOT/$dockerfile" "$ctx" >"$logf" 2>&1
    fi || {
        tail -40 "$logf" >&2
        die "build of ${tags[1]} failed (log: $logf)"
    }
    local how="with layer cache"
    [ "${YAO_IMAGE_NO_CACHE:-0}" = 1 ] && how="no layer cache"
    SUMMARY+=("${tags[1]} built in $(elapsed "$t0")s ($how)")
}

# --- the agent images --------------------------------------------------------------------
# sandbox-claude: on the sandbox image of this version; npm inside the build uses the
# registry the build machine's npm uses.
build_claude() {
    buildah inspect --type image "$SANDBOX_IMAGE:$TAG" >/dev/null 2>&1 || { ensure_base; build_image "$SANDBOX_IMAGE" images/sandbox/Dockerfile; }
    local reg="" ca=() bundle=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
    command -v npm >/dev/null 2>&1 && reg=$(npm config get registry 2>/dev/null || true)
    # The machine's CA bundle for npm's TLS (mounted into the build step, not the image).
    [ -s "$bundle" ] && ca=(--volume "$bundle:/run/yao-build-ca.crt:ro" --build-arg NPM_CAFILE=/run/yao-build-ca.crt)
    build_image "$CLAUDE_IMAGE" images/sandbox-claude/Dockerfile "" \
        --build-arg "CLAUDE_CODE_VERSION=$CLAUDE_CODE_VERSION" --build-arg "NPM_REGISTRY=$reg" "${ca[@]}"
}

# sandbox-claude:full: the Go toolchain module, downloaded once into the module cache and
# laid out as the build context (keyed by version).
build_claude_full() {
    buildah inspect --type image "$CLAUDE_IMAGE:$TAG" >/dev/null 2>&1 || build_claude
    local ctx=$CACHE/go-toolchain-$GO_VERSION dir
    if [ ! -x "$ctx/go/bin/go" ]; then
        command -v go >/dev/null 2>&1 || export PATH=/usr/local/go/bin:$PATH
        log "downloading the Go $GO_VERSION toolchain from the Go module proxy"
        dir=$(cd "$CACHE" && GOFLAGS=-mod=mod go mod download -json "golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64" |
              sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
        [ -f "$dir/bin/go" ] || die "could not download golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64"
        rm -rf "$ctx.tmp" && mkdir -p "$ctx.tmp"
        # The module cache keeps files read-only and without exec bits; `go` sets them on
        # the programs when it switches to a downloaded toolchain, as here.
        cp -a "$dir" "$ctx.tmp/go" && chmod -R u+w,a+rX "$ctx.tmp/go" &&
            chmod a+x "$ctx.tmp/go/bin/"* "$ctx.tmp/go/pkg/tool/"*/*
        rm -rf "$ctx" && mv "$ctx.tmp" "$ctx"
    fi
    build_image "$CLAUDE_IMAGE" images/sandbox-claude/Dockerfile.full "$ctx" --build-arg "GO_VERSION=$GO_VERSION"
}

# --- pushing to a registry ---------------------------------------------------------------
push_images() {
    # REF... (name:tag), each pushed as $reg/name:tag
    local reg=${YAO_IMAGE_REGISTRY:-} opts=() ref t0 digest key
    [ -n "$reg" ] || die "push: set YAO_IMAGE_REGISTRY (host[:port][/path]) to the registry to push to"
    [ -n "${YAO_IMAGE_REGISTRY_AUTHFILE:-}" ] && opts+=(--authfile "$YAO_IMAGE_REGISTRY_AUTHFILE")
    [ -n "${YAO_IMAGE_REGISTRY_CERT_DIR:-}" ] && opts+=(--cert-dir "$YAO_IMAGE_REGISTRY_CERT_DIR")
    for ref in "$@"; do
        buildah inspect --type image "$ref" >/dev/null 2>&1 ||
            die "push: $ref is not built (images/build.sh --help names the targets)"
        t0=$(now)
        key=$(printf '%s' "${ref##*/}" | tr ':' '-')
        buildah push -q "${opts[@]}" --digestfile "$CACHE/push-$key.digest" \
            "$ref" "docker://$reg/$ref" >"$CACHE/push-$key.log" 2>&1 || {
            cat "$CACHE/push-$key.log" >&2
            die "push of $ref to $reg/$ref failed"
        }
        digest=$(cat "$CACHE/push-$key.digest")
        SUMMARY+=("$reg/$ref pushed in $(elapsed "$t0")s: $digest")
    done
}

main() {
    local targets=("$@") t
    [ ${#targets[@]} -eq 0 ] && targets=(all)
    mkdir -p "$CACHE"
    ensure_tools
    for t in "${targets[@]}"; do
        case $t in
            base) ensure_base ;;
            controller) ensure_base; build_image "$CONTROLLER_IMAGE" images/controller/Dockerfile ;;
            sandbox) ensure_base; build_image "$SANDBOX_IMAGE" images/sandbox/Dockerfile ;;
            all) ensure_base
                 build_image "$CONTROLLER_IMAGE" images/controller/Dockerfile
                 build_image "$SANDBOX_IMAGE" images/sandbox/Dockerfile ;;
            claude) build_claude ;;
            claude-full) build_claude_full ;;
            agents) build_claude; build_claude_full ;;
            push) push_images "$CONTROLLER_IMAGE:$TAG" "$CONTROLLER_IMAGE:latest" "$SANDBOX_IMAGE:$TAG" "$SANDBOX_IMAGE:latest" ;;
            push-agents) push_images "$CLAUDE_IMAGE:$TAG" "$CLAUDE_IMAGE:latest" "$CLAUDE_IMAGE:$TAG-full" "$CLAUDE_IMAGE:full" ;;
            prune) buildah rmi --prune >/dev/null 2>&1 || true; log "dangling images removed" ;;
            -h|--help) sed -n '2,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; return 0 ;;
            *) die "unknown target '$t' (base, controller, sandbox, all, claude, claude-full, agents, push, push-agents, prune)" ;;
        esac
    done
    for t in "${SUMMARY[@]}"; do log "$t"; done
    buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' \
        | grep -E "^(localhost/)?($CONTROLLER_IMAGE|$SANDBOX_IMAGE|$CLAUDE_IMAGE):$TAG(-full)? |^$BASE_IMAGE " \
        | sed 's/^/[images] size /' >&2 || true
}

main "$@"
