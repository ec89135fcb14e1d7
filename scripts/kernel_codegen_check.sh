#!/usr/bin/env bash
# Shows whether a change to kernels/ leaves the generated code as it was. Every case of
# scripts/kernel_codegen_cases.txt (template | arch | problem flags | config) is compiled twice
# by the same autotune-loop: from the kernels/ of a base revision and from the working tree's.
# NVIDIA cases are compared by their PTX (`autotune-loop compile --ptx`) without the line
# information (.loc and .file lines, debug sections) and comment lines, which move with every
# source line (the rule of the code hash, runtime/code_identity.h); AMD
# cases by their code objects (`--binary`), disassembled with llvm-objdump where they differ.
#
#   scripts/kernel_codegen_check.sh [--base REV] [--only TEMPLATE] [-j N] [--out DIR]
#
# --base: the revision whose kernels/ is the reference (default HEAD: the uncommitted change).
# --only: the cases of one template. -j: compiles at once (default 1). --out: where the
# outputs, the diffs and the base snapshot go (default ${TMPDIR:-/tmp}/tilesmith-codegen); the
# base snapshot is kept per base kernels/ tree and compiler, one file per case text, so a second
# run compiles only the working tree (and cases added since). Binaries: $TILESMITH_BIN
# (default build/cli).
#
# The compiler's log is kept too: a case whose compile warns more than the base's is reported
# (`WARNS`; compile logs reach history.csv and the LLM) and fails the check.
#
# Each case is reported as `same` (identical), `same up to names` (only mangled names differ,
# e.g. a helper type that moved or was renamed: each _Z... name is replaced by the order of its
# first use, and the outputs are then identical), or `DIFFERENT` (a diff is left under the
# output folder; for an AMD case, "reordered" says the two disassemblies hold the same
# instructions, operands included, in another order). Exit 0 when no case is DIFFERENT and
# every case compiled on both sides. The base snapshot assumes the same autotune-loop: after
# changing how templates are rendered, delete the output folder.
set -uo pipefail
cd "$(dirname "$0")/.."
base=HEAD only= jobs=1 out=${TMPDIR:-/tmp}/tilesmith-codegen
while (($#)); do
  case $1 in
    --base) base=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--base REV] [--only TEMPLATE] [-j N] [--out DIR]" >&2; exit 2 ;;
  esac
done
bin=${TILESMITH_BIN:-build/cli}/autotune-loop
cases=scripts/kernel_codegen_cases.txt
[[ -x $bin ]] || { echo "no $bin (build it, or set TILESMITH_BIN)" >&2; exit 2; }
tree=$(git rev-parse "$base:kernels") || exit 2
compiler=$("$bin" --list-devices 2>/dev/null | grep -Eo '(nvrtc|hiprtc)[^,;]*' | sort -u | tr -d ' ()' | tr '\n' '+')
key=$(echo "$tree $compiler normalised-v3" | sha256sum | cut -c1-16)
base_out=$out/base-$key new_out=$out/new
mkdir -p "$out"
rm -rf "$new_out" "$out/diff"
mkdir -p "$new_out" "$out/diff"

# Normalises a PTX file as runtime/code_identity.h's normalized_ptx does for the code hash that
# keeps tuned entries current: no line information, no debug sections, no comment lines.
strip_ptx() {
  awk '/^[ \t]*\.section[ \t]+\.debug/ {skip = 1; next}
       skip { if ($0 ~ /^[ \t]*}[ \t]*$/) skip = 0; next }
       /^[ \t]*\.(loc|file)[ \t]/ {next}
       /^[ \t]*\/\// {next}
       {print}' "$1"
}
# The same text with every mangled name replaced by its order of first appearance.
without_names() {
  awk '{ line = ""; rest = $0
         while (match(rest, /_Z[A-Za-z0-9_]+/)) {
           name = substr(rest, RSTART, RLENGTH)
           if (!(name in id)) id[name] = "_Z#" (++n)
           line = line substr(rest, 1, RSTART - 1) id[name]; rest = substr(rest, RSTART + RLENGTH)
         }
         print line rest }' "$1"
}
disassemble() {
  local objdump
  objdump=$(command -v llvm-objdump || ls /usr/lib/llvm-*/bin/llvm-objdump 2>/dev/null | tail -1)
  if [[ -n $objdump ]]; then "$objdump" -d --mcpu="$2" "$1" 2>&1 | tail -n +3; else od -An -tx1 "$1"; fi
}
# The disassembly's instructions with their operands, sorted (the order left out).
instructions() { disassemble "$1" "$2" | grep -P '^\t' | sed 's#//.*##; s/[[:space:]]\+/ /g' | sort; }

