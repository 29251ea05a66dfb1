# shellcheck shell=bash
# Common helpers for the project's scripts: paths, stage timing, errors.
# Sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
# The QEMU of `make qemu`, whose CPU has PCID, INVPCID and INVLPGB (qemu/);
# HW_QEMU in the environment names another build (e.g. an older series).
HW_QEMU=${HW_QEMU:-$BUILD/qemu/qemu-system-x86_64}
# Its CPU for every hw profile: invlpgb-strict=on holds each INVLPGB, on
# the issuing vCPU and on the others, until the issuer's TLBSYNC, the
# latest that the architecture allows, so that a missing or misplaced
# TLBSYNC leaves stale entries for the tests to find (docs/qemu.md).
HW_CPU=max,invlpgb-strict=on
# shellcheck source=scripts/versions
. "$TOP/scripts/versions"

PROG=${PROG:-$(basename "$0")}

die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 1
}

warn() {
	printf '%s: warning: %s\n' "$PROG" "$*" >&2
}

# stage NAME: announce a stage; stage_done: print how long it took.
_stage_name=
_stage_start=0
stage() {
	_stage_name=$1
	_stage_start=$(date +%s.%N)
	printf '==> %s: %s\n' "$PROG" "$_stage_name"
}

stage_done() {
	local now
	now=$(date +%s.%N)
	printf '==> %s: %s: done in %.1fs\n' "$PROG" "$_stage_name" \
		"$(echo "$now - $_stage_start" | bc)"
}

# run_progress WHAT KIND LOG CMD...: run CMD (a function will do) with its
# output in LOG, and progress on stderr from scripts/progress (KIND: kbuild,
# ninja or lines; the expected count is the last successful run's). On
# failure: the log's last lines and its path, and CMD's status.
run_progress() {
	local what=$1 kind=$2 log=$3 rc
	shift 3
	mkdir -p "$(dirname "$log")"
	printf '    %s: full output in %s\n' "$what" "${log#"$TOP"/}"
	{ "$@" </dev/null 2>&1; echo $? >"$log.rc"; } |
		"$TOP/scripts/progress" --what "$what" --kind "$kind" --log "$log"
	rc=$(cat "$log.rc" 2>/dev/null || echo 1)
	rm -f "$log.rc"
	if [ "$rc" -ne 0 ]; then
		printf '%s: %s failed (status %s); the last lines of %s:\n' "$PROG" \
			"$what" "$rc" "${log#"$TOP"/}" >&2
		tail -n 40 "$log" | sed 's/^/  | /' >&2
		rm -f "$log.count.new"
		return "$rc"
	fi
	mv -f "$log.count.new" "$log.count" 2>/dev/null || true
}

# apt_private DIR LINE...: an apt that reads only the sources LINEs, with
# its lists and cache under DIR, so that the host's apt configuration stays
# as it is. Sets APT_OPTS for apt-get and apt-cache; runs 'apt-get update'
# when the lines changed or the lists are more than a day old. Returns 1
# (the log's last lines on stderr) when the update fails.
apt_private() {
	local dir=$1 stamp
	shift
	APT_OPTS=(
		-o "Dir::Etc::SourceList=$dir/sources.list"
		-o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists"
		-o "Dir::Cache=$dir/cache"
		-o Acquire::Retries=2
		-o Acquire::http::Timeout=30
	)
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	printf '%s\n' "$@" >"$dir/sources.list.want"
	stamp=$dir/lists/.updated
	if cmp -s "$dir/sources.list.want" "$dir/sources.list" && [ -f "$stamp" ] &&
		[ -n "$(find "$stamp" -mmin -1440)" ]; then
		rm -f "$dir/sources.list.want"
		return 0
	fi
	mv "$dir/sources.list.want" "$dir/sources.list"
	rm -f "$stamp"
	stage "apt-get update (private list ${dir#"$TOP"/}/sources.list)"
	# apt-get update exits 0 when an index could not be fetched: its
	# warnings count as failures here.
	if ! apt-get "${APT_OPTS[@]}" -q update >"$dir/update.log" 2>&1 ||
		grep -qE '^(W: Failed to fetch|E: |Err:)' "$dir/update.log"; then
		tail -n 8 "$dir/update.log" | sed 's/^/    | /' >&2
		return 1
	fi
	: >"$stamp"
	stage_done
}

# Tag names cannot hold '~' or ':'.
debian_tag() {
	printf 'debian/%s' "$1" | tr '~:' '_.'
}

# The installed linux-source-6.12 version, or nothing.
installed_source_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "$LINUX_SOURCE_PKG" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}

# use_ccache: set CC_CACHED to "ccache gcc" when ccache is there (else gcc).
# ccache is told to ignore absolute paths below the checkout, so that a fresh
# clone in another folder still hits the cache.
use_ccache() {
	CC_CACHED=gcc
	if command -v ccache >/dev/null; then
		CC_CACHED="ccache gcc"
		export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=time_macros
		export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
	fi
}

# Run make for the kernel with ccache when it is there.
kmake() {
	local cc
	use_ccache
	cc=$CC_CACHED
	KBUILD_BUILD_TIMESTAMP=${KBUILD_BUILD_TIMESTAMP:-'2026-01-01'} \
	KBUILD_BUILD_USER=tlb KBUILD_BUILD_HOST=guest \
		make "$([ -n "${KMAKE_VERBOSE:-}" ] && echo --no-print-directory || echo -s)" \
			CC="$cc" HOSTCC="$cc" "$@"
}

