#!/usr/bin/env bash
# The embedded example end to end: builds the firmware for an Arm Cortex-M4F
# (thumbv7em-none-eabihf) twice, with an allocator (embedded-alloc) and with no
# allocator linked at all (arena plans), runs both under qemu-system-arm
# (machine mps2-an386, semihosting) with a time limit, runs the same frame and
# plans natively, and prints exactly three lines:
#
#   host: checksum <16 hex>
#   alloc: checksum <16 hex>
#   no-alloc: checksum <16 hex>
#
# The ELFs are left in target/alloc.elf and target/no-alloc.elf.
# `run.sh --report` prints, after the three lines, the memory table (flash,
# RAM, arena/heap, stack high-water) and what each part of the code costs.
# Installs what it needs: the Rust target, llvm-tools, qemu-system-arm.
set -euo pipefail
cd "$(dirname "$0")"

report=false
[ "${1:-}" = "--report" ] && report=true

log() { echo "$*" >&2; }

# --- tools -------------------------------------------------------------------
rustup target add thumbv7em-none-eabihf >/dev/null 2>&1 || true
rustup component add llvm-tools >/dev/null 2>&1 || rustup component add llvm-tools-preview >/dev/null 2>&1 || true
if ! command -v qemu-system-arm >/dev/null 2>&1; then
    log "installing qemu-system-arm"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq qemu-system-arm >/dev/null
fi
command -v qemu-system-arm >/dev/null || { log "qemu-system-arm is missing"; exit 1; }
grep -q '^thumbv7em-none-eabihf$' <<<"$(rustup target list --installed)" || { log "the thumbv7em-none-eabihf target is missing"; exit 1; }
bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
nm="$bin/llvm-nm"
size="$bin/llvm-size"
[ -x "$nm" ] && [ -x "$size" ] || { log "llvm-tools (llvm-nm, llvm-size) are missing"; exit 1; }

# --- build -------------------------------------------------------------------
target=thumbv7em-none-eabihf
elf=target/$target/release/firmware
cargo build --release --locked --quiet -p firmware --target $target --features alloc
cp "$elf" target/alloc.elf
cargo build --release --locked --quiet -p firmware --target $target
cp "$elf" target/no-alloc.elf
host=$(cargo run --release --locked --quiet -p host)

# --- run under emulation -----------------------------------------------------
emulate() {
    timeout 300 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
        -semihosting-config enable=on,target=native -kernel "$1"
}
out_alloc=$(emulate target/alloc.elf) || { log "alloc firmware failed: $out_alloc"; exit 1; }
out_none=$(emulate target/no-alloc.elf) || { log "no-alloc firmware failed: $out_none"; exit 1; }
field() { sed -n "s/^$1 //p" <<<"$2"; }

echo "host: $host"
echo "alloc: checksum $(field checksum "$out_alloc")"
echo "no-alloc: checksum $(field checksum "$out_none")"

$report || exit 0

# --- report ------------------------------------------------------------------
python3 - "$size" "$nm" "$out_alloc" "$out_none" <<'PY'
import subprocess, sys, re
size, nm, out_alloc, out_none = sys.argv[1:]
def sections(elf):
    s = {}
    for line in subprocess.check_output([size, "-A", elf], text=True).splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].startswith(".") and f[1].isdigit():
            s[f[0]] = int(f[1])
    return s
def fields(out):
    return {l.split()[0]: l.split()[1] for l in out.splitlines() if len(l.split()) == 2}
kib = lambda b: f"{b / 1024:.1f} KiB"
frame = 320 * 240 * 2
print()
print("| variant | flash .text | flash .rodata (of which the frame) | RAM .data + .bss | of which arena/heap static | plans' memory in use | stack high-water |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, elf, out in [("alloc (embedded-alloc)", "target/alloc.elf", out_alloc),
                        ("no-alloc (arena plans)", "target/no-alloc.elf", out_none)]:
    s, f = sections(elf), fields(out)
    static = int(f["reserved"])
    text = s.get(".text", 0) + s.get(".vector_table", 0)
    ram = s.get(".data", 0) + s.get(".bss", 0) + s.get(".uninit", 0)
    used = int(f["memory"])
    what = "arena used" if name.startswith("no-alloc") else "heap peak"
    need = f" (bytes_needed {int(f['needed'])})" if int(f.get("needed", 0)) else ""
    print(f"| {name} | {kib(text)} | {kib(s.get('.rodata', 0))} ({kib(frame)}) | {kib(ram)} | {kib(static)} | {kib(used)} {what}{need} | {kib(int(f['stack']))} |")
print()
print("Code size by part (no-alloc / alloc firmware, llvm-nm symbol sizes in .text):")
def parts(elf):
    out = subprocess.check_output([nm, "-S", "--size-sort", "-C", elf], text=True)
    by = {}
    for line in out.splitlines():
        f = line.split(None, 3)
        if len(f) < 4 or f[2] not in "tT":
            continue
        n, name = int(f[1], 16), f[3]
        m = re.search(r"tensorprep::(\w+)", name)
        if m:
            key = "tensorprep::" + m.group(1)
        elif "libm" in name:
            key = "libm"
        elif re.search(r"\balloc::|linked_list_allocator|embedded_alloc|__rust_alloc|__rg_", name):
            key = "allocator and alloc"
        elif re.search(r"\bcore::|compiler_builtins|__aeabi|memcpy|memset|memmove", name):
            key = "core and compiler builtins"
        else:
            key = "firmware, cortex-m, semihosting"
        by[key] = by.get(key, 0) + n
    return by
a, b = parts("target/no-alloc.elf"), parts("target/alloc.elf")
print("| part | no-alloc | alloc |")
print("|---|---:|---:|")
for k in sorted(set(a) | set(b), key=lambda k: -max(a.get(k, 0), b.get(k, 0))):
    print(f"| {k} | {kib(a.get(k, 0))} | {kib(b.get(k, 0))} |")
PY
