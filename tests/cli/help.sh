#!/usr/bin/env bash
# CLI: --help, --version, usage errors of the top-level command.
. "$(dirname "$0")/lib/common.sh"

expect_rc 0 --help
out_has "Usage: nnmem <command>"
for cmd in plan inspect verify replay record; do out_has "  $cmd "; done
out_has "Exit codes"
err_empty

expect_rc 0 -h
out_has "Usage: nnmem <command>"

expect_rc 0 --version
out_matches '^nnmem [0-9]+\.[0-9]+\.[0-9]+$'

expect_rc 0 plan --help
out_has "Usage: nnmem plan"
for opt in --model --batch --strategy --align --capacity --time-limit \
  --no-reuse --out --profile --json --quiet; do
  out_has "$opt"
done
out_has "KiB"
out_has "KB"

expect_rc 0 record --help
out_has "Usage: nnmem record [options] -- PROG"
for opt in --out --malloc-lib --quiet nnmem_record_step; do out_has "$opt"; done

expect_rc 1 recrod
err_has "did you mean 'record'"

expect_rc 0 verify --help
out_has "Usage: nnmem verify"
out_has "--capacity"

# No command: usage on stderr, exit 1.
expect_rc 1
err_has "Usage: nnmem"
err_has "(commands: plan, inspect, verify, replay, run, record, serve, diff)"
out_empty

expect_rc 1 frobnicate
err_has "unknown command 'frobnicate'"
err_has "--help"

expect_rc 1 --frobnicate
err_has "unknown option '--frobnicate'"

expect_rc 1 plan --foo
err_has "nnmem plan: unknown option '--foo'"
err_has "nnmem plan --help"
out_empty

expect_rc 1 verify --foo
err_has "nnmem verify: unknown option '--foo'"

expect_rc 1 verify
err_has "missing PROBLEM"

finish
