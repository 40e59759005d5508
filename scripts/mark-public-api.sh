#!/usr/bin/env bash
# Prefixes NNMEM_API to every function declaration in the public headers that
# lacks it, so libnnmem.so (built with hidden visibility) exports it.
# Usage: scripts/mark-public-api.sh [HEADER...]   (default include/nnmem/*.h)
#
# A declaration is a statement that starts in column 0 (not typedef, static,
# extern, a directive, a comment or a closing brace) and names nnmem_<name>(
# after its return type; the type may end on the line before the name.
# Idempotent. Run clang-format on the headers afterwards; the test
# packaging_symbols (tests/packaging/symbols.sh) checks the result against
# `nm -D` of libnnmem.so.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- include/nnmem/*.h
perl -0777 -i -pe '
  s{^(?!NNMEM_API\b|typedef\b|static\b|extern\b|\#|\}|/|\s)
     ((?:const\s+|unsigned\s+|struct\s+)*[A-Za-z_]\w*[\s*]+?(?:const[\s*]+)?)
     (nnmem_[a-z0-9_]+\s*\()}{NNMEM_API $1$2}gmx;
' "$@"
