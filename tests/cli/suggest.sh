#!/usr/bin/env bash
# CLI: a mistyped command, option, strategy, built-in model or pool gets one
# "did you mean" hint naming the nearest valid word (tools/nnmem/suggest.c),
# exit 1 and nothing on stdout; a word near nothing gets no hint.
. "$(dirname "$0")/lib/common.sh"

# hint WANT ARGS...: exit 1, usage message, the hint WANT on stderr.
hint() {
  local want=$1
  shift
  expect_error "$@"
  err_has "did you mean '$want'?"
}

# no_hint ARGS...: exit 1 and no hint.
no_hint() {
  expect_error "$@"
  grep -qF "did you mean" "$T/stderr" && fail "unexpected hint"
  return 0
}

# Commands (one edit, a transposition, a prefix).
hint plan plam
hint inspect inspct
hint verify verfiy
hint replay relpay
hint plan pl
err_has "unknown command 'pl'"
no_hint xyzzy
no_hint x

# Options: the typo of the issue (three edits of eight letters), "=value",
# a single dash, a unique prefix, and each command's own table.
hint --capacity plan --captiy 5
err_has "unknown option '--captiy'"
hint --capacity plan --captiy=1MiB
hint --capacity plan -capacity 5
hint --capacity plan --cap 5
hint --quiet plan --qiuet
hint --strategy plan --stratgey auto
hint --pool replay x.csv --pol tlsf
hint --help verify --hlep
no_hint plan --xyzzy
no_hint plan -x
no_hint plan --o x

# Strategies: the list of valid names stays, the hint follows it.
hint greedy-size plan --strategy greedysize
err_has "(expected auto, naive, greedy-size, greedy-breadth, heap-best-fit, greedy-class)"
hint heap-best-fit plan --strategy heap-bestfit
hint greedy-class plan --strategy=Greedy-Class
no_hint plan --strategy best

# Built-in models: checked when the option is read, before any work.
hint resnet50 plan --model resnet5
err_has "unknown built-in model 'resnet5' (known: resnet50, mobilenetv2, bert-base)"
hint mobilenetv2 plan --model mobilenet_v2
hint bert-base plan --model bert
hint resnet50 plan --model ResNet50
no_hint plan --model foo

# Pool kinds of replay.
printf 'id,lower,upper,size\na,0,2,64\n' >"$T/trace.csv"
hint tlsf replay "$T/trace.csv" --pool tlfs
err_has "bad --pool 'tlfs': expected tiered, tlsf, buddy, best-fit, first-fit, slab, shape or all"
hint best-fit replay "$T/trace.csv" --pool best
no_hint replay "$T/trace.csv" --pool zz

# A correct word still works after all this.
expect_rc 0 plan --model mobilenetv2 --strategy greedy-size --quiet
expect_rc 0 replay "$T/trace.csv" --pool best-fit

finish