# tree_fragment SRC IN OUT: the fragment IN less the options that the tree
# SRC does not define (the series adds some), written to OUT; the options
# left out are listed on stderr when VERBOSE is set.
tree_fragment() {
	local src=$1 in=$2 out=$3 defined
	defined=$(mktemp)
	git -C "$src" grep -hE '^[[:space:]]*(menu)?config[[:space:]]+[A-Za-z0-9_]+' -- '*Kconfig*' |
		awk '{ print "CONFIG_" $2 }' | sort -u >"$defined"
	awk -v verbose="${VERBOSE:-}" '
		NR == FNR { def[$1] = 1; next }
		/^CONFIG_[A-Za-z0-9_]+=/ { split($0, a, "="); sym = a[1] }
		/^# CONFIG_[A-Za-z0-9_]+ is not set$/ { sym = $2 }
		sym != "" && !(sym in def) {
			if (verbose) print "    leaving out " sym " (not in this tree)" > "/dev/stderr"
			sym = ""; next
		}
		{ sym = ""; print }' "$defined" "$in" >"$out"
	rm -f "$defined"
}

# make_config SRC OBJ FRAGMENT...: tinyconfig with the fragments merged on
# top, written to OBJ/.config only when it differs (so that an unchanged
# config rebuilds nothing). Every option of the fragments must survive.
# The inputs (the fragments, every Kconfig file and tiny.config of SRC,
# ARCH, the compiler) are hashed into OBJ/.config.inputs: when they are the same as the
# last time, OBJ/.config is kept as it is, without running kconfig.
make_config() {
	local src=$1 obj=$2 cfg missing inputs
	shift 2
	mkdir -p "$obj"
	inputs=$({ echo "ARCH=${ARCH:-}"; gcc --version | head -n 1; cat "$@"
		(cd "$src" && find . -name .git -prune -o \( -name 'Kconfig*' -o -name tiny.config \) \
			-print | LC_ALL=C sort | xargs sha256sum); } | sha256sum | cut -d' ' -f1)
	if [ -f "$obj/.config" ] && [ "$(cat "$obj/.config.inputs" 2>/dev/null)" = "$inputs" ]; then
		echo "    config inputs unchanged"
		return 0
	fi
	rm -f "$obj/.config.inputs"
	cfg=$(mktemp -d)
	kmake -C "$src" O="$cfg" tinyconfig >/dev/null
	(cd "$src" && scripts/kconfig/merge_config.sh -m -O "$cfg" "$cfg/.config" "$@") \
		>"$cfg/merge.log" 2>&1 || { cat "$cfg/merge.log" >&2; rm -rf "$cfg"; die "merge_config failed"; }
	kmake -C "$src" O="$cfg" olddefconfig >/dev/null
	# The last fragment that names an option decides its value.
	missing=$(cat "$@" | sed -n 's/^\(CONFIG_[A-Za-z0-9_]*\)=\(.*\)$/\1=\2/p; s/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1=n/p' |
		awk -F= '{ v[$1] = $0; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
			END { for (i = 0; i < n; i++) print v[order[i]] }' |
		while IFS= read -r line; do
			case $line in
			*=n) ! grep -q "^${line%=n}=" "$cfg/.config" ||
				echo "  ${line%=n} is not set (got: $(grep "^${line%=n}=" "$cfg/.config"))" ;;
			*) grep -qxF "$line" "$cfg/.config" ||
				echo "  $line (got: $(grep -E "^(# )?${line%%=*}[= ]" "$cfg/.config" || echo unset))" ;;
			esac
		done)
	if [ -n "$missing" ]; then
		rm -rf "$cfg"
		die "the merged config lost options:
$missing"
	fi
	if ! cmp -s "$cfg/.config" "$obj/.config"; then
		cp "$cfg/.config" "$obj/.config"
		echo "    config updated"
	fi
	echo "$inputs" >"$obj/.config.inputs"
	rm -rf "$cfg"
}

# profile_append NAME: the extra kernel command line of the boot profile NAME
# (tests/profiles); fails when there is no such profile.
profile_append() {
	awk -v p="$1" '$1 == p { found = 1; $1 = ""; sub(/^ /, ""); print } END { exit !found }' \
		"$TOP/tests/profiles"
}

# The kernels of the upstream flavors (scripts/build-kernel upstream,
# scripts/upstream-source distro) and the distribution kernel's initramfs.
UPSTREAM_KERNEL=$BUILD/obj/upstream/arch/x86/boot/bzImage
DISTRO_KERNEL=$BUILD/distro/vmlinuz
DISTRO_INITRD=$BUILD/guest/initramfs-distro.cpio.gz

# profile_flavor NAME: the kernel a boot profile boots: upstream (sid's
# source, built here without the series), distro (Debian's built sid
# kernel) or patched (the series on 6.12; --kernel may name another build).
profile_flavor() {
	case $1 in
	upstream | upstream-*) echo upstream ;;
	distro | distro-*) echo distro ;;
	*) echo patched ;;
	esac
}

# profile_guest_args NAME: the guest-run options of boot profile NAME
# besides its command line, in the array GUEST_ARGS. Profiles named hw,
# hw-* or *-hw boot on the emulated INVLPGB CPU of make qemu, in its
# strict mode (HW_CPU).
profile_guest_args() {
	GUEST_ARGS=()
	case $(profile_flavor "$1") in
	upstream) GUEST_ARGS+=(--kernel "$UPSTREAM_KERNEL") ;;
	distro) GUEST_ARGS+=(--kernel "$DISTRO_KERNEL" --initrd "$DISTRO_INITRD") ;;
	esac
	case $1 in
	hw | hw-* | *-hw) GUEST_ARGS+=(--qemu "$HW_QEMU" --cpu "$HW_CPU") ;;
	esac
}

# test_profile FILE: the boot profile that a test file names first in its
# "# boot: NAME..." line.
test_profile() {
	sed -n 's/^# boot: *//p' "$1" | head -n 1 | awk '{ print $1 }'
}
