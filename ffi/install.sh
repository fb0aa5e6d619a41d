#!/bin/sh
# Builds the C library in release mode and installs it for C and C++ builds:
#
#   PREFIX/include/tensorprep.h, tensorprep.hpp
#   PREFIX/lib/libtensorprep.so.X.Y.Z (+ the soname and .so links), libtensorprep.a
#   PREFIX/lib/pkgconfig/tensorprep.pc                    pkg-config --cflags --libs tensorprep
#   PREFIX/lib/cmake/tensorprep/tensorprepConfig*.cmake   find_package(tensorprep)
#
# usage: ffi/install.sh [--prefix DIR] [--features LIST] [--no-default-features] [--strip]
#   --prefix DIR              where to install (default /usr/local)
#   --features LIST           Cargo features of tensorprep-ffi (e.g. full, turbojpeg;
#                             the default is the device-sized library, ffi/Cargo.toml)
#   --no-default-features     the smallest library (JPEG, RGB and YUV 4:2:0 input,
#                             Pillow's and OpenCV's resize, graphs)
#   --strip                   strip debug information from the libraries
# Linux (ELF) only; for Android see docs/c-api.md, "Android and ARM"
# (cargo ndk builds the .so).
set -eu
cd "$(dirname "$0")/.."

prefix=/usr/local
features=""
no_default=""
strip_libs=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --features) features="$2"; shift 2 ;;
        --no-default-features) no_default="--no-default-features"; shift ;;
        --strip) strip_libs=1; shift ;;
        *) echo "unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
    esac
done

version=$(cargo pkgid -p tensorprep-ffi | sed 's/.*[@#]//')
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
# Before 1.0 each minor release is its own ABI: libtensorprep.so.0.1.
if [ "$major" = 0 ]; then soname="libtensorprep.so.0.$minor"; else soname="libtensorprep.so.$major"; fi
shared="libtensorprep.so.$version"

# The soname goes on the final link only; --print native-static-libs names
# what the static archive needs besides libc.
log=$(mktemp)
cargo rustc --release --locked -p tensorprep-ffi $no_default ${features:+--features "$features"} \
    -- -C link-arg=-Wl,-soname,"$soname" --print native-static-libs 2>"$log" || {
    cat "$log" >&2
    exit 1
}
private_libs=$(sed -n 's/.*native-static-libs: //p' "$log" | tail -1)
rm -f "$log"
target_dir=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
out="$target_dir/release"

mkdir -p "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/tensorprep"
cp include/tensorprep.h include/tensorprep.hpp "$prefix/include/"
cp "$out/libtensorprep.so" "$prefix/lib/$shared"
cp "$out/libtensorprep.a" "$prefix/lib/libtensorprep.a"
if [ -n "$strip_libs" ]; then
    strip --strip-unneeded "$prefix/lib/$shared"
    strip --strip-debug "$prefix/lib/libtensorprep.a"
fi
ln -sf "$shared" "$prefix/lib/$soname"
ln -sf "$soname" "$prefix/lib/libtensorprep.so"

cmake_libs=$(printf '%s' "$private_libs" | sed 's/-l//g; s/  */;/g')
substitute() {
    sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" \
        -e "s|@MINOR@|$minor|g" -e "s|@SONAME@|$soname|g" -e "s|@SHARED_FILE@|$shared|g" \
        -e "s|@PRIVATE_LIBS@|$private_libs|g" -e "s|@PRIVATE_LIBS_CMAKE@|$cmake_libs|g" \
        -e "s|@FEATURES@|${no_default:+no-default }${features:-default}|g" "$1" > "$2"
}
substitute ffi/pkg/tensorprep.pc.in "$prefix/lib/pkgconfig/tensorprep.pc"
substitute ffi/pkg/tensorprepConfig.cmake.in "$prefix/lib/cmake/tensorprep/tensorprepConfig.cmake"
substitute ffi/pkg/tensorprepConfigVersion.cmake.in \
    "$prefix/lib/cmake/tensorprep/tensorprepConfigVersion.cmake"

echo "installed tensorprep $version in $prefix"
echo "  lib/$shared ($(wc -c < "$prefix/lib/$shared") bytes), soname $soname"
echo "  lib/libtensorprep.a, include/tensorprep.h, include/tensorprep.hpp"
echo "  lib/pkgconfig/tensorprep.pc, lib/cmake/tensorprep/"