# compile_one KERNELS_DIR OUT_DIR ID LINE: the case's normalised output as OUT_DIR/ID.out
# (or, with ID.failed beside it, the compiler's last words).
compile_one() {
  local kdir=$1 dir=$2 i=$3 line=$4 tmpl arch flags cfg
  IFS='|' read -r tmpl arch flags cfg <<<"$line"
  tmpl=$(echo $tmpl) arch=$(echo $arch)
  cfg=${cfg#"${cfg%%[![:space:]]*}"} cfg=${cfg%"${cfg##*[![:space:]]}"}  # trimmed: "defaults" is a word
  local args=(compile --kernels-dir "$kdir" --template "$tmpl" --arch "$arch" --show-log $flags)
  [[ $cfg == defaults ]] || args+=(--config "$cfg")
  if [[ $arch == sm_* ]]; then
    if "$bin" "${args[@]}" --ptx "$dir/$i.raw" >"$dir/$i.log" 2>&1; then
      strip_ptx "$dir/$i.raw" >"$dir/$i.out"
    else
      echo "compile failed: $(tail -3 "$dir/$i.log")" >"$dir/$i.out"
      touch "$dir/$i.failed"
    fi
  else
    if "$bin" "${args[@]}" --binary "$dir/$i.raw" >"$dir/$i.log" 2>&1; then
      cp "$dir/$i.raw" "$dir/$i.out"
    else
      echo "compile failed: $(tail -3 "$dir/$i.log")" >"$dir/$i.out"
      touch "$dir/$i.failed"
    fi
  fi
  rm -f "$dir/$i.raw"
}
export -f compile_one strip_ptx
export bin

# The selected cases as ID:TEXT, ID a hash of the case's text (outputs are kept by it).
mapfile -t lines < <(grep -v -E '^[[:space:]]*(#|$)' "$cases")
selected=()
for text in "${lines[@]}"; do
  t=$(echo ${text%%|*})
  [[ -z $only || $t == "$only" ]] && selected+=("$(echo "$text" | sha256sum | cut -c1-16):$text")
done
((${#selected[@]})) || { echo "no cases${only:+ for $only}" >&2; exit 2; }

snapshot() {  # KERNELS_DIR OUT_DIR: compiles the selected cases not yet there
  local kdir=$1 dir=$2 todo=()
  mkdir -p "$dir"
  for s in "${selected[@]}"; do  # failed compiles are tried again
    [[ -s $dir/${s%%:*}.out && ! -e $dir/${s%%:*}.failed ]] || { rm -f "$dir/${s%%:*}.failed"; todo+=("$s"); }
  done
  ((${#todo[@]})) || return 0
  printf '%s\0' "${todo[@]}" |
    xargs -0 -P "$jobs" -I{} bash -c 'c="$1"; compile_one "$2" "$3" "${c%%:*}" "${c#*:}"' _ {} "$kdir" "$dir"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git archive "$base" kernels | tar -x -C "$work"
mkdir "$work/new" && cp -r kernels "$work/new/"  # the working tree as it is now: edits during the run do not count
echo "base: $base (kernels/ $tree), ${#selected[@]} cases, outputs in $out"
snapshot "$work/kernels" "$base_out"
snapshot "$work/new/kernels" "$new_out"

same=0 renamed=0 different=0 failed=0 warns=0
for s in "${selected[@]}"; do
  i=${s%%:*} text=${s#*:}
  a=$base_out/$i.out b=$new_out/$i.out
  if (($(grep -ci warning "$new_out/$i.log") > $(grep -ci warning "$base_out/$i.log"))); then
    echo "WARNS     $text"; grep -i -m3 warning "$new_out/$i.log" | sed 's/^/    /'; ((warns++))
  fi
  arch=$(echo "$text" | cut -d'|' -f2 | tr -d ' ')
  if [[ -e $base_out/$i.failed || -e $new_out/$i.failed ]]; then
    echo "FAILED    $text"
    for f in "$base_out/$i.failed" "$new_out/$i.failed"; do [[ -e $f ]] && sed 's/^/    /' "${f%.failed}.out"; done
    ((failed++)); continue
  fi
  if cmp -s "$a" "$b"; then
    ((same++)); continue
  fi
  note=
  if [[ $arch == sm_* ]]; then
    if cmp -s <(without_names "$a") <(without_names "$b"); then
      echo "same up to names  $text"; diff <(grep -o '_Z[A-Za-z0-9_]*' "$a" | awk '!s[$0]++') \
        <(grep -o '_Z[A-Za-z0-9_]*' "$b" | awk '!s[$0]++') | grep '^[<>]' | sed 's/^/    /' | head -6
      ((renamed++)); continue
    fi
    diff "$a" "$b" >"$out/diff/$i.diff"
  else
    diff <(disassemble "$a" "$arch") <(disassemble "$b" "$arch") >"$out/diff/$i.diff"
    cmp -s <(instructions "$a" "$arch") <(instructions "$b" "$arch") && note=", reordered" || note=
  fi
  echo "DIFFERENT $text  (diff: $out/diff/$i.diff, $(grep -c '^[<>]' "$out/diff/$i.diff") lines${note:-})"
  ((different++))
done
echo "$((same + renamed + different + failed)) cases: $same same, $renamed same up to names, $different different, $failed failed to compile; $warns with new compiler warnings"
((different == 0 && failed == 0 && warns == 0))
