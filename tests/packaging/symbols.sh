#!/usr/bin/env bash
# Packaging: libnnmem.so exports exactly the public API.
#   - every function declared in the public headers (include/nnmem/*.h and
#     the generated nnmem/version.h) is a defined dynamic symbol;
#   - no other symbol is exported: no internal nnmem__*, no generated onnx__*,
#     no protobuf_c_* copy, nothing undeclared.
# Declarations are found with perl: comments removed, then every identifier
# nnmem_<name> followed by "(" that is not a type (*_t) nor a static inline
# function defined in the header (nnmem/planned_inline.h).
# Environment: NNMEM_SHARED_LIB (the .so), NNMEM_HEADER_DIRS (folders holding
# nnmem/*.h, separated by ':'), NM (nm). Exits 77 without nm or perl.
set -u
for v in NNMEM_SHARED_LIB NNMEM_HEADER_DIRS; do
  [ -n "${!v:-}" ] || { echo "$v is not set" >&2; exit 1; }
done
NM=${NM:-nm}
command -v "$NM" >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }
command -v perl >/dev/null 2>&1 || { echo "SKIP: no perl"; exit 77; }
[ -f "$NNMEM_SHARED_LIB" ] || { echo "no $NNMEM_SHARED_LIB" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/nnmem-sym.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

headers=()
IFS=: read -r -a dirs <<<"$NNMEM_HEADER_DIRS"
for d in "${dirs[@]}"; do
  for h in "$d"/nnmem/*.h; do [ -f "$h" ] && headers+=("$h"); done
done
[ ${#headers[@]} -gt 0 ] || { echo "no headers in $NNMEM_HEADER_DIRS" >&2; exit 1; }

perl -0777 -ne '
  s{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g;
  s{^\s*#[^\n]*(?:\\\n[^\n]*)*}{}gm;   # directives and macro bodies
  my %inl;                             # static inline: defined in the header
  $inl{$1} = 1 while /\bstatic\s+inline\b[^;{(]*?\b(nnmem_[a-z0-9_]+)\s*\(/g;
  while (/\b(nnmem_[a-z0-9_]+)\s*\(/g) {
    print "$1\n" unless $1 =~ /_t$/ || $inl{$1}
  }
' "${headers[@]}" | sort -u >"$T/declared"

"$NM" -D --defined-only "$NNMEM_SHARED_LIB" >"$T/nm" || exit 1
awk 'NF >= 3 { print $3 }' "$T/nm" | sed 's/@.*//' | sort -u >"$T/exported"

n_decl=$(wc -l <"$T/declared")
n_exp=$(wc -l <"$T/exported")
n_int=$(grep -c -E '^(nnmem__|onnx__|protobuf_)' "$T/exported")
echo "declared public functions: $n_decl; exported symbols: $n_exp; internal exported: $n_int"

FAILURES=0
missing=$(comm -23 "$T/declared" "$T/exported")
extra=$(comm -13 "$T/declared" "$T/exported")
if [ -n "$missing" ]; then
  echo "FAIL: declared in a public header but not exported (NNMEM_API missing?):" >&2
  echo "$missing" | sed 's/^/  /' >&2
  FAILURES=1
fi
if [ -n "$extra" ]; then
  echo "FAIL: exported but not declared in a public header:" >&2
  echo "$extra" | head -n 40 | sed 's/^/  /' >&2
  FAILURES=1
fi
[ "$n_decl" -ge 100 ] || {
  echo "FAIL: only $n_decl declarations found: the header scan is broken" >&2
  FAILURES=1
}
[ "$FAILURES" -eq 0 ] && echo ok
exit "$FAILURES"
