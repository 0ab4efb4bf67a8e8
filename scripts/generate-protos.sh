#!/usr/bin/env bash
# Regenerates Sources/FiregateProto/Generated/*.pb.swift from Protos/**/*.proto.
#
# Needs protoc and the well-known-type .protos (Debian: apt-get install protobuf-compiler
# libprotobuf-dev). protoc-gen-swift is built once from apple/swift-protobuf in a scratch
# package outside the repo (${TMPDIR:-/tmp}/firegate-protoc-gen-swift-<version>), product
# protoc-gen-swift only. Idempotent: the output folder is replaced as a whole, so running it
# twice gives the same files. Commit the result.
#
# Environment:
#   PROTOC                  protoc binary (default: protoc on PATH)
#   PROTOC_INCLUDE          folder holding google/protobuf/*.proto (default: /usr/include)
#   PROTOC_GEN_SWIFT        an existing protoc-gen-swift to use instead of building one
#   SWIFT_PROTOBUF_VERSION  swift-protobuf version to build the plugin from (default: 1.39.0;
#                           keep it equal to the version Package.swift resolves)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROTO_DIR="$REPO/Protos"
OUT_DIR="$REPO/Sources/FiregateProto/Generated"
PROTOC="${PROTOC:-protoc}"
PROTOC_INCLUDE="${PROTOC_INCLUDE:-/usr/include}"
SWIFT_PROTOBUF_VERSION="${SWIFT_PROTOBUF_VERSION:-1.39.0}"

die() { echo "generate-protos: $*" >&2; exit 1; }

command -v "$PROTOC" >/dev/null || die "protoc not found (apt-get install protobuf-compiler, or set PROTOC)"
[ -f "$PROTOC_INCLUDE/google/protobuf/timestamp.proto" ] \
  || die "no google/protobuf/*.proto under $PROTOC_INCLUDE (apt-get install libprotobuf-dev, or set PROTOC_INCLUDE)"

build_plugin() {
  local dir="${TMPDIR:-/tmp}/firegate-protoc-gen-swift-$SWIFT_PROTOBUF_VERSION"
  case "$dir/" in "$REPO"/*) die "scratch dir $dir is inside the repo; set TMPDIR elsewhere" ;; esac
  local bin="$dir/.build/release/protoc-gen-swift"
  if [ ! -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qx "protoc-gen-swift $SWIFT_PROTOBUF_VERSION"; then
    echo "generate-protos: building protoc-gen-swift $SWIFT_PROTOBUF_VERSION in $dir" >&2
    mkdir -p "$dir"
    cat >"$dir/Package.swift" <<EOF
// swift-tools-version:5.9
// Scratch package: only builds protoc-gen-swift for Firegate's scripts/generate-protos.sh.
import PackageDescription

let package = Package(
    name: "firegate-protoc-tools",
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf.git", exact: "$SWIFT_PROTOBUF_VERSION"),
    ]
)
EOF
    # Only the plugin product: swift-protobuf's `protoc` product compiles protobuf's C++.
    (cd "$dir" && nice -n 10 swift build -c release --product protoc-gen-swift >&2) \
      || die "building protoc-gen-swift failed"
  fi
  echo "$bin"
}

PLUGIN="${PROTOC_GEN_SWIFT:-$(build_plugin)}"
[ -x "$PLUGIN" ] || die "protoc-gen-swift not executable: $PLUGIN"

cd "$PROTO_DIR"
PROTOS=()
while IFS= read -r f; do PROTOS+=("$f"); done < <(find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
[ "${#PROTOS[@]}" -gt 0 ] || die "no .proto files under $PROTO_DIR"

# Generate into a temporary folder, then replace the output folder, so files of removed protos
# do not linger and a failed run leaves the old files in place.
TMP_OUT="$(mktemp -d "${TMPDIR:-/tmp}/firegate-protos.XXXXXX")"
trap 'rm -rf "$TMP_OUT"' EXIT
"$PROTOC" \
  --plugin=protoc-gen-swift="$PLUGIN" \
  -I "$PROTO_DIR" -I "$PROTOC_INCLUDE" \
  --swift_out="$TMP_OUT" \
  --swift_opt=Visibility=Public \
  --swift_opt=FileNaming=PathToUnderscores \
  "${PROTOS[@]}"

mkdir -p "$OUT_DIR"
find "$OUT_DIR" -maxdepth 1 -name '*.pb.swift' -delete
cp "$TMP_OUT"/*.pb.swift "$OUT_DIR"/
echo "generate-protos: wrote $(ls "$TMP_OUT"/*.pb.swift | wc -l) files to ${OUT_DIR#"$REPO"/} ($("$PLUGIN" --version))" >&2
