#!/usr/bin/env bash
# tests/bridge/grpcpeer/build.sh OUT — builds the grpc-go test server for yao-bridge's grpc
# mode and installs it at OUT. The Go code for yao.proto is generated here (protoc from
# Debian's protobuf-compiler, protoc-gen-go and protoc-gen-go-grpc from the module proxy at
# the versions go.mod pins as tools), in a work copy outside the repository. The binary is
# cached outside the repository too, keyed by a hash of these sources, so a second run
# builds nothing; modules come from the Go module proxy (or the module cache) and go.sum
# checks them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT}
export PATH=/usr/local/go/bin:$PATH
cache=${YAO_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yao-sandbox}
srcs=(yao.proto main.go go.mod go.sum build.sh)
hash=$(cd "$here" && cat "${srcs[@]}" | sha256sum | cut -c1-16)
bin=$cache/bin/yao-grpcpeer-$hash

if [ ! -x "$bin" ]; then
    command -v go >/dev/null || { echo "build.sh: go not found" >&2; exit 1; }
    command -v protoc >/dev/null || { echo "build.sh: protoc not found (protobuf-compiler)" >&2; exit 1; }
    w=$cache/src/grpcpeer-$hash
    rm -rf "$w"
    mkdir -p "$w/pb" "$cache/bin"
    (cd "$here" && cp "${srcs[@]}" "$w/")
    cd "$w"
    export GOFLAGS=-mod=readonly CGO_ENABLED=0
    go build -trimpath -o "$w/tools/" google.golang.org/protobuf/cmd/protoc-gen-go \
        google.golang.org/grpc/cmd/protoc-gen-go-grpc
    PATH=$w/tools:$PATH protoc --go_out=pb --go_opt=paths=source_relative \
        --go-grpc_out=pb --go-grpc_opt=paths=source_relative yao.proto
    go build -trimpath -o grpcpeer .
    install -m 0755 grpcpeer "$bin.tmp"
    mv "$bin.tmp" "$bin"
    cd /
    rm -rf "$w"
fi
mkdir -p "$(dirname "$out")"
install -m 0755 "$bin" "$out.tmp"
mv "$out.tmp" "$out"
