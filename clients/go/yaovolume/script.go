package yaovolume

// volumeScript does every operation of the volume in the pod that holds the workspace
// (the sandbox's, or a helper's): sh -c volumeScript yaovol OP ROOT ARGS... It needs POSIX
// sh and GNU coreutils (readlink -m, stat, mktemp, mv -T), findutils (find -printf) and
// tar (--verbatim-files-from, POSIX format): the project's sandbox image (Debian) has
// them. Paths are arguments, never spliced into the script, and are already cleaned and
// joined to ROOT by the client; the script checks that each resolves, following symbolic
// links, to ROOT or below it (canonical forms compared), and refuses with exit code 10
// otherwise. Errors it names itself exit 10-17 (errors.go); others exit 1 with the tool's
// complaint on stderr.
//
// Listings are NUL-terminated records "TYPE SIZE MTIME MODE NAME" from find -printf
// (%y %s %T@ %m): type letter, bytes, seconds with nanoseconds, permission bits in octal.
const volumeScript = `set -u
op=$1; R=$2; shift 2
die() { c=$1; shift; printf '%s\n' "$*" >&2; exit "$c"; }
command -v readlink >/dev/null 2>&1 && RR=$(readlink -m -- "$R" 2>/dev/null) ||
	die 17 'readlink -m (GNU coreutils) is not available in the image'
[ -d "$RR" ] || die 11 "the workspace $R is not mounted"
under() { case $1 in "$RR"|"$RR"/*) return 0;; esac; return 1; }
# fol P: P, all symbolic links followed, stays in the workspace.
fol() { under "$(readlink -m -- "$1")" || die 10 "$1: outside the workspace"; }
# nof P: P's directory (links followed) is in the workspace and P is not its root.
nof() {
	under "$(readlink -m -- "$(dirname -- "$1")")" || die 10 "$1: outside the workspace"
	[ "$(readlink -m -- "$1")" != "$RR" ] || [ -L "$1" ] || die 10 "$1: refusing to remove or move the workspace root"
}
ex() { [ -e "$1" ] || [ -L "$1" ]; }
need() { ex "$1" || die 11 "$1: No such file or directory"; }
F='%y %s %T@ %m %P\0'
case $op in
stat)
	fol "$1"; need "$1"
	exec find -H "$1" -maxdepth 0 -printf '%y %s %T@ %m \0' ;;
ls)
	fol "$1"; need "$1"
	[ -d "$1" ] || die 14 "$1: Not a directory"
	[ -r "$1" ] && [ -x "$1" ] || die 15 "$1: Permission denied"
	exec find -H "$1" -mindepth 1 -maxdepth 1 -printf '%y %s %T@ %m %f\0' ;;
read)
	fol "$1"; need "$1"
	[ -d "$1" ] && die 13 "$1: Is a directory"
	[ -r "$1" ] || die 15 "$1: Permission denied"
	find -H "$1" -maxdepth 0 -printf '%m %s\n' && exec cat -- "$1" ;;
write)
	fol "$1"; T=$(readlink -m -- "$1"); d=$(dirname -- "$T")
	[ -d "$T" ] && die 13 "$1: Is a directory"
	mkdir -p -- "$d" || exit 1
	if [ -e "$T" ]; then m=$(stat -c %a -- "$T") || exit 1; else m=$2; fi
	tmp=$(mktemp -p "$d" .yaovol.XXXXXXXX) || exit 1
	trap 'rm -f -- "$tmp"; exit 143' TERM INT HUP
	cat > "$tmp" && chmod -- "$m" "$tmp" && mv -f -T -- "$tmp" "$T" || { rm -f -- "$tmp"; exit 1; } ;;
mkdir)
	fol "$1"
	[ -e "$1" ] && [ ! -d "$1" ] && die 14 "$1: Not a directory"
	exec mkdir -p -- "$1" ;;
rm)
	nof "$1"
	if ! ex "$1"; then [ "$2" = 1 ] && exit 0; die 11 "$1: No such file or directory"; fi
	if [ "$2" = 1 ]; then exec rm -rf -- "$1"; fi
	if [ -d "$1" ] && [ ! -L "$1" ]; then
		rmdir -- "$1" 2>/dev/null || { [ -n "$(ls -A -- "$1")" ] && die 16 "$1: Directory not empty"; exec rmdir -- "$1"; }
	else exec rm -f -- "$1"; fi ;;
mv)
	nof "$1"; nof "$2"; need "$1"
	exec mv -f -T -- "$1" "$2" ;;
list)
	D=$1; shift
	fol "$D"; need "$D"; [ -d "$D" ] || die 14 "$D: Not a directory"
	n=$#
	[ "$n" = 0 ] && exec find -H "$D" -mindepth 1 -printf "$F"
	for p; do set -- "$@" -o -name "$p"; done
	shift "$n"; shift
	exec find -H "$D" -mindepth 1 \( "$@" \) -prune -o -printf "$F" ;;
del)
	D=$1; shift
	fol "$D"; need "$D"; cd -- "$D" || exit 1
	exec rm -rf -- "$@" ;;
extract)
	D=$1; shift
	fol "$D"; mkdir -p -- "$D" || exit 1
	if [ $# -gt 0 ]; then (cd -- "$D" && rm -rf -- "$@") || exit 1; fi
	exec tar -x -p -f - -C "$D" --no-same-owner ;;
pack)
	fol "$1"; need "$1"
	exec tar -c -f - -C "$1" --format=posix --pax-option=delete=atime,delete=ctime --null --no-recursion --verbatim-files-from -T - ;;
copyfile)
	fol "$1"; fol "$2"; need "$1"
	[ -d "$1" ] && die 13 "$1: Is a directory"
	[ -d "$2" ] && die 13 "$2: Is a directory"
	if [ "$3" != 1 ] && [ -f "$2" ] &&
		[ "$(find -H "$1" -maxdepth 0 -printf '%s %T@')" = "$(find -H "$2" -maxdepth 0 -printf '%s %T@')" ]; then
		echo 0; exit 0
	fi
	mkdir -p -- "$(dirname -- "$2")" && cp -p -- "$1" "$2" && find -H "$1" -maxdepth 0 -printf '%s\n' ;;
copytree)
	fol "$1"; fol "$2"; need "$1"; mkdir -p -- "$2" || exit 1
	st=$( { { tar -c -f - -C "$1" --format=posix --pax-option=delete=atime,delete=ctime --null --no-recursion --verbatim-files-from -T -; echo $? >&4; } |
		tar -x -p -f - -C "$2" --no-same-owner; } 4>&1 ) || exit 1
	[ "$st" = 0 ] || exit 1 ;;
*) die 1 "unknown operation $op" ;;
esac`
